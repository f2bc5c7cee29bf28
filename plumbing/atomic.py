"""Whole files or none: a file is written beside its target under a temporary name and renamed over it, so a reader
(or a resumed run) never meets half a file, and a run killed mid-write leaves the old file as it was."""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any


@contextmanager
def replacing(path: str | os.PathLike) -> Iterator[Path]:
    """Yields a temporary path in `path`'s folder (same suffix, so writers that add one, like `numpy.save`, keep the
    name); when the block ends without an error it replaces `path`, otherwise it is removed. The folder is made."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp{path.suffix}")
    try:
        yield tmp
        tmp.replace(path)
    finally:
        tmp.unlink(missing_ok=True)


def write_text(path: str | os.PathLike, text: str) -> Path:
    """`text` as `path` (UTF-8), atomically."""
    with replacing(path) as tmp:
        tmp.write_text(text, encoding="utf-8")
    return Path(path)


def write_json(path: str | os.PathLike, value: Any, indent: int | None = 2, **dumps: Any) -> Path:
    """`value` as one JSON document ending in a newline, atomically."""
    return write_text(path, json.dumps(value, indent=indent, **dumps) + "\n")


def write_jsonl(path: str | os.PathLike, rows: Iterable[Any]) -> Path:
    """One JSON record a line (non-ASCII kept), atomically."""
    return write_text(path, "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
