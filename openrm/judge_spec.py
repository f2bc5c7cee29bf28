"""The one way to name a judge, shared by every command that judges (eval.run, eval.best_of_n, eval.head_to_head,
train.select_preferences, train.grpo_policy): which judge, how it searches, its run settings and a tournament's group
judge; and the one place that opens it (`openrm.judge.Judge.from_*`).

    @dataclass
    class MyArguments(JudgeSpec):               # the command's own fields; the judge's are keyword-only
        data: str = field(metadata={"help": "..."})
    judge = args.open_judge()                   # an openrm.judge.Judge (tools, or the no-tool prompt)
    pairwise, close = args.open_match(rows)     # a tournament's pairwise match judge (plugin kinds too)
    group = args.open_group(pairwise)           # multi-round tournaments' group judge

`--judge` is an exported judge folder (or a packaged model's short name), an installed match judge kind
(plumbing.plugins; the offline demo installs `toy-oracle`, with `--world_seed`) or `none` (a rubric group judge only).
A folder runs in process (`--judge_backend transformers|vllm`) or, with `--judge_server URL --judge_model NAME`, on an
OpenAI-compatible server, the folder then giving the tokenizer and judge card.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from openrm.context import POLICIES as CONTEXT_POLICIES
from plumbing import plugins
from plumbing.arguments import Collect
from retrieval.retriever import parse_locations

logger = logging.getLogger(__name__)

BACKENDS = ("transformers", "vllm")
GROUP_KINDS = ("pairwise", "rubric")
NO_JUDGE = "none"  # a tournament whose only judge is the rubric group judge
# run settings with a flag of their own, so not in --judge_options
BUDGET_FLAGS = {"max_completion_tokens": "judge_max_completion_tokens", "max_new_tokens": "judge_max_new_tokens",
                "context_policy": "judge_context_policy", "max_context_tokens": "judge_max_context_tokens"}


def is_plugin_judge(judge: str | None) -> bool:
    """Whether `judge` names an installed match judge kind rather than an exported judge folder."""
    return bool(judge) and judge in plugins.names(plugins.MATCH_JUDGES)


def judge_kinds() -> list[str]:
    """What `--judge` may name besides a folder: `none` and the match judge kinds installed packages add."""
    return [NO_JUDGE, *plugins.names(plugins.MATCH_JUDGES)]


@dataclass(kw_only=True)
class JudgeSpec:
    judge: str = field(default="", metadata={
        "help": "the judge: an exported judge folder (HF checkpoint + judge card) or a packaged model's short name; "
                "an installed match judge kind (e.g. toy-oracle, with --world_seed); or none (a tournament's rubric "
                "group judge only). With --judge_server, the folder gives the tokenizer and judge card."})
    judge_server: str = field(default="", metadata={
        "help": "OpenAI-compatible completions URL serving --judge (vLLM), e.g. http://127.0.0.1:8000/v1"})
    judge_model: str = field(default="", metadata={"help": "the model name --judge_server serves"})
    judge_backend: str = field(default="transformers", metadata={
        "help": f"how a local --judge folder runs: one of {BACKENDS} (in process)"})
    retrievers: list[str] = field(default_factory=list, metadata={
        "help": "the judge's search: CORPUS=LOCATION (index folder or http:// server URL); repeat per corpus",
        "action": Collect, "aliases": ["--retriever"]})
    no_tools: bool = field(default=False, metadata={"help": "judge without search (the no-tool prompt)"})
    world_seed: int | None = field(default=None, metadata={
        "help": "a plugin judge's world seed (toy-oracle: the world its questions come from)"})
    judge_device: str = field(default="cpu", metadata={"help": "torch device of a local --judge"})
    judge_batch_size: int = field(default=32, metadata={"help": "judge rollouts per generate call (two per pair)"})
    judge_concurrency: int = field(default=8, metadata={
        "help": "requests in flight to --judge_server (and to the rubric group judge's server)"})
    judge_max_completion_tokens: int | None = field(default=None, metadata={
        "help": "the judge's token budget per rollout (default: its judge card's)"})
    judge_max_new_tokens: int | None = field(default=None, metadata={
        "help": "the judge's new tokens per turn (default: its judge card's)"})
    judge_context_policy: str = field(default="truncate", metadata={
        "help": "a prompt longer than the context minus the completion budget: 'truncate' (cut the middle of each "
                "answer, one cap for both, a visible note where cut) or 'fail' (judged as a failure, not sent); "
                "every such row is counted and listed in the report"})
    judge_max_context_tokens: int | None = field(default=None, metadata={
        "help": "the judge's context in tokens (default: the checkpoint's max_position_embeddings; give the "
                "server's --max-model-len for a served judge that holds less)"})
    # dict | str | None, as TRL's model_init_kwargs: HfArgumentParser then reads the command line's JSON as a str
    judge_options: dict | str | None = field(default_factory=dict, metadata={
        "help": "other run settings of the judge over its card's (JSON on the command line), e.g. "
                '{"max_turns": 3, "prompt_style": "compact"}: how a packaged model judges zero-shot under a '
                "trained judge's settings"})
    group_judge: str = field(default="pairwise", metadata={
        "help": f"multi-round tournaments' group judge: one of {GROUP_KINDS} (pairwise: every pair inside the "
                "group by the match judge; rubric: a rubric-guided chat model)"})
    group_server: str = field(default="", metadata={"help": "the rubric group judge's chat server URL"})
    group_model: str = field(default="", metadata={"help": "the rubric group judge's model name"})
    group_temperature: float = field(default=0.0, metadata={"help": "the rubric group judge's temperature"})
    group_top_p: float | None = field(default=None, metadata={
        "help": "the rubric group judge's top-p (Tournament-GRPO: 0.95); unset: not sent"})

    def __post_init__(self) -> None:
        options = {} if self.judge_options is None else self.judge_options
        if isinstance(options, str):
            try:
                options = json.loads(options or "{}")
            except json.JSONDecodeError as exc:
                raise ValueError(f"--judge_options must be a JSON object: {exc}") from exc
        if not isinstance(options, dict):
            raise ValueError(f"--judge_options must be a mapping, got {options!r}")
        self.judge_options = options
        self.locations = parse_locations(self.retrievers)
        self._check_judge()
        self._check_settings()

    def _check_judge(self) -> None:
        served = bool(self.judge_server or self.judge_model)
        if served and not (self.judge and self.judge_server and self.judge_model):
            raise ValueError("a served judge needs --judge_server (the URL), --judge_model (the served name) and "
                             "--judge (the exported judge folder, for its tokenizer and judge card)")
        if self.judge_backend not in BACKENDS:
            raise ValueError(f"--judge_backend must be one of {BACKENDS}, got {self.judge_backend!r}")
        if self.plugin or self.judge == NO_JUDGE:
            what = f"--judge {self.judge} is not a model"
            if served or self.retrievers or self.no_tools or self.judge_options:
                raise ValueError(f"{what}: no --judge_server, --retrievers, --no_tools or --judge_options")
            if self.plugin and self.world_seed is None:
                raise ValueError(f"--judge {self.judge} needs --world_seed (the world its questions come from)")
        elif not self.judge:
            if self.retrievers or self.no_tools or self.judge_options:
                raise ValueError("--retrievers, --no_tools and --judge_options describe a judge: give --judge")
        elif not (self.retrievers or self.no_tools):
            # without retrievers a judge named for search would silently use its no-tool prompt
            raise ValueError(f"--judge {self.judge}: tool mode needs --retrievers CORPUS=LOCATION; pass --no_tools "
                             "to judge without search")
        if self.group_judge not in GROUP_KINDS:
            raise ValueError(f"--group_judge must be one of {GROUP_KINDS}, got {self.group_judge!r}")
        if self.group_judge == "rubric" and not (self.group_server and self.group_model):
            raise ValueError("--group_judge rubric needs --group_server and --group_model")
        if self.judge == NO_JUDGE and self.group_judge != "rubric":
            raise ValueError("--judge none leaves only a rubric group judge: set --group_judge rubric")

    def _check_settings(self) -> None:
        from openrm.card import RunSettings

        if self.judge_batch_size < 1 or self.judge_concurrency < 1:
            raise ValueError("--judge_batch_size and --judge_concurrency must be >= 1")
        if self.judge_context_policy not in CONTEXT_POLICIES:
            raise ValueError(f"--judge_context_policy must be one of {CONTEXT_POLICIES}, "
                             f"got {self.judge_context_policy!r}")
        for name in ("judge_max_completion_tokens", "judge_max_new_tokens", "judge_max_context_tokens"):
            value = getattr(self, name)
            if value is not None and value < 1:
                raise ValueError(f"--{name} must be >= 1")
        own = sorted(set(self.judge_options) & set(BUDGET_FLAGS))
        if own:
            raise ValueError(f"--judge_options {own}: give them as {[f'--{BUDGET_FLAGS[k]}' for k in own]}")
        unknown = sorted(set(self.judge_options) - set(RunSettings.names()))
        if unknown:  # refused here, not at the first judge build
            raise ValueError(f"unknown --judge_options {unknown}; accepted: {sorted(RunSettings.names())}")

    @property
    def plugin(self) -> bool:
        return is_plugin_judge(self.judge)

    @property
    def model_judge(self) -> bool:
        """Whether `--judge` names a model (a folder or packaged short name), not a plugin kind or none."""
        return bool(self.judge) and not self.plugin and self.judge != NO_JUDGE

    @property
    def mode(self) -> str:
        """<plugin kind> | none | no-tools | tools: how the judge judges, as a run record stores it."""
        if not self.model_judge:
            return self.judge
        return "no-tools" if self.no_tools else "tools"

    def judge_id(self) -> str:
        """Who judges, as a run record stores it: a plugin kind, a resolved folder, or server + model + folder."""
        if not self.model_judge:
            return self.judge
        if self.judge_server:
            return f"{self.judge_server} model={self.judge_model} tokenizer={Path(self.judge).resolve()}"
        return str(Path(self.judge).resolve())

    def run_options(self) -> dict[str, Any]:
        """The judge's run settings over its card's, as `Judge.from_*` take them."""
        budgets = {k: getattr(self, flag) for k, flag in BUDGET_FLAGS.items() if getattr(self, flag) is not None}
        return {**self.judge_options, **budgets, "batch_size": self.judge_batch_size}

    def open_judge(self, search: bool = True) -> Any:
        """The model judge (`openrm.judge.Judge`), searching `--retrievers` unless `search` is False or there are
        none. The one place a judge named on a command line becomes a model."""
        from openrm.card import JudgeCard
        from openrm.judge import Judge
        from openrm.models import PACKAGED, resolve

        if not self.model_judge:
            raise ValueError(f"--judge {self.judge or '(none given)'} is not a model judge")
        if self.judge not in PACKAGED and not Path(self.judge).is_dir():
            raise ValueError(f"judge {self.judge!r}: no judge folder there, no packaged model of that name "
                             f"({sorted(PACKAGED)}), and no installed match judge kind of that name "
                             f"(installed: {plugins.names(plugins.MATCH_JUDGES) or 'none'})")
        retrievers = self.locations if search and self.mode == "tools" else None
        options = self.run_options()
        backend = "server" if self.judge_server else self.judge_backend
        opened = f"judge {self.judge_id()} ({f'tools over {sorted(retrievers)}' if retrievers else 'no tools'})"
        generator = ({"server": self.judge_server, "served_model": self.judge_model,
                      "concurrency": self.judge_concurrency} if backend == "server"
                     else {"device": self.judge_device} if backend == "transformers" else {})
        # one pass from the flag to the model: the folder, its card, then the judge over them
        folder = resolve(self.judge)
        card, batch_size = JudgeCard.for_judging(folder, options)
        judge = Judge.open(folder, card, batch_size, retrievers, backend, **generator)
        logger.info(opened)
        return judge

    def open_match(self, rows: Sequence[Mapping[str, Any]] = (), orders: int = 2) -> tuple[Any, Any]:
        """(pairwise match judge, close or None). `rows`: the prompt rows it will judge (`question`, a plugin kind
        may read their `meta`; it may refuse questions it does not know). `orders`: a model judge plays both
        orders of a match itself (2) or one rollout per match, as the arena shows it (1)."""
        if self.judge == NO_JUDGE or not self.judge:
            raise ValueError("pairwise matches need a match judge, but --judge is "
                             f"{self.judge or 'not given'}")
        if self.plugin:
            return plugins.load(plugins.MATCH_JUDGES, self.judge)(self, rows), None
        from openrm.tournament.judges import JudgePairwise

        judge = self.open_judge()
        return JudgePairwise(judge, orders=orders), judge.close

    def open_group(self, pairwise: Any) -> Any:
        """Multi-round tournaments' group judge: every pair inside a group by `pairwise`, or the rubric judge."""
        if self.group_judge == "rubric":
            from openrm.tournament.rubric_judge import RubricGroupJudge

            return RubricGroupJudge(self.group_server, self.group_model, max_concurrency=self.judge_concurrency,
                                    temperature=self.group_temperature, top_p=self.group_top_p)
        from openrm.tournament.judges import PairwiseGroupJudge

        return PairwiseGroupJudge(pairwise)
