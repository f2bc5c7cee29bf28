"""Which scorer a run uses: `ScorerSpec` (its configuration fields) and `build_scorer`, the one place that picks
between a served chat model (`scorer.ChatScorer`) and a kind another package installs (plumbing.plugins, group
`openrm.scorers`: the offline demo's rule-based `toy`).

    build_scorer(ScorerSpec(kind="server", server="http://127.0.0.1:8000/v1", model="m", cache="runs/scores.jsonl"))
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from openrm.rubrics.scorer import ChatScorer, Scorer
from plumbing import plugins

BUILTIN_KINDS = ("server",)


def scorer_kinds() -> list[str]:
    """The scorer kinds this install knows: a chat server, and those installed packages add."""
    return [*BUILTIN_KINDS, *plugins.names(plugins.SCORERS)]


@dataclass(frozen=True)
class ScorerSpec:
    """What `build_scorer` builds: `server` (an OpenAI-compatible chat server) or a plugin kind (built from this spec;
    `world_seed` is for one that builds a world, as the toy rule does)."""

    kind: str
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
        if self.kind not in BUILTIN_KINDS and self.kind not in plugins.names(plugins.SCORERS):
            raise ValueError(f"scorer must be one of {scorer_kinds()}, got {self.kind!r}")
        if self.kind == "server" and not (self.server and self.model):
            raise ValueError("a server scorer needs its URL (scorer_server) and model name (scorer_model)")
        if self.concurrency < 1 or self.retries < 0 or self.timeout_s <= 0 or self.max_tokens < 1:
            raise ValueError(f"need concurrency >= 1, retries >= 0, timeout > 0, max_tokens >= 1; got {self}")


def build_scorer(spec: ScorerSpec, cache: str | Path | None = None) -> Scorer:
    """The scorer `spec` names; `cache` overrides `spec.cache` (e.g. one file per process)."""
    if spec.kind not in BUILTIN_KINDS:
        return plugins.load(plugins.SCORERS, spec.kind)(spec)
    from plumbing.llm_client import ClientConfig

    path = cache or spec.cache
    if not path:
        raise ValueError("a server scorer needs a request cache file")
    client = ClientConfig(spec.server, spec.model, api_key=spec.api_key or None, concurrency=spec.concurrency,
                          timeout_s=spec.timeout_s, max_retries=spec.retries)
    return ChatScorer(client, path, temperature=spec.temperature, top_p=spec.top_p, max_tokens=spec.max_tokens)
