"""The bottom floor every other package may import (it imports none of them): the command-line rule for
KEY=VALUE and repeated flags, the HTTP retry policy, and the resumable OpenAI-compatible chat client
(`llm_client`: retries, request cache) that data synthesis and the rubric scorers share, and the assembly of
bench/RESULTS.md from its fragments (`results`). Standard library only,
httpx imported lazily."""
