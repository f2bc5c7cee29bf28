"""Which scorer a run uses: `ScorerSpec` (its configuration fields) and `build_scorer`, the one place that picks
between a served chat model (`scorer.ChatScorer`) and the toy rule (`toy_scorer.ToyScorer`), so neither scorer module
imports the other.

    build_scorer(ScorerSpec(kind="toy"))
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from openrm.rubrics.scorer import ChatScorer, Scorer

SCORER_KINDS = ("server", "toy")


@dataclass(frozen=True)
class ScorerSpec:
    """What `build_scorer` builds: `server` (an OpenAI-compatible chat server) or `toy` (the toy task's rule, in
    process, for the toy world `world_seed`)."""

    kind: str = "server"
    server: str = ""  # http://host:8000/v1
    model: str = ""
    api_key: str = ""
    concurrency: int = 16
    timeout_s: float = 300.0
    retries: int = 5
    temperature: float = 0.0
    top_p: float | None = None
    max_tokens: int = 64
    cache: str = ""  # the request cache (JSONL); required for a server
    world_seed: int = 0

    def __post_init__(self) -> None:
        if self.kind not in SCORER_KINDS:
            raise ValueError(f"scorer must be one of {SCORER_KINDS}, got {self.kind!r}")
        if self.kind == "server" and not (self.server and self.model):
            raise ValueError("a server scorer needs its URL (scorer_server) and model name (scorer_model)")
        if self.concurrency < 1 or self.retries < 0 or self.timeout_s <= 0 or self.max_tokens < 1:
            raise ValueError(f"need concurrency >= 1, retries >= 0, timeout > 0, max_tokens >= 1; got {self}")


def build_scorer(spec: ScorerSpec, cache: str | Path | None = None) -> Scorer:
    """The scorer `spec` names; `cache` overrides `spec.cache` (e.g. one file per process)."""
    if spec.kind == "toy":
        from openrm.rubrics.toy import toy_entities
        from openrm.rubrics.toy_scorer import ToyScorer
        from openrm.toyworld import ToyWorld

        return ToyScorer(toy_entities(ToyWorld(spec.world_seed)))
    from plumbing.llm_client import ClientConfig

    path = cache or spec.cache
    if not path:
        raise ValueError("a server scorer needs a request cache file")
    client = ClientConfig(spec.server, spec.model, api_key=spec.api_key or None, concurrency=spec.concurrency,
                          timeout_s=spec.timeout_s, max_retries=spec.retries)
    return ChatScorer(client, path, temperature=spec.temperature, top_p=spec.top_p, max_tokens=spec.max_tokens)
