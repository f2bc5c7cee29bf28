"""Precomputed verdicts → predictions ("A" | "B" | "tie" | "fail") by example id, so published prediction files can
be scored with our metrics. Presets cover the PandaLM repository's files and our own `verdicts.jsonl`.

    fmt = PREDICTION_PRESETS["pandalm"]
    preds = read_predictions("pandalm-7b-testset-v1.json", fmt)   # {"0": "A", "1": "tie", ...}
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from eval.loaders import Skip
from plumbing.rows import BadRow, read_rows

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class PredictionFormat:
    """Which field holds the example id, which fields may hold the verdict (the first present in a row is used) and
    how each field's values read. A value missing from its field's encoding is a failure (the judge gave no usable
    verdict), never a guess — unless `otherwise` names, for that field, what a published protocol counts it as."""

    id_field: str
    verdicts: Mapping[str, Mapping[str, str]]  # verdict field → {value as text, stripped: A | B | tie}
    lowercase: bool = False  # compare values case-insensitively
    otherwise: Mapping[str, str] = field(default_factory=dict)  # verdict field → A | B | tie for any other value

    def __post_init__(self):
        if not self.verdicts:
            raise ValueError("name at least one verdict field")
        bad = sorted({v for enc in (*self.verdicts.values(), self.otherwise) for v in enc.values()}
                     - {"A", "B", "tie"})
        if bad:
            raise ValueError(f"a verdict encoding maps values to A, B or tie; got {bad}")
        unknown = sorted(set(self.otherwise) - set(self.verdicts))
        if unknown:
            raise ValueError(f"`otherwise` names fields that are not verdict fields: {unknown}")

    def decode(self, verdict_field: str, value: object) -> tuple[str, str]:
        """(prediction, the rule that produced it), e.g. ("tie", "gpt_result: any other value → tie")."""
        text = str(value).strip()
        table = self.verdicts[verdict_field]
        if self.lowercase:
            table, text = {k.lower(): v for k, v in table.items()}, text.lower()
        if text in table:
            return table[text], f"{verdict_field}: {text!r} → {table[text]}"
        fallback = self.otherwise.get(verdict_field, "fail")
        return fallback, f"{verdict_field}: any other value → {fallback}"


PREDICTION_PRESETS = {
    # PandaLM repo prediction files. Its own model writes pandalm_result "0" (tie) / "1" / "2"; anything else is a
    # failure. The GPT baselines write gpt_result "1" / "2" / "Tie" and sometimes other text ("garbage": 25 of 999
    # rows for GPT-3.5): PandaLM's data/compute_metrics.py counts that as a tie, and the paper's GPT-3.5 accuracy and
    # precision (71.07 / 58.79) come out only so, so it does here; the report counts the rows each rule decided.
    # Recall / F1 then come out 57.36 / 57.55 as PandaLM's script prints, not the paper's 57.49 / 57.27
    # (tests/eval/test_eval_pandalm_published.py).
    "pandalm": PredictionFormat("idx", {"pandalm_result": {"0": "tie", "1": "A", "2": "B"},
                                        "gpt_result": {"1": "A", "2": "B", "Tie": "tie"}},
                                otherwise={"gpt_result": "tie"}),
    "openrm": PredictionFormat("id", {"prediction": {"A": "A", "B": "B", "tie": "tie"}}),
}


@dataclass
class Predictions:
    by_id: dict[str, str]
    skipped: list[Skip] = field(default_factory=list)
    failures: int = 0  # rows whose verdict value was not in the encoding and had no `otherwise`
    rules: Counter = field(default_factory=Counter)  # decoding rule → rows it decided


def read_predictions(path: str | Path, fmt: PredictionFormat, split: str | None = None) -> Predictions:
    """Predictions by id. Rows without an id or a verdict field, and repeated ids, are skipped and recorded."""
    out = Predictions({})
    for where, row in read_rows(path, split):
        try:
            if isinstance(row, BadRow):
                raise row
            if not isinstance(row, Mapping):
                raise BadRow(f"a row must be an object, got {type(row).__name__}")
            if row.get(fmt.id_field) is None:
                raise BadRow(f"missing id field {fmt.id_field!r}")
            rid = str(row[fmt.id_field])
            present = [f for f in fmt.verdicts if f in row]
            if not present:
                raise BadRow(f"none of the verdict fields {list(fmt.verdicts)}")
            if rid in out.by_id:
                raise BadRow(f"duplicate id {rid!r}")
        except BadRow as exc:
            out.skipped.append(Skip(where, str(exc)))
            continue
        prediction, rule = fmt.decode(present[0], row[present[0]])
        out.rules[rule] += 1
        out.failures += prediction == "fail"
        out.by_id[rid] = prediction
    if not out.by_id:
        raise ValueError(f"{path}: no usable predictions; skipped {len(out.skipped)} rows "
                         f"(first: {out.skipped[0].reason if out.skipped else 'the file is empty'})")
    if out.skipped:
        logger.warning("%s: skipped %d prediction rows", path, len(out.skipped))
    return out


class PredictionJudge:
    """A predictions file as a pairwise match judge for two-candidate rows: the prediction for a row's id says
    whether its first candidate (a binarized row's `chosen`) wins ("A"), loses ("B") or ties; "fail" and ids the
    file lacks are failures. `rows`: (id, question, first, second). Answers both orders of a pair, so `orders = 2`.
    `calls` counts the pairs looked up."""

    orders = 2
    P = {"A": 1.0, "B": 0.0, "tie": 0.5}

    def __init__(self, by_id: Mapping[str, str], rows: list[tuple[str, str, str, str]]):
        repeated = [i for i, n in Counter(r[0] for r in rows).items() if n > 1]
        if repeated:
            raise ValueError(f"a predictions file is keyed by id, and ids repeat in the data (first: {repeated[0]!r})")
        self.missing = [r[0] for r in rows if r[0] not in by_id]
        self.p: dict[tuple[str, str, str], float | None] = {}
        for rid, question, first, second in rows:
            p = self.P.get(by_id.get(rid, "fail"))
            views = [((question, first, second), p)]
            if first != second:  # the same text twice has one view
                views.append(((question, second, first), None if p is None else 1 - p))
            for key, value in views:
                if key in self.p and self.p[key] != value:
                    raise ValueError(f"row {rid!r}: the same question and answers have another prediction elsewhere")
                self.p[key] = value
        self.calls = 0

    def compare_many(self, items: list[tuple[str, str, str]]) -> list[float | None]:
        self.calls += len(items)
        unknown = [i for i in items if tuple(i) not in self.p]
        if unknown:
            raise ValueError(f"a predictions file judges the pairs it was built for, not {unknown[0]!r:.120}")
        return [self.p[tuple(i)] for i in items]
