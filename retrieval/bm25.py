"""BM25 over bm25s: the embedded default backend (pure Python + numpy/numba, no Java, no GPU).

Built by `python -m retrieval.build_index --backend bm25`; documents are title + text, lower-cased, English
stop words removed and Snowball-stemmed (PyStemmer), scored with Lucene's BM25 variant (k1 0.9, b 0.4: the
pyserini defaults, so bm25 and lucene indexes are comparable). The sparse score matrix is memory-mapped at load
and searched by a numba top-k whose cost follows the query's posting lists, not the corpus size.
"""

from __future__ import annotations

import functools
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

import numpy as np
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


def _top_k_postings(terms, starts, data, indices, indptr, k, acc, touched):
    """Best `k` rows per query (ties: lower row first) from the score matrix's CSC arrays; compiled by numba.

    A query's cost is the length of its terms' posting lists, not the corpus size: its terms' columns are added
    into `acc` (zeros, one slot per passage), only the rows they touched are ranked, and those are reset, so
    `acc` is all zeros again on return. bm25s instead zeroes and scans an array of every passage per query.
    """
    n_queries = len(starts) - 1
    rows = np.zeros((n_queries, k), np.int32)  # [Q, k]
    scores = np.zeros((n_queries, k), np.float32)  # [Q, k]; 0 = no hit
    heap_scores = np.empty(k, np.float32)  # min-heap of the best k so far: worst at 0
    heap_rows = np.empty(k, np.int32)
    for q in range(n_queries):
        n_touched = 0
        for t in terms[starts[q]:starts[q + 1]]:
            for j in range(indptr[t], indptr[t + 1]):
                row = indices[j]
                if acc[row] == 0.0 and n_touched < len(touched):  # lucene's term scores are > 0: 0 is untouched
                    touched[n_touched] = row
                    n_touched += 1
                acc[row] += data[j]
        n = 0
        for i in range(n_touched):
            row = touched[i]
            score = acc[row]
            acc[row] = 0.0
            if n < k:  # push, sift up
                pos = n
                n += 1
                while pos > 0:
                    parent = (pos - 1) >> 1
                    if heap_scores[parent] < score or (heap_scores[parent] == score and heap_rows[parent] > row):
                        break
                    heap_scores[pos], heap_rows[pos] = heap_scores[parent], heap_rows[parent]
                    pos = parent
                heap_scores[pos], heap_rows[pos] = score, row
            elif score > heap_scores[0] or (score == heap_scores[0] and row < heap_rows[0]):  # replace worst
                pos = 0
                while True:
                    child = 2 * pos + 1
                    if child >= n:
                        break
                    if child + 1 < n and (heap_scores[child + 1] < heap_scores[child] or (
                            heap_scores[child + 1] == heap_scores[child] and heap_rows[child + 1] > heap_rows[child])):
                        child += 1
                    if score < heap_scores[child] or (score == heap_scores[child] and row > heap_rows[child]):
                        break
                    heap_scores[pos], heap_rows[pos] = heap_scores[child], heap_rows[child]
                    pos = child
                heap_scores[pos], heap_rows[pos] = score, row
        by_row = np.argsort(heap_rows[:n])
        order = by_row[np.argsort(-heap_scores[:n][by_row], kind="mergesort")]  # score down, then row up
        rows[q, :n] = heap_rows[:n][order]
        scores[q, :n] = heap_scores[:n][order]
    return rows, scores


@functools.cache
def _top_k_kernel():
    from numba import njit

    return njit(nogil=True, cache=True)(_top_k_postings)


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
        # With numba and the lucene variant, queries are scored by `_top_k_postings`, which needs every term score
        # > 0 (robertson's and atire's idf can be <= 0, bm25l / bm25+ score absent terms: they keep bm25s's
        # retrieve). It releases the GIL, so a batch is split over our own threads (bm25s's n_threads > 1 kernel
        # runs on one core in 0.3.16: its prange loop is not parallelised).
        self._own_kernel = params.numba and params.method == "lucene"
        self._scratch = threading.local()  # per thread: the kernel's accumulator and touched rows (8 B/passage)
        self._threads = params.n_threads or os.cpu_count() or 1
        self._pool = (ThreadPoolExecutor(self._threads, thread_name_prefix="bm25")
                      if params.numba and self._threads > 1 else None)
        if params.numba:  # numba compiles on first use (seconds; then cached on disk): pay it here, not in a request
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
                # Both kernels pad with zero-score rows when fewer than k passages share a term: not hits.
                out.append([(r, s) for r, s in zip(row_ids, row_scores, strict=True) if s > 0])
        return out

    def _retrieve(self, ids: list[list[int]], k: int) -> tuple[np.ndarray, np.ndarray]:
        if self._own_kernel:
            if not hasattr(self._scratch, "acc"):
                self._scratch.acc = np.zeros(self.n_docs, np.float32)
                self._scratch.touched = np.empty(self.n_docs, np.int32)
            scores = self.model.scores
            starts = np.cumsum([0] + [len(q) for q in ids], dtype=np.int64)
            terms = np.fromiter((t for q in ids for t in q), np.int64, count=int(starts[-1]))
            return _top_k_kernel()(terms, starts, scores["data"], scores["indices"], scores["indptr"], k,
                                   self._scratch.acc, self._scratch.touched)
        # Plain id lists, not a `Tokenized`: bm25s turns the latter back into strings through an inverse
        # vocabulary it rebuilds on every call (≈27 ms at 100k passages, more at wiki scale). With numba,
        # n_threads=1 is bm25s's serial, thread-safe path; the numpy backend spreads a batch over threads itself.
        return self.model.retrieve(ids, k=k, show_progress=False,
                                   n_threads=1 if self.params.numba else self.params.n_threads)


def load(index_dir: Path, params: Params) -> BM25Searcher:
    return BM25Searcher(index_dir, params)
