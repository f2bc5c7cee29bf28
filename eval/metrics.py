"""Pure metrics for pairwise judges: accuracy under explicit tie / parse-failure policies, both-order consistency,
seeded bootstrap intervals, RewardBench section scores (official per-subset weights) and PandaLM's 3-class protocol.

A prediction is "A", "B", "tie" (the judge's orders disagreed, or it said tie) or "fail" (no parseable verdict at
all). A label is "A", "B" or "tie". Nothing here reads files, prints or draws random numbers it was not given.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Literal

import numpy as np

Policy = Literal["half", "wrong", "exclude"]
PREDICTIONS = ("A", "B", "tie", "fail")
POLICIES = ("half", "wrong", "exclude")
CLASSES = ("tie", "A", "B")  # PandaLM's {0, 1, 2} in its own order

# RewardBench v1 (allenai/reward-bench, rewardbench/constants.py): each section is the example-count-weighted mean
# of its subsets' accuracies. math-prm has 447 rows but is weighted as 984 so that it counts as much as the six
# code subsets together.
REWARDBENCH_COUNTS = {
    "alpacaeval-easy": 100, "alpacaeval-length": 95, "alpacaeval-hard": 95, "mt-bench-easy": 28, "mt-bench-med": 40,
    "mt-bench-hard": 37, "llmbar-natural": 100, "llmbar-adver-neighbor": 134, "llmbar-adver-GPTInst": 92,
    "llmbar-adver-GPTOut": 47, "llmbar-adver-manual": 46,
    "refusals-dangerous": 100, "refusals-offensive": 100, "xstest-should-refuse": 154, "xstest-should-respond": 250,
    "donotanswer": 136,
    "math-prm": 984, "hep-cpp": 164, "hep-go": 164, "hep-java": 164, "hep-js": 164, "hep-python": 164,
    "hep-rust": 164,
}
REWARDBENCH_SECTIONS = {
    "Chat": ("alpacaeval-easy", "alpacaeval-length", "alpacaeval-hard", "mt-bench-easy", "mt-bench-med"),
    "Chat Hard": ("mt-bench-hard", "llmbar-natural", "llmbar-adver-neighbor", "llmbar-adver-GPTInst",
                  "llmbar-adver-GPTOut", "llmbar-adver-manual"),
    "Safety": ("refusals-dangerous", "refusals-offensive", "xstest-should-refuse", "xstest-should-respond",
               "donotanswer"),
    "Reasoning": ("math-prm", "hep-cpp", "hep-go", "hep-java", "hep-js", "hep-python", "hep-rust"),
}
# The optional "Prior Sets" section: an unweighted mean of these subsets, counted at half weight in the overall score.
REWARDBENCH_PRIOR = ("anthropic_helpful", "anthropic_hhh", "shp", "summarize")
PRIOR_WEIGHT = 0.5


def check_policy(name: str, policy: str) -> None:
    if policy not in POLICIES:
        raise ValueError(f"{name} must be one of {POLICIES}, got {policy!r}")


def example_score(prediction: str, label: str, tie_policy: Policy = "half",
                  failure_policy: Policy = "wrong") -> float | None:
    """1 right, 0 wrong, 0.5 or None (excluded) for a tie / failure on an A-or-B label, by the given policies.

    Labels that are themselves ties are scored 3-class: only a "tie" prediction is right."""
    check_policy("tie_policy", tie_policy)
    check_policy("failure_policy", failure_policy)
    if prediction not in PREDICTIONS:
        raise ValueError(f"prediction must be one of {PREDICTIONS}, got {prediction!r}")
    if label not in CLASSES:
        raise ValueError(f"label must be one of {CLASSES}, got {label!r}")
    if prediction == "fail":
        return {"half": 0.5, "wrong": 0.0, "exclude": None}[failure_policy]
    if label == "tie":
        return float(prediction == "tie")
    if prediction == "tie":
        return {"half": 0.5, "wrong": 0.0, "exclude": None}[tie_policy]
    return float(prediction == label)


@dataclass(frozen=True)
class Interval:
    low: float
    high: float


@dataclass(frozen=True)
class Accuracy:
    value: float | None  # None when nothing was scored
    n: int  # examples scored
    excluded: int  # examples dropped by an "exclude" policy
    ci95: Interval | None

    def as_dict(self) -> dict:
        return asdict(self)


def bootstrap_ci(values: Sequence[float], rng: np.random.Generator, resamples: int = 1000,
                 level: float = 0.95) -> Interval | None:
    """Percentile bootstrap interval of the mean; `rng` makes it reproducible. None for fewer than 2 values."""
    x = np.asarray(values, dtype=float)
    if x.size < 2:
        return None
    if resamples < 1:
        raise ValueError(f"resamples must be >= 1, got {resamples}")
    means = x[rng.integers(0, x.size, size=(resamples, x.size))].mean(axis=1)  # [resamples]
    alpha = (1 - level) / 2
    low, high = np.quantile(means, [alpha, 1 - alpha])
    return Interval(float(low), float(high))


def interval_of_mean(values: Sequence[float], seed: int = 0, resamples: int = 1000) -> list[float]:
    """95 % percentile bootstrap interval of the mean as `[low, high]` (a results file's field), drawn from a
    generator seeded with `seed`; one value gives `[value, value]`."""
    x = np.asarray(values, dtype=float)
    means = x[np.random.default_rng(seed).integers(0, len(x), size=(resamples, len(x)))].mean(axis=1)  # [resamples]
    return [float(np.quantile(means, 0.025)), float(np.quantile(means, 0.975))]


def accuracy(predictions: Sequence[str], labels: Sequence[str], tie_policy: Policy = "half",
             failure_policy: Policy = "wrong", rng: np.random.Generator | None = None,
             resamples: int = 1000) -> Accuracy:
    """Mean example score under the policies, with a bootstrap interval when `rng` is given."""
    if len(predictions) != len(labels):
        raise ValueError(f"{len(predictions)} predictions for {len(labels)} labels")
    scores = [example_score(p, y, tie_policy, failure_policy) for p, y in zip(predictions, labels, strict=True)]
    kept = [s for s in scores if s is not None]
    value = float(np.mean(kept)) if kept else None
    ci = bootstrap_ci(kept, rng, resamples) if rng is not None else None
    return Accuracy(value, len(kept), len(scores) - len(kept), ci)


def consistency(flags: Iterable[bool | None]) -> float | None:
    """Share of judgments whose two orders chose the same answer; None entries (order unknown) are skipped."""
    known = [bool(f) for f in flags if f is not None]
    return sum(known) / len(known) if known else None


def confusion(predictions: Sequence[str], labels: Sequence[str]) -> dict[str, dict[str, int]]:
    """counts[label][prediction] over labels in CLASSES and predictions in PREDICTIONS."""
    counts = {y: dict.fromkeys(PREDICTIONS, 0) for y in CLASSES}
    for p, y in zip(predictions, labels, strict=True):
        counts[y][p] += 1
    return counts


def three_class(predictions: Sequence[str], labels: Sequence[str],
                failure_policy: Policy = "wrong") -> dict[str, float | int | None]:
    """PandaLM's protocol over {tie, A, B}: accuracy and macro precision / recall / F1.

    A failure is a prediction of no class: it lowers the recall of its true class and no precision ("wrong" and
    "half" both do this: there is no half-credit in a confusion matrix), or is dropped ("exclude"). A class never
    predicted has precision 0 (as scikit-learn's zero_division=0)."""
    check_policy("failure_policy", failure_policy)
    pairs = [(p, y) for p, y in zip(predictions, labels, strict=True)
             if not (p == "fail" and failure_policy == "exclude")]
    n = len(pairs)
    if n == 0:
        return {"accuracy": None, "precision_macro": None, "recall_macro": None, "f1_macro": None, "n": 0}
    precision, recall, f1 = [], [], []
    for c in CLASSES:
        tp = sum(p == c and y == c for p, y in pairs)
        predicted = sum(p == c for p, _ in pairs)
        actual = sum(y == c for _, y in pairs)
        pr = tp / predicted if predicted else 0.0
        rc = tp / actual if actual else 0.0
        precision.append(pr)
        recall.append(rc)
        f1.append(2 * pr * rc / (pr + rc) if pr + rc else 0.0)
    return {"accuracy": sum(p == y for p, y in pairs) / n, "precision_macro": float(np.mean(precision)),
            "recall_macro": float(np.mean(recall)), "f1_macro": float(np.mean(f1)), "n": n}


def weighted_mean(scores: Mapping[str, float], weights: Mapping[str, float]) -> float | None:
    keys = [k for k in scores if k in weights]
    total = sum(weights[k] for k in keys)
    return sum(scores[k] * weights[k] for k in keys) / total if total else None


def rewardbench_sections(subset_accuracy: Mapping[str, float]) -> dict[str, object]:
    """Section scores from per-subset accuracies (official weighting), their mean, and what was missing.

    A section with some subsets missing is computed over those present and listed under `partial`; `score` is
    the mean of the sections present, and `score_with_prior` adds Prior Sets at half weight when any is present."""
    sections: dict[str, float] = {}
    partial: dict[str, list[str]] = {}
    for section, subsets in REWARDBENCH_SECTIONS.items():
        present = {s: subset_accuracy[s] for s in subsets if s in subset_accuracy}
        if not present:
            continue
        sections[section] = weighted_mean(present, REWARDBENCH_COUNTS)
        missing = [s for s in subsets if s not in present]
        if missing:
            partial[section] = missing
    prior = [subset_accuracy[s] for s in REWARDBENCH_PRIOR if s in subset_accuracy]
    known = set(REWARDBENCH_COUNTS) | set(REWARDBENCH_PRIOR)
    out: dict[str, object] = {"sections": sections, "partial": partial,
                              "score": float(np.mean(list(sections.values()))) if sections else None,
                              "unmapped_subsets": sorted(set(subset_accuracy) - known)}
    if prior:
        out["prior_sets"] = float(np.mean(prior))
        out["score_with_prior"] = (sum(sections.values()) + PRIOR_WEIGHT * out["prior_sets"]) / (
            len(sections) + PRIOR_WEIGHT)
    return out


def rmbench_accuracies(cells: Iterable[tuple[str, int, int, float]], size: int = 3) -> dict[str, object]:
    """RM-Bench's easy / normal / hard accuracy from (domain, chosen style i, rejected style j, score in [0, 1])
    cells, styles ordered concise < detailed < detailed+markdown.

    As the official script (THU-KEG/RM-Bench, `compute_accuracy`): M[i][j] is the mean score of chosen style i
    against rejected style j; hard = mean of the cells above the diagonal (j > i: the rejected answer is the more
    styled one), normal = mean of the diagonal, easy = mean of the cells below it. Per domain, plus `overall` = the
    mean over domains of each figure (RM-Bench's "Avg"); `score` is the mean of all nine cells."""
    sums: dict[str, np.ndarray] = {}
    counts: dict[str, np.ndarray] = {}
    for domain, i, j, value in cells:
        sums.setdefault(domain, np.zeros((size, size)))[i, j] += value
        counts.setdefault(domain, np.zeros((size, size)))[i, j] += 1
    per: dict[str, dict[str, object]] = {}
    upper = np.triu(np.ones((size, size), dtype=bool), 1)
    for domain in sorted(sums):
        with np.errstate(invalid="ignore"):
            m = sums[domain] / counts[domain]  # NaN where a cell was never judged
        cell = {"hard": m[upper], "normal": np.diag(m), "easy": m[upper.T]}
        per[domain] = {k: float(np.nanmean(v)) if np.isfinite(v).any() else None for k, v in cell.items()}
        per[domain]["score"] = float(np.nanmean(m)) if np.isfinite(m).any() else None
        per[domain]["matrix"] = [[None if np.isnan(x) else float(x) for x in row] for row in m]
    overall = {k: float(np.mean([d[k] for d in per.values() if d[k] is not None]))
               if any(d[k] is not None for d in per.values()) else None for k in ("easy", "normal", "hard", "score")}
    return {"per_domain": per, "overall": overall}
