"""Evaluating a pairwise judge on a benchmark: the arguments of `python -m eval.run` and the run itself, load →
judge (or read published predictions) → score → report (`evaluate`). Writes results.json, verdicts.jsonl and run.json
under --out (judging runs; a rerun with the same settings skips the ids already there, one with other settings is
refused), report.md and report.png.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path

from eval import loaders, metrics, scorecard
from eval.judging import VerdictStore, judge_examples
from eval.predictions import PREDICTION_PRESETS, PredictionFormat, read_predictions
from eval.settings import VerdictSettings
from openrm.evidence import Evidence
from openrm.judge_spec import JudgeSpec

logger = logging.getLogger(__name__)


def _pairs(text: str, what: str) -> dict[str, str]:
    """"k1=v1,k2=v2" → {k1: v1, k2: v2}."""
    out = {}
    for item in filter(None, (s.strip() for s in text.split(","))):
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ValueError(f"{what}: expected key=value items separated by commas, got {item!r}")
        out[key.strip()] = value.strip()
    return out


@dataclass
class EvalArguments(JudgeSpec):
    benchmark: str = field(metadata={"help": f"one of {loaders.BENCHMARKS}"})
    data: str = field(metadata={"help": "benchmark file or HF dataset folder (JSON, JSONL, parquet, save_to_disk)"})
    out: str = field(metadata={"help": "output folder (results.json, verdicts.jsonl, report.md, report.png)"})
    predictions: str | None = field(default=None, metadata={"help": "score precomputed verdicts from this file"})
    predictions_format: str = field(default="openrm", metadata={
        "help": f"preset {sorted(PREDICTION_PRESETS)} or custom (+ --id_field --verdict_field --verdict_values)"})
    id_field: str | None = field(default=None, metadata={"help": "custom predictions: the example-id field"})
    verdict_field: str | None = field(default=None, metadata={"help": "custom predictions: the verdict field"})
    verdict_values: str | None = field(default=None, metadata={
        "help": "custom predictions: value=A|B|tie pairs, e.g. '1=A,2=B,0=tie'; other values are failures"})
    retrieve_then_judge: bool = field(default=False, metadata={
        "help": "retrieve once for the question, put the passages in the prompt, judge without the tool loop"})
    split: str | None = field(default=None, metadata={"help": "split of a DatasetDict folder (in-domain: test)"})
    limit: int | None = field(default=None, metadata={"help": "judge only the first N usable examples"})
    seed: int = field(default=0, metadata={"help": "seeds A/B placement (RewardBench) and the bootstrap"})
    tie_policy: str = field(default="half", metadata={"help": f"tie on an A/B item: {metrics.POLICIES}"})
    failure_policy: str = field(default="wrong", metadata={"help": f"parse failure: {metrics.POLICIES}"})
    bootstrap: int = field(default=1000, metadata={"help": "bootstrap resamples for the 95%% intervals"})
    chunk_size: int = field(default=16, metadata={"help": "pairs per judge call (and per checkpoint of progress)"})
    concurrency: int = field(default=1, metadata={"help": "judge calls in flight (use > 1 with --judge_server)"})
    evidence_tokens: int = field(default=512, metadata={"help": "retrieve-then-judge: token budget of passages"})
    fields: str | None = field(default=None, metadata={
        "help": "--benchmark pairwise: question=F,answer_a=F,answer_b=F,label=F[,id=F,subset=F,context=F]"})
    labels: str | None = field(default=None, metadata={"help": "--benchmark pairwise: value=A|B|tie, e.g. 1=A,2=B"})

    def __post_init__(self):
        if self.benchmark not in loaders.BENCHMARKS:
            raise ValueError(f"--benchmark must be one of {loaders.BENCHMARKS}, got {self.benchmark!r}")
        super().__post_init__()
        if bool(self.judge) == bool(self.predictions):
            raise ValueError("give exactly one of --judge and --predictions")
        if self.judge and not self.model_judge:
            raise ValueError(f"--judge {self.judge} is a match judge for tournaments; eval.run judges with a model")
        if self.retrieve_then_judge and (self.no_tools or not self.retrievers):
            raise ValueError("--retrieve_then_judge needs --retrievers CORPUS=LOCATION and is not --no_tools")
        metrics.check_policy("--tie_policy", self.tie_policy)
        metrics.check_policy("--failure_policy", self.failure_policy)
        if self.predictions_format not in (*PREDICTION_PRESETS, "custom"):
            raise ValueError(f"--predictions_format must be one of {sorted(PREDICTION_PRESETS)} or custom")
        if self.predictions_format == "custom" and not (self.id_field and self.verdict_field and self.verdict_values):
            raise ValueError("--predictions_format custom needs --id_field, --verdict_field and --verdict_values")
        for name in ("chunk_size", "concurrency", "bootstrap", "evidence_tokens"):
            if getattr(self, name) < 1:
                raise ValueError(f"--{name} must be >= 1")
        if self.limit is not None and self.limit < 1:
            raise ValueError("--limit must be >= 1")

    @property
    def mode(self) -> str:
        """predictions | retrieve-then-judge | the judge's own mode (tools, no-tools): what a run record stores."""
        if self.predictions:
            return "predictions"
        return "retrieve-then-judge" if self.retrieve_then_judge else super().mode

    def spec(self) -> loaders.PairwiseSpec | None:
        if self.benchmark != "pairwise":
            return None
        if not (self.fields and self.labels):
            raise ValueError("--benchmark pairwise needs --fields and --labels")
        return loaders.PairwiseSpec(labels=_pairs(self.labels, "--labels"), **_pairs(self.fields, "--fields"))

    def prediction_format(self) -> PredictionFormat:
        if self.predictions_format != "custom":
            return PREDICTION_PRESETS[self.predictions_format]
        return PredictionFormat(self.id_field, {self.verdict_field: _pairs(self.verdict_values, "--verdict_values")})


def build_judge(args: EvalArguments):
    """The judge of `args` (JudgeSpec.open_judge), and the evidence retriever of retrieve-then-judge."""
    retrievers = args.locations
    judge = args.open_judge(search=args.mode == "tools")
    evidence = None
    if args.mode == "retrieve-then-judge":
        from openrm.card import JudgeCard
        from openrm.tools import ToolBox

        card = JudgeCard.read(args.judge) or JudgeCard()
        specs = [t for t in card.tool_specs() if t.corpus in retrievers] or list(card.tool_specs())
        evidence = Evidence(ToolBox.from_locations({t.corpus: retrievers[t.corpus] for t in specs}, specs, card.topk),
                            judge.tokenizer, args.evidence_tokens)
    return judge, evidence


def evaluate(args: EvalArguments) -> dict:
    """Load → judge (or read the predictions) → score → write the report under `args.out`; the results."""
    out = Path(args.out)
    loaded = loaders.load_benchmark(args.benchmark, args.data, args.split, args.seed, args.limit, args.spec())
    logger.info("%s: %d examples from %s (%d rows skipped)", args.benchmark, len(loaded.examples), args.data,
                len(loaded.skipped))
    records = None
    if args.predictions:
        read = read_predictions(args.predictions, args.prediction_format())
        predictions = read.by_id
        judge_name = Path(args.predictions).name
        loaded.notes["prediction_rows_skipped"] = len(read.skipped)
        loaded.notes["prediction_rules"] = dict(read.rules.most_common())
    else:
        store = VerdictStore(out / "verdicts.jsonl")
        VerdictSettings.of(args).check_or_write(out, has_verdicts=len(store) > 0)
        stale = [r["id"] for r in store.records.values() if r.get("mode") != args.mode]
        if stale:
            raise ValueError(f"{store.path} holds {len(stale)} verdicts of another mode "
                             f"({store.records[stale[0]].get('mode')}); use another --out")
        judge, evidence = build_judge(args)
        try:
            judge_examples(judge, loaded.examples, store, args.mode, args.chunk_size, args.concurrency, evidence)
        finally:
            judge.close()
            if evidence is not None:
                evidence.toolbox.close()
        records = store.records
        predictions = {i: r["prediction"] for i, r in records.items()}
        judge_name = Path(args.judge).name
    results = scorecard.score(args.benchmark, loaded.examples, predictions, records, args.tie_policy,
                           args.failure_policy, args.seed, args.bootstrap)
    if records is not None:
        results["judging"]["context_policy"] = args.judge_context_policy
    results.update({"judge": judge_name, "mode": args.mode, "data": args.data, "notes": loaded.notes,
                    "skipped": loaded.skip_summary(), "adjusted_answers": loaded.coercion_summary()})
    paths = scorecard.write(results, out)
    logger.info("wrote %s", ", ".join(str(p) for p in paths.values()))
    return results
