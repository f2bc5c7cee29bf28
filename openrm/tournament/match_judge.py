"""The match judges a tournament can use, built from a few settings (train/grpo_policy.py's YAML, the flags of
eval.head_to_head): the exported openrm judge (local checkpoint, in-process vLLM, or an OpenAI-compatible server),
a kind another package installs (plumbing.plugins, group `openrm.match_judges`: the offline demo's `toy-oracle`), and
a group judge for multi-round tournaments (pairwise-built, or rubric-guided over a chat server).

    spec = MatchJudgeSpec(kind="openrm", path="judges/openrm-7b", retrievers={"wiki": "indexes/wiki"})
    pairwise = build_pairwise(spec, rows)              # rows: the prompt rows (a plugin judge may read their meta)
    group = build_group(spec, pairwise)                # None unless the topology needs one
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from plumbing import plugins

logger = logging.getLogger(__name__)

BUILTIN_KINDS = ("openrm", "openrm-vllm", "openrm-server", "none")  # none: rubric group judge only
GROUP_KINDS = ("pairwise", "rubric")


@dataclass(frozen=True)
class MatchJudgeSpec:
    """`kind`: one of `pairwise_kinds()`. `path`: the exported judge folder (for openrm-server, where its tokenizer and
    card are read). `server` / `model`: the OpenAI-compatible endpoint (`http://host:8000/v1`) and served name.
    `retrievers`: corpus -> index folder or retrieval server URL (none: the judge's no-tool prompt).
    `group`: how multi-round tournaments pick winners: "pairwise" (every pair inside the group, by the pairwise
    judge) or "rubric" (`RubricGroupJudge` over `group_server` / `group_model`)."""

    kind: str
    path: str = ""
    server: str = ""
    model: str = ""
    retrievers: Mapping[str, str] = field(default_factory=dict)
    device: str = "cpu"
    batch_size: int = 64  # judge rollouts per generate call (two per pair)
    concurrency: int = 8  # requests in flight to a server
    world_seed: int = 0  # for a plugin judge that builds a world (the toy oracle)
    group: str = "pairwise"
    group_server: str = ""
    group_model: str = ""
    orders: int = 2  # an openrm judge: 2 plays both orders of a match itself; 1 one order, as the arena shows it
    group_temperature: float = 0.0
    group_top_p: float | None = None  # None: not sent (the server's default)
    options: Mapping[str, Any] = field(default_factory=dict)  # an openrm judge's run settings over its card's

    def __post_init__(self) -> None:
        if self.orders not in (1, 2):
            raise ValueError(f"orders must be 1 or 2, got {self.orders!r}")
        if self.kind not in BUILTIN_KINDS and self.kind not in plugins.names(plugins.MATCH_JUDGES):
            raise ValueError(f"judge kind must be one of {pairwise_kinds()}, got {self.kind!r}")
        if self.group not in GROUP_KINDS:
            raise ValueError(f"group judge must be one of {GROUP_KINDS}, got {self.group!r}")
        if self.kind in ("openrm", "openrm-vllm", "openrm-server") and not self.path:
            raise ValueError(f"judge kind {self.kind!r} needs the exported judge folder (path)")
        if self.kind == "openrm-server" and not (self.server and self.model):
            raise ValueError("judge kind 'openrm-server' needs server (http://host:port/v1) and model")
        if self.group == "rubric" and not (self.group_server and self.group_model):
            raise ValueError("the rubric group judge needs group_server and group_model")
        if self.kind == "none" and self.group != "rubric":
            raise ValueError("judge kind 'none' leaves only a rubric group judge: set group to 'rubric'")
        if self.batch_size < 1 or self.concurrency < 1:
            raise ValueError("batch_size and concurrency must be >= 1")
        if self.options and not self.kind.startswith("openrm"):
            raise ValueError(f"judge options apply to an openrm judge, not to kind {self.kind!r}")


def judge_kind(judge: str, server: str = "", backend: str = "transformers") -> str:
    """The kind `--judge` names, the same way in every command: `none`, an installed plugin kind, or else an exported
    judge folder, played through a server when `server` is given, else in process by `backend` (transformers |
    vllm)."""
    if judge == "none" or judge in plugins.names(plugins.MATCH_JUDGES):
        return judge
    if server:
        return "openrm-server"
    if backend not in ("transformers", "vllm"):
        raise ValueError(f"judge backend must be transformers or vllm, got {backend!r}")
    return "openrm-vllm" if backend == "vllm" else "openrm"


def pairwise_kinds() -> list[str]:
    """The judge kinds this install knows: the built-in ones and those installed packages add."""
    return [*BUILTIN_KINDS, *plugins.names(plugins.MATCH_JUDGES)]


def build_pairwise(spec: MatchJudgeSpec, rows: Sequence[Mapping[str, Any]] = ()):
    """The pairwise match judge of `spec`. `rows`: the prompt rows it will judge, handed to a plugin kind (the toy
    oracle reads their facts); the openrm kinds ignore them."""
    from openrm.tournament.judges import JudgePairwise

    if spec.kind == "none":
        raise ValueError("this topology plays pairwise matches, but the judge kind is 'none'")
    if spec.kind not in BUILTIN_KINDS:
        return plugins.load(plugins.MATCH_JUDGES, spec.kind)(spec, rows)
    from openrm.judge import Judge
    from openrm.models import PACKAGED

    if spec.path in PACKAGED:  # a packaged model's short name (the zero-shot judge): its prepared folder
        from openrm.models import resolve

        spec = replace(spec, path=resolve(spec.path))
    if not Path(spec.path).is_dir():
        raise ValueError(f"judge {spec.path!r}: no judge folder there, no packaged model of that name "
                         f"({sorted(PACKAGED)}), and no installed match judge kind of that name "
                         f"(installed: {plugins.names(plugins.MATCH_JUDGES) or 'none'})")
    retrievers = dict(spec.retrievers) or None
    if spec.kind == "openrm":
        judge = Judge.from_pretrained(spec.path, retrievers, device=spec.device, batch_size=spec.batch_size,
                                      **spec.options)
    elif spec.kind == "openrm-vllm":
        judge = Judge.from_vllm(spec.path, retrievers, batch_size=spec.batch_size, **spec.options)
    else:
        judge = Judge.from_server(spec.server, spec.model, spec.path, retrievers, batch_size=spec.batch_size,
                                  concurrency=spec.concurrency, **spec.options)
    logger.info("match judge: %s from %s (%s)", spec.kind, spec.path,
                f"tools over {sorted(spec.retrievers)}" if retrievers else "no tools")
    return JudgePairwise(judge, orders=spec.orders)


def build_group(spec: MatchJudgeSpec, pairwise: Any):
    """The group judge of `spec` (multi-round tournaments)."""
    if spec.group == "rubric":
        from openrm.tournament.rubric_judge import RubricGroupJudge

        return RubricGroupJudge(spec.group_server, spec.group_model, max_concurrency=spec.concurrency,
                                temperature=spec.group_temperature, top_p=spec.group_top_p)
    from openrm.tournament.judges import PairwiseGroupJudge

    return PairwiseGroupJudge(pairwise)
