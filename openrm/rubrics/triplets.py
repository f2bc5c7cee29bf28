"""Preference triplets (query, preferred report, rejected report) from JSONL / JSON / parquet files or an HF
`save_to_disk` folder, with the column names a dataset happens to use.

    load_triplets("data/triplets.jsonl")                                   # columns query, preferred, rejected
    load_triplets("data/prefs", fields=TripletFields("prompt", "chosen", "rejected"))   # TRL preference columns

A cell may be a string or chat messages (the query: the last user turn; a report: the last assistant turn). A row
with a missing or empty cell is a ValueError naming the row and column.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple


class TripletFields(NamedTuple):
    query: str = "query"
    preferred: str = "preferred"
    rejected: str = "rejected"


DEFAULT_FIELDS = TripletFields()


@dataclass(frozen=True)
class Triplet:
    id: str
    query: str
    preferred: str
    rejected: str


def _text(cell: Any, role: str) -> str:
    if isinstance(cell, str):
        return cell
    if isinstance(cell, list | tuple):
        turns = [m.get("content") for m in cell if isinstance(m, Mapping) and m.get("role") == role]
        if turns and isinstance(turns[-1], str):
            return turns[-1]
    return ""


def triplet_of(row: Mapping[str, Any], n: int, fields: TripletFields = DEFAULT_FIELDS) -> Triplet:
    values = []
    for name, role in ((fields.query, "user"), (fields.preferred, "assistant"), (fields.rejected, "assistant")):
        text = _text(row.get(name), role)
        if not text.strip():
            raise ValueError(f"row {n}: column {name!r} is missing or empty")
        values.append(text)
    return Triplet(str(row.get("id", n)), *values)


def load_rows(path: str | Path, split: str = "train"):
    """An HF Dataset of triplet rows (plumbing.rows.open_rows)."""
    from plumbing.rows import open_rows

    return open_rows(path, split, what="triplets")


def load_triplets(path: str | Path, split: str = "train", limit: int = 0,
                  fields: TripletFields = DEFAULT_FIELDS) -> list[Triplet]:
    rows = load_rows(path, split)
    if limit:
        rows = rows.select(range(min(limit, len(rows))))
    return [triplet_of(row, n, fields) for n, row in enumerate(rows)]
