"""Precomputed verdicts → predictions ("A" | "B" | "tie" | "fail") by example id, so published prediction files can
be scored with our metrics. Presets cover the PandaLM repository's files and our own `verdicts.jsonl`.

    fmt = PREDICTION_PRESETS["pandalm"]
    preds = read_predictions("pandalm-7b-testset-v1.json", fmt)   # {"0": "A", "1": "tie", ...}
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from eval.loaders import BadRow, Skip, read_rows

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class PredictionFormat:
    """Which field holds the example id, which fields may hold the verdict (the first present in a row is used) and
    how each field's values read. A value missing from its field's encoding is a failure (the judge gave no usable
    verdict), never a guess."""

    id_field: str
    verdicts: Mapping[str, Mapping[str, str]]  # verdict field → {value as text, stripped: A | B | tie}
    lowercase: bool = False  # compare values case-insensitively

    def __post_init__(self):
        if not self.verdicts:
            raise ValueError("name at least one verdict field")
        bad = sorted({v for enc in self.verdicts.values() for v in enc.values()} - {"A", "B", "tie"})
        if bad:
            raise ValueError(f"a verdict encoding maps values to A, B or tie; got {bad}")

    def decode(self, verdict_field: str, value: object) -> str:
        text = str(value).strip()
        table = self.verdicts[verdict_field]
        if self.lowercase:
            table, text = {k.lower(): v for k, v in table.items()}, text.lower()
        return table.get(text, "fail")


PREDICTION_PRESETS = {
    # PandaLM repo prediction files: its own model writes pandalm_result "0" (tie) / "1" / "2"; the GPT baselines
    # write gpt_result "1" / "2" / "Tie", and anything else there is a failed parse.
    "pandalm": PredictionFormat("idx", {"pandalm_result": {"0": "tie", "1": "A", "2": "B"},
                                        "gpt_result": {"1": "A", "2": "B", "Tie": "tie"}}),
    "openrm": PredictionFormat("id", {"prediction": {"A": "A", "B": "B", "tie": "tie"}}),
}


@dataclass
class Predictions:
    by_id: dict[str, str]
    skipped: list[Skip] = field(default_factory=list)
    failures: int = 0  # rows whose verdict value was not in the encoding


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
        prediction = fmt.decode(present[0], row[present[0]])
        out.failures += prediction == "fail"
        out.by_id[rid] = prediction
    if not out.by_id:
        raise ValueError(f"{path}: no usable predictions; skipped {len(out.skipped)} rows "
                         f"(first: {out.skipped[0].reason if out.skipped else 'the file is empty'})")
    if out.skipped:
        logger.warning("%s: skipped %d prediction rows", path, len(out.skipped))
    return out
