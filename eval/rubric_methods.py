"""Rubric evaluation on held-out preference triplets (the rows of Table 1 of the query-specific rubrics paper):
preference accuracy and paired Cohen's d of four ways to score reports, side by side in one report. `run` is what
`python -m eval.rubrics` does.

Methods: `generated` (the generator's rubric per query, Eq. 2 scores; each of `samples` rubrics is a row),
`general` (our fixed general rubric, prompts.GENERAL_RUBRIC), `pointwise` (each report rated 1-10 alone, no
rubric), `pairwise` (the scorer chooses between the two reports, asked in both orders; no scores, so no Cohen's d).

Metrics (Appendix G of the paper). For triplet i with scores s_i+ (preferred) and s_i- (rejected), d_i = s_i+ - s_i-:
  preference accuracy = (1/N) sum_i 1[d_i > 0]   (pairwise AUC; a tie counts 1/2, an unscored row 0)
  paired Cohen's d    = mean(d_i) / sd(d_i)      (sample standard deviation, over the rows that have scores;
                                                  undefined, reported null, with fewer than 2 rows or sd = 0)
For `pairwise`, a row scores 1 when both orders pick the preferred report, 1/2 when they disagree, 0 when both
pick the rejected one; a failed verdict counts as a miss. Rows without a score are counted in `unscored`.
"""

from __future__ import annotations

import json
import logging
import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from openrm.rubrics.prompts import GENERAL_RUBRIC
from openrm.rubrics.record import RubricError, parse_rubric, strip_thinking
from openrm.rubrics.scorer import PairAsk, ReportAsk, Scorer, score_reports
from openrm.rubrics.scorer_spec import ScorerSpec, scorer_kinds
from openrm.rubrics.triplets import Triplet, TripletFields

logger = logging.getLogger("openrm.eval_rubrics")
METHODS = ("generated", "general", "pointwise", "pairwise")


def preference_accuracy(deltas: Sequence[float | None]) -> float:
    """Share of rows whose preferred report scores higher (a tie 1/2, None 0): the paper's Eq. 6."""
    if not deltas:
        return float("nan")
    return sum(0.0 if d is None else 1.0 if d > 0 else 0.5 if d == 0 else 0.0 for d in deltas) / len(deltas)


def paired_cohens_d(deltas: Sequence[float | None]) -> float | None:
    """mean / sample sd of the score differences that exist: the paper's Eq. 7. None when undefined."""
    ds = [d for d in deltas if d is not None]
    if len(ds) < 2:
        return None
    sd = statistics.stdev(ds)
    return statistics.fmean(ds) / sd if sd > 0 else None


@dataclass
class MethodResult:
    method: str
    rows: int
    accuracy: float
    cohens_d: float | None
    unscored: int
    valid_rate: float | None = None  # generated rubrics that parse
    deltas: list[float | None] = field(default_factory=list)


def _result(method: str, deltas: list[float | None], valid_rate: float | None = None) -> MethodResult:
    return MethodResult(method, len(deltas), preference_accuracy(deltas), paired_cohens_d(deltas),
                        sum(d is None for d in deltas), valid_rate, deltas)


def rubric_deltas(scorer: Scorer, triplets: Sequence[Triplet], rubrics: Sequence) -> list[float | None]:
    """d_i for each (triplet, rubric) (a rubric None or a failed rating: None)."""
    asks, where = [], []
    for n, (t, r) in enumerate(zip(triplets, rubrics, strict=True)):
        if r is not None:
            asks += [(t.query, r, t.preferred), (t.query, r, t.rejected)]
            where.append(n)
    scores = score_reports(scorer, asks)
    out: list[float | None] = [None] * len(triplets)
    for k, n in enumerate(where):
        a, b = scores[2 * k].score, scores[2 * k + 1].score
        out[n] = None if a is None or b is None else a - b
    return out


def evaluate(triplets: Sequence[Triplet], scorer: Scorer, methods: Sequence[str],
             generated: Sequence[Sequence[str]] | None = None) -> dict[str, MethodResult]:
    """Every method in `methods` on `triplets`; `generated[i]`: the generator's rubric texts for triplet i."""
    results = {}
    for method in methods:
        if method == "generated":
            if generated is None:
                raise ValueError("the generated method needs the generator's rubrics")
            rows = [(t, text) for t, texts in zip(triplets, generated, strict=True) for text in texts]
            rubrics = []
            for _, text in rows:
                try:
                    rubrics.append(parse_rubric(strip_thinking(text)))
                except RubricError:
                    rubrics.append(None)
            deltas = rubric_deltas(scorer, [t for t, _ in rows], rubrics)
            valid = sum(r is not None for r in rubrics) / max(len(rubrics), 1)
            results[method] = _result(method, deltas, valid)
        elif method == "general":
            results[method] = _result(method, rubric_deltas(scorer, triplets, [GENERAL_RUBRIC] * len(triplets)))
        elif method == "pointwise":
            ratings = scorer.rate_reports([ReportAsk(t.query, r) for t in triplets for r in (t.preferred, t.rejected)])
            deltas = [None if not (a.ok and b.ok) else float(a.value - b.value)
                      for a, b in zip(ratings[::2], ratings[1::2], strict=True)]
            results[method] = _result(method, deltas)
        elif method == "pairwise":
            verdicts = scorer.compare([ask for t in triplets for ask in (PairAsk(t.query, t.preferred, t.rejected),
                                                                         PairAsk(t.query, t.rejected, t.preferred))])
            wins = [(a.ok and a.value == "A") + (b.ok and b.value == "B")
                    for a, b in zip(verdicts[::2], verdicts[1::2], strict=True)]
            acc = sum(w / 2 for w in wins) / max(len(wins), 1)
            results[method] = MethodResult(method, len(wins), acc, None,
                                           sum(not (a.ok and b.ok) for a, b in zip(verdicts[::2], verdicts[1::2],
                                                                                   strict=True)))
        else:
            raise ValueError(f"unknown method {method!r}; choose from {METHODS}")
    return results


def render(results: dict[str, MethodResult], title: str) -> str:
    lines = [f"# {title}", "", "| method | rows | preference accuracy | paired Cohen's d | unscored | valid JSON |",
             "|---|---|---|---|---|---|"]
    for r in results.values():
        d = "–" if r.cohens_d is None else f"{r.cohens_d:.3f}"
        valid = "–" if r.valid_rate is None else f"{r.valid_rate:.3f}"
        lines.append(f"| {r.method} | {r.rows} | {r.accuracy:.3f} | {d} | {r.unscored} | {valid} |")
    return "\n".join(lines) + "\n"


def scored_accuracy(deltas: Sequence[float | None]) -> float | None:
    """Preference accuracy over the rows that were scored (a generated rubric that parsed and was rated): how well
    the valid rubrics separate the reports, apart from how often the generator writes one. None when none was."""
    scored = [d for d in deltas if d is not None]
    return preference_accuracy(scored) if scored else None


def write_report(results: dict[str, MethodResult], out: Path, title: str, settings: dict) -> dict:
    out.mkdir(parents=True, exist_ok=True)
    body = {"settings": settings, "methods": {k: {"rows": r.rows, "accuracy": r.accuracy, "cohens_d": r.cohens_d,
                                                  "unscored": r.unscored, "valid_rate": r.valid_rate,
                                                  "scored_accuracy": scored_accuracy(r.deltas)}
                                              for k, r in results.items()}}
    (out / "report.json").write_text(json.dumps(body, indent=2) + "\n", encoding="utf-8")
    (out / "report.md").write_text(render(results, title), encoding="utf-8")
    return body


@dataclass
class RubricEvalArguments:
    triplets: str = field(metadata={"help": "Held-out triplets: JSONL/JSON/parquet file or save_to_disk folder."})
    out: str = field(default="runs/rubrics/eval", metadata={"help": "Folder for report.json and report.md."})
    split: str = field(default="test", metadata={"help": "Split of a dataset folder with splits."})
    max_examples: int = field(default=0, metadata={"help": "Evaluate the first N triplets only (0 = all)."})
    query_field: str = field(default="query", metadata={"help": "Column holding the request."})
    preferred_field: str = field(default="preferred", metadata={"help": "Column holding the preferred report."})
    rejected_field: str = field(default="rejected", metadata={"help": "Column holding the rejected report."})
    methods: str = field(default="generated,general,pointwise,pairwise", metadata={
        "help": f"Comma-separated methods among {METHODS}."})
    generator_path: str = field(default="", metadata={"help": "Local rubric generator checkpoint."})
    generator_server: str = field(default="", metadata={"help": "Or: OpenAI-compatible URL of a served generator."})
    generator_model: str = field(default="", metadata={"help": "Model name the generator server serves."})
    prompt_style: str = field(default="full", metadata={"help": "Generator prompt: full or compact (tiny models)."})
    samples: int = field(default=1, metadata={"help": "Rubrics generated per triplet (each one a row)."})
    temperature: float = field(default=0.0, metadata={"help": "Generator temperature (0 = greedy)."})
    max_new_tokens: int = field(default=2048, metadata={"help": "Generator budget per rubric."})
    seed: int = field(default=0, metadata={"help": "Generator sampling seed."})
    scorer: str = field(default="server", metadata={"help": f"One of {scorer_kinds()}."})
    scorer_server: str = field(default="", metadata={"help": "OpenAI-compatible URL of the scorer."})
    scorer_model: str = field(default="", metadata={"help": "Model name the scorer server serves."})
    scorer_concurrency: int = field(default=32, metadata={"help": "Scorer requests in flight."})
    scorer_temperature: float = field(default=0.0, metadata={"help": "Scorer temperature."})
    scorer_max_tokens: int = field(default=64, metadata={"help": "Scorer reply budget."})
    world_seed: int = field(default=0, metadata={"help": "Toy scorer: its toy world."})

    def __post_init__(self):
        self.method_list = [m.strip() for m in self.methods.split(",") if m.strip()]
        unknown = sorted(set(self.method_list) - set(METHODS))
        if unknown or not self.method_list:
            raise ValueError(f"methods must be among {METHODS}, got {self.methods!r}")
        if "generated" in self.method_list and not (self.generator_path or (self.generator_server
                                                                             and self.generator_model)):
            raise ValueError("the generated method needs generator_path or generator_server + generator_model")
        if self.samples < 1 or self.max_examples < 0:
            raise ValueError("samples must be >= 1 and max_examples >= 0")
        self.scorer_spec = ScorerSpec(kind=self.scorer, server=self.scorer_server, model=self.scorer_model,
                                      concurrency=self.scorer_concurrency, temperature=self.scorer_temperature,
                                      max_tokens=self.scorer_max_tokens, world_seed=self.world_seed)


def generate(args: RubricEvalArguments, queries: list[str], out: Path) -> list[list[str]]:
    from openrm.rubrics.generator import open_generator

    gen = open_generator(args.generator_path, args.generator_server, args.generator_model, args.prompt_style,
                         args.max_new_tokens, out / "generator_cache.jsonl")
    try:
        return gen.generate(queries, args.samples, args.temperature, args.seed)
    finally:
        if hasattr(gen, "close"):
            gen.close()


def run(args: RubricEvalArguments) -> dict:
    """Load the triplets, generate rubrics when asked, score every method and write report.json and report.md under
    `args.out` (rubrics.jsonl too for `generated`); the report's body."""
    from openrm.rubrics.scorer_spec import build_scorer
    from openrm.rubrics.triplets import load_triplets

    out = Path(args.out)
    triplets = load_triplets(args.triplets, args.split, args.max_examples,
                             TripletFields(args.query_field, args.preferred_field, args.rejected_field))
    logger.info("%d triplets from %s; methods %s", len(triplets), args.triplets, args.method_list)
    generated = generate(args, [t.query for t in triplets], out) if "generated" in args.method_list else None
    if generated is not None:
        out.mkdir(parents=True, exist_ok=True)
        with (out / "rubrics.jsonl").open("w", encoding="utf-8") as f:
            for t, texts in zip(triplets, generated, strict=True):
                f.write(json.dumps({"id": t.id, "query": t.query, "rubrics": texts}, ensure_ascii=False) + "\n")
    scorer = build_scorer(args.scorer_spec, out / "scorer_cache.jsonl")
    try:
        results = evaluate(triplets, scorer, args.method_list, generated)
    finally:
        getattr(scorer, "close", lambda: None)()
    settings = {k: v for k, v in vars(args).items() if k not in ("scorer_spec", "method_list")}
    body = write_report(results, out, f"Rubric evaluation: {args.triplets}", settings)
    logger.info("\n%s", render(results, "Rubric evaluation"))
    if any(r.accuracy != r.accuracy or (r.cohens_d is not None and not math.isfinite(r.cohens_d))
           for r in results.values()):
        logger.warning("some metrics are undefined (no rows)")
    return body
