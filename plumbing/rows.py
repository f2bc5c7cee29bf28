"""One reader for every row file the project takes (judge examples, prompt rows, preference pairs, triplets,
benchmark files, predictions): an HF `save_to_disk` folder, a .jsonl file, a .json list (or an object holding one
list) or a .parquet file, with one split rule.

    ds = open_rows("runs/data/dataset", split="train")      # a datasets.Dataset; a bad row is an error with its line
    for where, row in read_rows("bench.jsonl"):             # tolerant: an unreadable line comes as a BadRow
        ...

The split rule: a folder with splits gives `split` (an error names the splits it has), or its only split when none
is asked for; a folder of several splits and no `split` is an error. A file has no splits: `split` is ignored.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any


class BadRow(ValueError):
    """A row that cannot become a judge example; the loader records it and goes on."""


def _saved(path: Path, split: str | None, what: str = "rows"):
    """The `save_to_disk` folder at `path` as one Dataset, by the module's split rule."""
    from datasets import DatasetDict, load_from_disk

    ds = load_from_disk(str(path))
    if isinstance(ds, DatasetDict):
        if split is None and len(ds) == 1:
            split = next(iter(ds))
        if split not in ds:
            raise ValueError(f"{path}: no split {split!r} of {what}; it has {sorted(ds)} (pick a split with --split)")
        ds = ds[split]
    return ds


def read_rows(path: str | Path, split: str | None = None) -> Iterator[tuple[str, Any]]:
    """(where, row) for every row of an HF dataset folder, a .json list, a .jsonl or a .parquet file.

    Unreadable JSONL lines come out as (where, BadRow) so the caller can count them."""
    path = Path(path)
    if path.is_dir():
        for i, row in enumerate(_saved(path, split)):
            yield f"{path}[{i}]", row
        return
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such file or dataset folder")
    suffix = path.suffix.lower()
    if suffix == ".parquet":
        import pyarrow.parquet as pq

        for i, row in enumerate(pq.read_table(path).to_pylist()):
            yield f"{path}[{i}]", row
        return
    text = path.read_text(encoding="utf-8")
    if suffix == ".json":
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            if exc.msg != "Extra data":  # anything but "JSON lines saved as .json" is a broken file
                raise ValueError(f"{path}: not valid JSON ({exc.msg} at line {exc.lineno})") from None
        else:
            if isinstance(data, dict):  # {"rows": [...]} or {"data": [...]}: the single list inside
                lists = [v for v in data.values() if isinstance(v, list)]
                if len(lists) != 1:
                    raise ValueError(f"{path}: expected a JSON list of rows (or an object holding one list)")
                data = lists[0]
            if not isinstance(data, list):
                raise ValueError(f"{path}: expected a JSON list of rows, got {type(data).__name__}")
            for i, row in enumerate(data):
                yield f"{path}[{i}]", row
            return
    for n, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            yield f"{path}:{n}", json.loads(line)
        except json.JSONDecodeError as exc:
            yield f"{path}:{n}", BadRow(f"not JSON ({exc.msg})")


def open_rows(path: str | Path, split: str | None = None, what: str = "rows"):
    """The rows at `path` as a `datasets.Dataset`, strictly: a line that is not JSON, or a row that is not an object,
    is a ValueError naming its place. `what` names the rows in errors (e.g. "preference pairs")."""
    from datasets import Dataset

    path = Path(path)
    if path.is_dir():
        return _saved(path, split, what)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such file or dataset folder of {what}")
    if path.suffix.lower() not in (".jsonl", ".json", ".parquet"):
        raise ValueError(f"{path}: expected a dataset folder or a .jsonl/.json/.parquet file of {what}")
    rows: list[dict[str, Any]] = []
    for where, row in read_rows(path):
        if isinstance(row, BadRow):
            raise ValueError(f"{where}: {row}")
        if not isinstance(row, dict):
            raise ValueError(f"{where}: each of the {what} must be a JSON object, got {type(row).__name__}")
        rows.append(row)
    keys = list(dict.fromkeys(k for row in rows for k in row))  # every column, even one the first row lacks
    return Dataset.from_list([{k: row.get(k) for k in keys} for row in rows])
