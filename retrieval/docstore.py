"""Passage storage shared by all backends: one JSON line per passage plus a memory-mapped offset array.

Backends index row numbers 0..N-1 and never store text themselves, so a 21M-passage corpus is kept once on
disk and looked up by seek, not held in RAM. Written by `retrieval.build_index`, read by `retrieval.retriever`.
"""

from __future__ import annotations

import json
import mmap
from array import array
from collections.abc import Iterator
from pathlib import Path

import numpy as np

DATA, OFFSETS = "passages.jsonl", "offsets.npy"


class DocStoreWriter:
    def __init__(self, directory: Path):
        directory.mkdir(parents=True, exist_ok=True)
        self.directory = directory
        self._f = (directory / DATA).open("wb")
        self._offsets = array("q")
        self._pos = 0

    def add(self, id: str, title: str, text: str) -> int:
        line = json.dumps([id, title, text], ensure_ascii=False).encode("utf-8") + b"\n"
        self._offsets.append(self._pos)
        self._f.write(line)
        self._pos += len(line)
        return len(self._offsets) - 1

    def close(self) -> int:
        self._offsets.append(self._pos)  # end sentinel: row i spans offsets[i]:offsets[i+1]
        self._f.close()
        np.save(self.directory / OFFSETS, np.frombuffer(self._offsets, dtype=np.int64))
        return len(self._offsets) - 1


class DocStore:
    """Read-only rows: `store[i] -> (id, title, text)`; `contents(i)` is the text backends index."""

    def __init__(self, directory: Path):
        self.directory = directory
        data, offsets = directory / DATA, directory / OFFSETS
        if not data.is_file() or not offsets.is_file():
            raise FileNotFoundError(f"{directory}: no docstore ({DATA} + {OFFSETS}); was the index build finished?")
        self._offsets = np.load(offsets, mmap_mode="r")
        self._file = data.open("rb")
        size = data.stat().st_size
        if len(self._offsets) < 1 or int(self._offsets[-1]) != size:
            raise ValueError(f"{directory}: docstore offsets do not match {DATA} ({size} bytes); rebuild the index")
        self._mm = mmap.mmap(self._file.fileno(), 0, access=mmap.ACCESS_READ) if size else b""

    def __len__(self) -> int:
        return len(self._offsets) - 1

    def __getitem__(self, row: int) -> tuple[str, str, str]:
        if not 0 <= row < len(self):
            raise IndexError(f"docstore row {row} out of range 0..{len(self) - 1}")
        start, end = int(self._offsets[row]), int(self._offsets[row + 1])
        id_, title, text = json.loads(self._mm[start:end])
        return id_, title, text

    def contents(self, row: int) -> str:
        _, title, text = self[row]
        return f"{title}\n{text}" if title else text

    def iter_contents(self, start: int = 0, stop: int | None = None) -> Iterator[str]:
        for row in range(start, len(self) if stop is None else stop):
            yield self.contents(row)

    def iter_batches(self, batch_size: int) -> Iterator[list[str]]:
        for start in range(0, len(self), batch_size):
            yield list(self.iter_contents(start, min(start + batch_size, len(self))))
