"""How fast a built index answers through `load_index(...).search` (docstore lookups included): queries per second at
a batch size and thread count (`measure_queries`, run in a fresh process by bench.retrieval_sparse so its load RSS is
its own), and per-query latencies (`latencies`, bench.colbert_cpu). Imported by the scripts in bench/.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from bench.memory import rss_kb

BACKENDS = {"bm25": "n_threads", "lucene": "threads"}  # sparse backend -> its load-time search-threads parameter
WARM = 5000  # untimed queries first: HotSpot needs a few thousand searches to compile Lucene's hot path


def measure_queries(index_dir: str, backend: str, queries_file: str, batch: int) -> dict:
    """Load RSS, then queries/s at `batch` per call (1 and 2 threads) and at 1 per call; the first `WARM` queries
    of the file warm up, untimed."""
    from retrieval.retriever import load_index

    def rate(index, queries: list[str], per_call: int) -> float:
        started = time.perf_counter()
        for i in range(0, len(queries), per_call):
            index.search(queries[i:i + per_call], 10)
        return len(queries) / (time.perf_counter() - started)

    queries = json.loads(Path(queries_file).read_text())
    warm, timed = queries[:WARM], queries[WARM:]
    before = rss_kb(os.getpid())
    started = time.perf_counter()
    index = load_index(index_dir, **{BACKENDS[backend]: 1})
    out = {"load_s": time.perf_counter() - started, "load_rss_mb": rss_kb(os.getpid()) / 1024,
           "load_added_rss_mb": (rss_kb(os.getpid()) - before) / 1024}
    rate(index, warm, batch)
    out["qps_batch_t1"] = rate(index, timed, batch)
    out["qps_single"] = rate(index, timed[:1000], 1)
    index = load_index(index_dir, **{BACKENDS[backend]: 2})
    rate(index, warm[:1000], batch)
    out["qps_batch_t2"] = rate(index, timed, batch)
    out["rss_after_queries_mb"] = rss_kb(os.getpid()) / 1024
    return out


def latencies(index, queries: list[str], k: int, batch: int, repeat: int = 3) -> list[float]:
    """Per-query seconds: best of `repeat` passes over `queries` in requests of `batch`."""
    best = None
    for _ in range(repeat):
        times = []
        for i in range(0, len(queries), batch):
            chunk = queries[i:i + batch]
            start = time.perf_counter()
            index.search(chunk, k)
            times += [(time.perf_counter() - start) / len(chunk)] * len(chunk)
        best = times if best is None or sum(times) < sum(best) else best
    return best
