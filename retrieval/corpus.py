"""Streaming corpus readers: DPR tsv (`id\\ttext\\ttitle`, header optional) and JSONL.

Readers yield one `CorpusPassage` at a time, so a 21M-passage Wikipedia never sits in memory as Python
objects. A malformed line is an error naming file and line, or, with `skip_bad_lines`, skipped and counted.

JSONL fields: `id`, `title` (optional), and the body in `contents`, `text` or `abstract`. Search-R1's
wiki-18 JSONL has no `title` and a `contents` of `"Title"\\nbody`; that title is split off.
"""

from __future__ import annotations

import csv
import json
import re
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

# Some DPR passages are long; the csv module's default field limit (128 KiB) is not a corpus property.
csv.field_size_limit(min(sys.maxsize, 2**31 - 1))
# Files are decoded with surrogateescape so one bad byte is one bad line (named or skipped), not a dead read.
_UNDECODABLE = re.compile("[\udc80-\udcff]")


class CorpusPassage(NamedTuple):
    id: str
    title: str
    text: str


class CorpusError(ValueError):
    """A corpus line that cannot be read; the message names file and line."""


@dataclass
class ReadStats:
    n_read: int = 0
    n_skipped: int = 0
    skipped: list[str] = field(default_factory=list)  # first reasons, for the report

    def skip(self, reason: str) -> None:
        self.n_skipped += 1
        if len(self.skipped) < 20:
            self.skipped.append(reason)


def corpus_format(path: Path) -> str:
    suffixes = "".join(path.suffixes[-2:]).lower()
    if suffixes.endswith((".tsv", ".tsv.gz")):
        return "tsv"
    if suffixes.endswith((".jsonl", ".jsonl.gz", ".json")):
        return "jsonl"
    raise CorpusError(f"{path}: unknown corpus format; expected .tsv (DPR) or .jsonl")


def _open_text(path: Path):
    if path.suffix == ".gz":
        import gzip

        return gzip.open(path, "rt", encoding="utf-8", errors="surrogateescape", newline="")
    return path.open("r", encoding="utf-8", errors="surrogateescape", newline="")


def _tsv(path: Path, stats: ReadStats, skip_bad_lines: bool) -> Iterator[CorpusPassage]:
    with _open_text(path) as f:
        reader = csv.reader(f, delimiter="\t", quoting=csv.QUOTE_MINIMAL)
        for row in reader:
            line = reader.line_num
            if line == 1 and [c.strip().lower() for c in row] == ["id", "text", "title"]:
                continue
            problem = None
            if any(_UNDECODABLE.search(cell) for cell in row):
                problem = "not valid UTF-8"
            elif len(row) != 3:
                problem = f"expected 3 tab-separated fields (id, text, title), got {len(row)}"
            elif not row[0].strip():
                problem = "empty id"
            elif not row[1].strip():
                problem = "empty text"
            if problem:
                message = f"{path}:{line}: {problem}"
                if not skip_bad_lines:
                    raise CorpusError(message + " (use --skip-bad-lines to skip and count such lines)")
                stats.skip(message)
                continue
            stats.n_read += 1
            yield CorpusPassage(row[0].strip(), row[2].strip(), row[1].strip())


def _jsonl_passage(record: object) -> CorpusPassage:
    if not isinstance(record, dict):
        raise ValueError(f"expected a JSON object, got {type(record).__name__}")
    if "id" not in record or record["id"] in (None, ""):
        raise ValueError("missing 'id'")
    body = next((record[k] for k in ("contents", "text", "abstract") if record.get(k)), None)
    if not isinstance(body, str) or not body.strip():
        raise ValueError("no non-empty 'contents', 'text' or 'abstract'")
    title = record.get("title")
    if title is None and "\n" in body:  # Search-R1 style: contents = '"Title"\nbody'
        title, body = body.split("\n", 1)
        title = title.strip().strip('"')
    if title is not None and not isinstance(title, str):
        raise ValueError(f"'title' must be a string, got {type(title).__name__}")
    return CorpusPassage(str(record["id"]).strip(), (title or "").strip(), body.strip())


def _jsonl(path: Path, stats: ReadStats, skip_bad_lines: bool) -> Iterator[CorpusPassage]:
    with _open_text(path) as f:
        for line_no, line in enumerate(f, start=1):
            if not line.strip():
                continue
            try:
                if _UNDECODABLE.search(line):
                    raise ValueError("not valid UTF-8")
                passage = _jsonl_passage(json.loads(line))
            except ValueError as exc:  # json.JSONDecodeError is a ValueError
                message = f"{path}:{line_no}: {exc}"
                if not skip_bad_lines:
                    raise CorpusError(message + " (use --skip-bad-lines to skip and count such lines)") from None
                stats.skip(message)
                continue
            stats.n_read += 1
            yield passage


def read_corpus(path: str | Path, stats: ReadStats | None = None, skip_bad_lines: bool = False):
    """Stream passages from a DPR tsv or JSONL file (optionally .gz); fills `stats` as it goes."""
    path = Path(path)
    if not path.is_file():
        raise CorpusError(f"{path}: no such corpus file")
    stats = stats if stats is not None else ReadStats()
    reader = _tsv if corpus_format(path) == "tsv" else _jsonl
    yield from reader(path, stats, skip_bad_lines)
