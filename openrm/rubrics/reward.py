"""The rubric generator's hybrid reward (Eq. 1, 3 of the query-specific rubrics paper) and its TRL reward callable.

    R = w_pref * R_pref + w_fmt * R_fmt + w_judge * R_judge
    R_pref  = 1 if S(preferred | rubric) > S(rejected | rubric) else 0      (Eq. 3, S from Eq. 2; a tie is 0)
    R_fmt   = `format_penalty` (< 0) for a rubric that does not parse, else 0
    R_judge = the LLM judge's 1-10 rubric-quality rating mapped onto [0, 1]

A leading `<think>...</think>` block is dropped before parsing. An invalid rubric gets only the format penalty
(nothing else can be scored). A component the scorer could not produce (a failed item rating or quality rating)
counts 0 and is logged as a failure (`rubric/*_failures`).

    reward = RubricGeneratorReward(scorer, HybridWeights())
    GRPOTrainer(..., reward_funcs=[reward])    # logs rubric/preference, rubric/format, rubric/judge, ...
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from openrm.reward import completion_text
from openrm.rubrics.record import Rubric, RubricError, parse_rubric, strip_thinking
from openrm.rubrics.scorer import RubricAsk, Scorer, score_reports
from openrm.rubrics.scoring import normalise_rating

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class HybridWeights:
    preference: float = 1.0  # the paper's Eq. 1 has R_pref unweighted
    format: float = 1.0  # lambda_1 = 1 (paper, Appendix D)
    judge: float = 1.0  # lambda_2 = 1 (paper, Appendix D)
    format_penalty: float = -1.0  # ours: the paper's value did not survive in our copy of the text

    def __post_init__(self) -> None:
        if min(self.preference, self.format, self.judge) < 0:
            raise ValueError(f"reward weights must be >= 0, got {self}")
        if not self.format_penalty < 0:
            raise ValueError(f"format_penalty must be negative, got {self.format_penalty}")


@dataclass(frozen=True)
class HybridBreakdown:
    total: float
    valid: bool
    preference: float  # R_pref: 1 / 0
    format: float  # R_fmt: 0 or the penalty
    judge: float  # R_judge in [0, 1]
    preference_failed: bool = False  # a rating was missing: R_pref counted 0
    judge_failed: bool = False
    error: str = ""  # why the rubric is invalid


def preference_consistency(s_preferred: float, s_rejected: float) -> float:
    """Eq. 3: 1 when the rubric scores the preferred report strictly higher, else 0."""
    return 1.0 if s_preferred > s_rejected else 0.0


def hybrid_reward(weights: HybridWeights, valid: bool, s_preferred: float | None = None,
                  s_rejected: float | None = None, quality: int | None = None, error: str = "") -> HybridBreakdown:
    """Eq. 1 for one rubric. `s_*`: Eq. 2 scores (None: a rating failed); `quality`: the judge's 1-10 rating (None:
    failed). A missing value counts 0 and, when its weight is positive, is flagged as a failure."""
    if not valid:
        return HybridBreakdown(weights.format * weights.format_penalty, False, 0.0, weights.format_penalty, 0.0,
                               error=error)
    missing = s_preferred is None or s_rejected is None
    pref = 0.0 if missing else preference_consistency(s_preferred, s_rejected)
    judge = 0.0 if quality is None else normalise_rating(quality)
    total = weights.preference * pref + weights.judge * judge
    # a component with weight 0 is not asked for, so its absence is no failure
    return HybridBreakdown(total, True, pref, 0.0, judge, weights.preference > 0 and missing,
                           weights.judge > 0 and quality is None)


class RubricGeneratorReward:
    """TRL reward: `(prompts, completions, query=[...], preferred=[...], rejected=[...]) -> [R]`. The column names
    are configurable. A component whose weight is 0 is not asked of the scorer. `log_path`: a JSONL file that gets
    one line per completion (step, query, breakdown, completion)."""

    def __init__(self, scorer: Scorer, weights: HybridWeights = HybridWeights(), query_field: str = "query",
                 preferred_field: str = "preferred", rejected_field: str = "rejected", log_path: str | None = None,
                 name: str = "rubric_hybrid"):
        self.scorer, self.weights, self.log_path = scorer, weights, log_path
        self.fields = (query_field, preferred_field, rejected_field)
        self.__name__ = name
        self.last: list[HybridBreakdown] = []

    def __call__(self, prompts: Sequence[Any], completions: Sequence[Any], **kwargs: Any) -> list[float]:
        missing = [f for f in self.fields if f not in kwargs]
        if missing:
            raise KeyError(f"the training rows lack the column(s) {missing} (have {sorted(kwargs)})")
        queries, preferred, rejected = (kwargs[f] for f in self.fields)
        texts = [completion_text(c) for c in completions]
        if not len(texts) == len(queries) == len(preferred) == len(rejected):
            raise ValueError(f"{len(texts)} completions for {len(queries)} rows")
        rubrics: list[Rubric | None] = []
        errors: list[str] = []
        for text in texts:
            try:
                rubrics.append(parse_rubric(strip_thinking(text)))
                errors.append("")
            except RubricError as exc:
                rubrics.append(None)
                errors.append(str(exc))
        valid = [i for i, r in enumerate(rubrics) if r is not None]
        scores: dict[int, tuple[float | None, float | None]] = {}
        if self.weights.preference > 0 and valid:
            asks = [(queries[i], rubrics[i], report) for i in valid for report in (preferred[i], rejected[i])]
            flat = score_reports(self.scorer, asks)
            scores = {i: (flat[2 * n].score, flat[2 * n + 1].score) for n, i in enumerate(valid)}
        quality: dict[int, int | None] = {}
        if self.weights.judge > 0 and valid:
            ratings = self.scorer.judge_rubrics([RubricAsk(queries[i], rubrics[i]) for i in valid])
            quality = {i: r.value if r.ok else None for i, r in zip(valid, ratings, strict=True)}
        out = []
        for i in range(len(texts)):
            s_pref, s_rej = scores.get(i, (None, None))
            out.append(hybrid_reward(self.weights, rubrics[i] is not None, s_pref, s_rej, quality.get(i), errors[i]))
        self.last = out
        step = int(getattr(kwargs.get("trainer_state"), "global_step", 0) or 0)
        self._log(out, rubrics, kwargs.get("log_metric"))
        if self.log_path:
            self._append(step, queries, texts, out)
        return [b.total for b in out]

    def _log(self, out: list[HybridBreakdown], rubrics: list[Rubric | None], log_metric) -> None:
        n = max(len(out), 1)
        valid = [b for b in out if b.valid]
        metrics = {
            "rubric/valid_rate": len(valid) / n,
            "rubric/format": sum(b.format for b in out) / n,
            "rubric/preference": sum(b.preference for b in valid) / max(len(valid), 1),
            "rubric/judge": sum(b.judge for b in valid) / max(len(valid), 1),
            "rubric/total": sum(b.total for b in out) / n,
            "rubric/preference_failures": sum(b.preference_failed for b in valid),
            "rubric/judge_failures": sum(b.judge_failed for b in valid),
            "rubric/items": sum(len(r.items) for r in rubrics if r is not None) / max(len(valid), 1),
        }
        if metrics["rubric/preference_failures"] or metrics["rubric/judge_failures"]:
            logger.warning("rubric reward: %d preference and %d judge components failed (counted 0)",
                           metrics["rubric/preference_failures"], metrics["rubric/judge_failures"])
        if log_metric is not None:
            for name, value in metrics.items():
                log_metric(name, float(value))

    def _append(self, step: int, queries, texts, out: list[HybridBreakdown]) -> None:
        path = Path(self.log_path)
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("a", encoding="utf-8") as f:
            for q, t, b in zip(queries, texts, out, strict=True):
                record = {"step": step, "query": q, **asdict(b), "completion": t}
                f.write(json.dumps(record, ensure_ascii=False) + "\n")
