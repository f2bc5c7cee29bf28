"""One flag group for the judge, shared by every command that judges pairs (eval.run, eval.best_of_n,
train.select_preferences): which judge, how it searches, and its budgets; and the one factory that builds it.

    @dataclass
    class MyArguments(JudgeArguments):          # the command's own fields; the judge's are keyword-only
        data: str = field(metadata={"help": "..."})
    judge = args.open_judge()                   # an openrm.judge.Judge (tools, or the no-tool prompt)
    pairwise, close = args.open_match_judge(questions)   # a tournament's match judge (plugin kinds too)

`--judge` is always an exported judge folder (or a packaged model's short name) or an installed match judge kind
(plumbing.plugins; the offline demo installs `toy-oracle`); `--server` + `--model` + `--tokenizer` is a served judge.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from openrm.context import POLICIES as CONTEXT_POLICIES
from plumbing import plugins
from plumbing.arguments import Collect
from retrieval.retriever import parse_locations


def is_plugin_judge(judge: str | None) -> bool:
    """Whether `--judge` names an installed match judge kind rather than an exported judge folder."""
    return bool(judge) and judge in plugins.names(plugins.MATCH_JUDGES)


@dataclass(kw_only=True)
class JudgeArguments:
    judge: str | None = field(default=None, metadata={
        "help": "exported judge folder (HF checkpoint + judge card), or an installed match judge kind "
                "(e.g. toy-oracle, with --world_seed)"})
    server: str | None = field(default=None, metadata={
        "help": "OpenAI-compatible completions URL serving the judge (vLLM), e.g. http://127.0.0.1:8000/v1"})
    model: str | None = field(default=None, metadata={"help": "served model name (with --server)"})
    tokenizer: str | None = field(default=None, metadata={
        "help": "with --server: the exported judge folder, for its tokenizer and judge card"})
    retrievers: list[str] = field(default_factory=list, metadata={
        "help": "CORPUS=LOCATION (index folder or http:// server URL); repeat per corpus", "action": Collect,
        "aliases": ["--retriever"]})
    no_tools: bool = field(default=False, metadata={"help": "judge without search (direct-reasoning baseline)"})
    device: str = field(default="cpu", metadata={"help": "torch device for --judge"})
    chunk_size: int = field(default=16, metadata={"help": "pairs per judge call (and per checkpoint of progress)"})
    max_completion_tokens: int | None = field(default=None, metadata={"help": "override the judge card's budget"})
    max_new_tokens: int | None = field(default=None, metadata={"help": "override the card's per-turn budget"})
    context_policy: str = field(default="truncate", metadata={
        "help": "a prompt longer than the context minus max_completion_tokens: 'truncate' (cut the middle of each "
                "answer, one cap for both, a visible note where cut) or 'fail' (judged as a failure, not sent); "
                "every such row is counted and listed in the report"})
    max_context_tokens: int | None = field(default=None, metadata={
        "help": "the judge's context in tokens (default: the checkpoint's max_position_embeddings; give the "
                "server's --max-model-len for a served judge that holds less)"})
    world_seed: int | None = field(default=None, metadata={"help": "a plugin judge's world seed (toy-oracle)"})

    def __post_init__(self) -> None:
        predictions = getattr(self, "predictions", None)
        rtj = getattr(self, "retrieve_then_judge", False)
        sources = [x for x in (self.judge, self.server, predictions) if x]
        if len(sources) != 1:
            names = "--judge, --server, --predictions" if hasattr(self, "predictions") else "--judge and --server"
            raise ValueError(f"give exactly one of {names}")
        if self.server and not (self.tokenizer and self.model):
            raise ValueError("--server needs --model (the served name) and --tokenizer (the exported judge folder)")
        if self.plugin:
            if self.world_seed is None:
                raise ValueError(f"--judge {self.judge} needs --world_seed (the world its questions come from)")
            if self.retrievers or self.no_tools or rtj:
                raise ValueError(f"--judge {self.judge} is not a model: no --retrievers, --no_tools or "
                                 "--retrieve_then_judge")
        elif predictions:
            if self.no_tools or rtj or self.retrievers:
                raise ValueError("--predictions scores a file; judging options do not apply")
        else:
            if self.no_tools and rtj:
                raise ValueError("--no_tools and --retrieve_then_judge are different baselines; pick one")
            if rtj and not self.retrievers:
                raise ValueError("--retrieve_then_judge needs --retrievers CORPUS=LOCATION")
            if not (self.no_tools or rtj or self.retrievers):
                # without retrievers the judge would silently use the no-search prompt under the name "tools"
                raise ValueError("tool mode needs --retrievers CORPUS=LOCATION; pass --no_tools to judge without "
                                 "search")
        self.locations = parse_locations(self.retrievers)
        if self.chunk_size < 1:
            raise ValueError("--chunk_size must be >= 1")
        if self.context_policy not in CONTEXT_POLICIES:
            raise ValueError(f"--context_policy must be one of {CONTEXT_POLICIES}, got {self.context_policy!r}")
        if self.max_context_tokens is not None and self.max_context_tokens < 1:
            raise ValueError("--max_context_tokens must be >= 1")

    @property
    def plugin(self) -> bool:
        return is_plugin_judge(self.judge)

    @property
    def mode(self) -> str:
        """predictions | <plugin kind> | no-tools | retrieve-then-judge | tools: what a run record stores."""
        if getattr(self, "predictions", None):
            return "predictions"
        if self.plugin:
            return self.judge
        return ("no-tools" if self.no_tools else "retrieve-then-judge" if getattr(self, "retrieve_then_judge", False)
                else "tools")

    def judge_id(self) -> str:
        """Who judges, as a run record stores it: a plugin kind, a resolved folder, or server + model + tokenizer."""
        if self.server:
            return f"{self.server} model={self.model} tokenizer={Path(self.tokenizer).resolve()}"
        return self.judge if self.plugin else str(Path(self.judge).resolve())

    def open_judge(self, concurrency: int | None = None) -> Any:
        """The model judge (`openrm.judge.Judge`): with search in tool mode, the no-tool prompt otherwise.
        `concurrency`: a served judge's requests in flight (None: `Judge.from_server`'s default)."""
        from openrm.judge import Judge

        if self.plugin or getattr(self, "predictions", None):
            raise ValueError(f"--judge {self.judge or self.predictions} is not a model judge")
        options = {k: getattr(self, k) for k in ("max_completion_tokens", "max_new_tokens", "max_context_tokens")
                   if getattr(self, k)}
        options["context_policy"] = self.context_policy
        options["batch_size"] = 2 * self.chunk_size
        retrievers = self.locations if self.mode == "tools" else None
        if self.server:
            if concurrency is not None:
                options["concurrency"] = concurrency
            return Judge.from_server(self.server, self.model, self.tokenizer, retrievers, **options)
        return Judge.from_pretrained(self.judge, retrievers, device=self.device, **options)

    def open_match_judge(self, questions: Sequence[str] = (), concurrency: int | None = None) -> tuple[Any, Any]:
        """(pairwise match judge, close or None): a plugin kind told the `questions` it will judge (it may refuse
        ones it does not know), or the model judge playing both orders."""
        from openrm.tournament.judges import JudgePairwise
        from openrm.tournament.match_judge import MatchJudgeSpec, build_pairwise

        if self.plugin:
            spec = MatchJudgeSpec(kind=self.judge, world_seed=self.world_seed)
            return build_pairwise(spec, [{"question": q} for q in questions]), None
        judge = self.open_judge(concurrency)
        return JudgePairwise(judge), judge.close
