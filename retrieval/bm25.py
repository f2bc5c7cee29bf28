"""BM25 over bm25s: the embedded default backend (pure Python + numpy/numba, no Java, no GPU).

Built by `python -m retrieval.build_index --backend bm25`; documents are title + text, lower-cased, English
stop words removed and Snowball-stemmed (PyStemmer), scored with Lucene's BM25 variant (k1 0.9, b 0.4: the
pyserini defaults, so bm25 and lucene indexes are comparable). The sparse score matrix is memory-mapped at load.
"""

from __future__ import annotations

import json
import logging
import math
import os
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from tqdm.auto import tqdm

from retrieval.docstore import DocStore
from retrieval.manifest import BackendParams

logger = logging.getLogger(__name__)

LIBRARIES = ("bm25s", "PyStemmer", "numba", "numpy")
TOKENIZER_FILE = "tokenizer.json"


@dataclass
class Params(BackendParams):
    k1: float = 0.9
    b: float = 0.4
    method: str = "lucene"  # bm25s scoring variant: robertson | atire | bm25l | bm25+ | lucene
    stemmer: str = "english"  # a Snowball language, or "none"
    stopwords: str = "en"  # bm25s stop-word list name, or "none"
    numba: bool = True  # numba-compiled top-k selection (≈4x faster queries than numpy)
    mmap: bool = True  # memory-map the score matrix instead of reading it into RAM
    n_threads: int = 1  # threads per batched query call (0 = all cores)

    LOAD_TIME: ClassVar[frozenset[str]] = frozenset({"numba", "mmap", "n_threads"})

    def __post_init__(self):
        if self.method not in ("robertson", "atire", "bm25l", "bm25+", "lucene"):
            raise ValueError(f"unknown bm25 method {self.method!r}")
        if self.k1 <= 0 or not 0 <= self.b <= 1:
            raise ValueError(f"bm25 needs k1 > 0 and 0 <= b <= 1, got k1={self.k1}, b={self.b}")


def _tokenizer(params: Params):
    from bm25s.tokenization import Tokenizer

    stemmer = None
    if params.stemmer != "none":
        import Stemmer

        stemmer = Stemmer.Stemmer(params.stemmer).stemWord
    return Tokenizer(lower=True, stopwords=None if params.stopwords == "none" else params.stopwords,
                     stemmer=stemmer)


def build(docstore: DocStore, out_dir: Path, params: Params, progress: bool = True) -> dict:
    import bm25s
    from bm25s.tokenization import Tokenized

    tokenizer = _tokenizer(params)
    stream = tqdm(docstore.iter_contents(), total=len(docstore), desc="bm25: tokenize", unit="psg",
                  disable=not progress, mininterval=1.0)
    ids = list(tokenizer.streaming_tokenize(stream))
    vocab = tokenizer.get_vocab_dict()
    model = bm25s.BM25(k1=params.k1, b=params.b, method=params.method)
    logger.info("bm25: scoring %d passages over %d terms", len(ids), len(vocab))
    model.index(Tokenized(ids=ids, vocab=vocab), show_progress=progress)
    del ids
    out_dir.mkdir(parents=True, exist_ok=True)
    model.save(out_dir, show_progress=False)
    (out_dir / TOKENIZER_FILE).write_text(json.dumps({
        "word_to_stem": tokenizer.word_to_stem, "stem_to_sid": tokenizer.stem_to_sid,
        "word_to_id": tokenizer.word_to_id}, ensure_ascii=False), encoding="utf-8")
    return {"vocabulary_size": len(vocab)}


class BM25Searcher:
    def __init__(self, index_dir: Path, params: Params):
        import bm25s

        self.params = params
        self.model = bm25s.BM25.load(index_dir, mmap=params.mmap, show_progress=False,
                                     backend="numba" if params.numba else "numpy")
        self.tokenizer = _tokenizer(params)
        saved = json.loads((index_dir / TOKENIZER_FILE).read_text(encoding="utf-8"))
        self.tokenizer.word_to_stem, self.tokenizer.stem_to_sid = saved["word_to_stem"], saved["stem_to_sid"]
        self.tokenizer.word_to_id = saved["word_to_id"]
        self.n_docs = int(self.model.scores["num_docs"])
        # The tokenizer memoises unseen query words, so concurrent callers take turns at it (not at the scoring).
        self._lock = threading.Lock()
        # bm25s's numba kernel for n_threads > 1 runs on one core (its prange loop is not parallelised, bm25s
        # 0.3.16), but its serial kernel releases the GIL: numba batches are split over our own threads instead.
        self._threads = params.n_threads or os.cpu_count() or 1
        self._pool = (ThreadPoolExecutor(self._threads, thread_name_prefix="bm25")
                      if params.numba and self._threads > 1 else None)
        if params.numba:  # numba compiles on first use (≈7 s, not cached by bm25s): pay it here, not in a request
            self.search_rows(["warm up"], 1)

    def search_rows(self, queries: Sequence[str], topk: int) -> list[list[tuple[int, float]]]:
        k = min(topk, self.n_docs)
        with self._lock:
            ids = self.tokenizer.tokenize(list(queries), update_vocab=False, return_as="ids", show_progress=False)
        if self._pool is None or len(ids) < 2 * self._threads:
            parts = [self._retrieve(ids, k)]
        else:
            size = math.ceil(len(ids) / self._threads)
            parts = list(self._pool.map(self._retrieve, [ids[i:i + size] for i in range(0, len(ids), size)],
                                        [k] * self._threads))
        out = []
        for rows, scores in parts:
            for row_ids, row_scores in zip(rows.tolist(), scores.tolist(), strict=True):
                # bm25s pads with zero-score rows when fewer than k passages share a term; those are not hits.
                out.append([(r, s) for r, s in zip(row_ids, row_scores, strict=True) if s > 0])
        return out

    def _retrieve(self, ids: list[list[int]], k: int):
        # Plain id lists, not a `Tokenized`: bm25s turns the latter back into strings through an inverse
        # vocabulary it rebuilds on every call (≈27 ms at 100k passages, more at wiki scale). With numba,
        # n_threads=1 is bm25s's serial, thread-safe path; the numpy backend spreads a batch over threads itself.
        return self.model.retrieve(ids, k=k, show_progress=False,
                                   n_threads=1 if self.params.numba else self.params.n_threads)


def load(index_dir: Path, params: Params) -> BM25Searcher:
    return BM25Searcher(index_dir, params)
