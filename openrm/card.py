"""The judge's run settings (`RunSettings`) and its card (`JudgeCard`): one record from training to judging.

`train/grpo_openrm.py` writes the card of the run it trained (`openrm_run.json`), `train/export_judge.py` copies it
beside the exported weights as `judge_card.json` with provenance added, and `Judge.from_pretrained` reads it back.
Each setting has its default here and nowhere else; per-call options override a card's settings.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from openrm import protocol
from openrm.context import POLICIES as CONTEXT_POLICIES
from openrm.generation import SamplingParams
from openrm.rollout import RolloutConfig
from openrm.tools import TOPK
from plumbing.records import run_record

logger = logging.getLogger(__name__)

CARD_NAME = "judge_card.json"
RUN_CARD_NAME = run_record("openrm")  # the same card, as training writes it beside the checkpoint
CARD_FORMAT = "openrm-judge/1"


@dataclass
class RunSettings:
    """How the judge runs: its tools, the search and token budgets, and sampling (greedy unless asked otherwise)."""

    tools: dict[str, str] = field(default_factory=lambda: {t.name: t.corpus for t in protocol.DEFAULT_TOOLS})
    max_tool_calls: int = protocol.MAX_TOOL_CALLS
    topk: int = TOPK
    max_turns: int = RolloutConfig.max_turns
    max_new_tokens: int = SamplingParams.max_new_tokens  # per generation turn
    max_completion_tokens: int = RolloutConfig.max_completion_tokens
    max_information_tokens: int = RolloutConfig.max_information_tokens
    temperature: float = 0.0
    top_p: float = SamplingParams.top_p
    top_k: int = SamplingParams.top_k
    seed: int | None = None
    prompt_style: str = "full"  # one of protocol.PROMPT_STYLES: "compact" for tiny judges trained from scratch
    # a prompt longer than the context minus max_completion_tokens: "truncate" (cut the middle of each answer) or
    # "fail" (judged as a failure, not sent); see openrm.context
    context_policy: str = "truncate"
    max_context_tokens: int | None = None  # None: the model config's max_position_embeddings
    allow_tie: bool = False  # offer and read a tie verdict, <answer>tie</answer> (Reasoning Arena); off: A or B only
    show_reference: bool = False  # show a pair's reference answer, when it has one, in the prompt

    def __post_init__(self):
        if self.topk < 1:
            raise ValueError(f"topk must be >= 1, got {self.topk}")
        if self.prompt_style not in protocol.PROMPT_STYLES:
            raise ValueError(f"prompt_style must be one of {protocol.PROMPT_STYLES}, got {self.prompt_style!r}")
        if self.context_policy not in CONTEXT_POLICIES:
            raise ValueError(f"context_policy must be one of {CONTEXT_POLICIES}, got {self.context_policy!r}")
        if self.max_context_tokens is not None and self.max_context_tokens <= self.max_completion_tokens:
            raise ValueError(f"max_context_tokens ({self.max_context_tokens}) must exceed max_completion_tokens "
                             f"({self.max_completion_tokens})")
        self.rollout_config()  # the budgets are checked where they are used: RolloutConfig and SamplingParams
        self.tool_specs()

    @classmethod
    def names(cls) -> tuple[str, ...]:
        return tuple(f.name for f in dataclasses.fields(RunSettings))

    def settings(self) -> RunSettings:
        """The run settings alone (a card without its provenance)."""
        return RunSettings(**{name: getattr(self, name) for name in RunSettings.names()})

    def tool_specs(self) -> tuple[protocol.ToolSpec, ...]:
        return protocol.tools_from_mapping(self.tools)

    def rollout_config(self) -> RolloutConfig:
        sampling = SamplingParams(max_new_tokens=self.max_new_tokens, temperature=self.temperature, top_p=self.top_p,
                                  top_k=self.top_k, seed=self.seed)
        return RolloutConfig(max_tool_calls=self.max_tool_calls, max_turns=self.max_turns,
                             max_completion_tokens=self.max_completion_tokens,
                             max_information_tokens=self.max_information_tokens, sampling=sampling)


@dataclass
class JudgeCard(RunSettings):
    """What a judge is and how to run it: the run settings, then provenance (training data, reward, step, where it
    came from). Written by training (`openrm_run.json`) and export (`judge_card.json`), read by `Judge`."""

    format: str = CARD_FORMAT
    base_model: str | None = None
    source: str | None = None  # the folder it was trained into or exported from
    adapter: bool = False  # a LoRA adapter (merged into base_model on export)
    data: dict[str, Any] | None = None
    reward_variant: str | None = None
    global_step: int | None = None
    retrievers: dict[str, str] | None = None  # the training run's locations: a hint, callers pass their own
    eval_results: Any = None
    openrm_version: str | None = None
    openrm_commit: str | None = None
    exported_at: str | None = None

    @classmethod
    def read(cls, folder: str | os.PathLike, name: str = CARD_NAME) -> JudgeCard | None:
        """The card `name` in `folder`, or None when there is none (a bare checkpoint gets the defaults)."""
        path = Path(folder) / name
        if not path.is_file():
            return None
        data = json.loads(path.read_text(encoding="utf-8"))
        if data.get("format") != CARD_FORMAT:
            logger.warning("%s: card format %r, expected %r; reading what it shares", path, data.get("format"),
                           CARD_FORMAT)
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            logger.warning("%s: ignoring unknown card fields %s", path, unknown)
        return cls(**{k: v for k, v in data.items() if k in known})

    @classmethod
    def for_judging(cls, folder: str | os.PathLike, options: Mapping[str, Any]) -> tuple[JudgeCard, int]:
        """The card a judge over `folder` runs with, per-call `options` (run settings) over it, and the batch size
        (`options["batch_size"]`, default 64). The card: an exported judge's `judge_card.json`, else a training run's
        `openrm_run.json` (a GRPO output folder is judged as it was trained), else the defaults (a bare
        checkpoint)."""
        options = dict(options)
        batch_size = int(options.pop("batch_size", 64))
        unknown = sorted(set(options) - set(RunSettings.names()))
        if unknown:
            raise TypeError(f"unknown judge options {unknown}; accepted: {sorted(RunSettings.names())} and batch_size")
        card = cls.read(folder) or cls.read(folder, RUN_CARD_NAME) or cls()
        return dataclasses.replace(card, **options), batch_size

    def write(self, folder: str | os.PathLike, name: str = CARD_NAME) -> Path:
        path = Path(folder) / name
        path.write_text(json.dumps(dataclasses.asdict(self), indent=2) + "\n", encoding="utf-8")
        return path
