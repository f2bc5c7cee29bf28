"""Retrieval server overhead: HTTP QPS with many concurrent clients ÷ in-process batched QPS, same bm25 index.

    .venv/bin/python -m bench.retrieval_server --passages 100000 --queries 4096 --clients 64

The server runs as its own process (`python -m retrieval.server`), as in training. The load comes from `wrk`
(`apt-get install wrk`) when it is on PATH — a C client, so the measurement is of the server — else from asyncio
httpx, which itself tops out near 150 requests/s at 64 connections and then measures the client. Each request
carries 1 query (a lone rollout) or 16 (a ToolBox sending a batch's pending calls together). Cache off for the
ratio (distinct queries); then a GRPO-like run where every query is asked 5 times with the cache on.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import re
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]

def synthetic_corpus(path: Path, n: int, seed: int = 0, vocab: int = 200_000, words: int = 100) -> Path:
    """DPR-like tsv: `n` passages of `words` Zipf-distributed synthetic words, deterministic in `seed`."""
    import numpy as np

    if path.exists():
        return path
    rng = np.random.default_rng(seed)
    lexicon = np.array([f"w{i:x}" for i in range(vocab)])
    tmp = path.with_suffix(".partial")
    with tmp.open("w", encoding="utf-8") as f:
        f.write("id\ttext\ttitle\n")
        for start in range(0, n, 10_000):
            m = min(10_000, n - start)
            ranks = np.minimum(rng.zipf(1.1, size=(m, words)), vocab) - 1
            for i, row in enumerate(lexicon[ranks]):
                f.write(f"{start + i}\t{' '.join(row)}\tT{start + i}\n")
    tmp.rename(path)
    return path


def sample_queries(index, n: int, seed: int = 1) -> list[str]:
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        words = index.docstore[rng.randrange(len(index))][2].split()
        start = rng.randrange(max(1, len(words) - 8))
        out.append(" ".join(words[start:start + rng.randint(3, 8)]))
    return out


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


async def hammer(url: str, queries: list[str], clients: int) -> float:
    todo = iter(queries)
    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)
    async with httpx.AsyncClient(base_url=url, limits=limits, timeout=120) as client:
        async def worker():
            for q in todo:
                r = await client.post("/retrieve", json={"queries": [q], "topk": 10, "corpus": "bench"})
                r.raise_for_status()

        started = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(clients)))
        return time.perf_counter() - started


WRK_SCRIPT = """
local bodies = {}
for line in io.lines("%s") do bodies[#bodies + 1] = line end
local i = 0
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
request = function()
  i = i %% #bodies + 1
  return wrk.format(nil, "/retrieve", nil, bodies[i])
end
"""


def wrk_run(url: str, bodies: list[str], clients: int, seconds: int, work: Path) -> float:
    """Requests/s that wrk sustains cycling through `bodies` (stops early on any non-2xx)."""
    (work / "bodies.jsonl").write_text("\n".join(bodies) + "\n")
    (work / "post.lua").write_text(WRK_SCRIPT % (work / "bodies.jsonl"))
    out = subprocess.run(["wrk", "-t1", f"-c{clients}", f"-d{seconds}s", "-s", str(work / "post.lua"),
                          f"{url}/retrieve"], capture_output=True, text=True, check=True).stdout
    if "Non-2xx" in out or "Socket errors" in out:
        raise RuntimeError(f"wrk saw errors:\n{out}")
    return float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))


def http_qps(url: str, queries: list[str], per_request: int, clients: int, work: Path) -> float:
    chunks = [queries[i:i + per_request] for i in range(0, len(queries), per_request)]
    if shutil.which("wrk"):
        bodies = [json.dumps({"queries": c, "topk": 10, "corpus": "bench"}) for c in chunks]
        return per_request * wrk_run(url, bodies, clients, 10, work)
    if per_request != 1:
        raise SystemExit("multi-query requests need wrk")
    return len(queries) / asyncio.run(hammer(url, queries, clients))


def serve(index_dir: Path, cache_size: int) -> tuple[subprocess.Popen, str]:
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "retrieval.server", "--index", f"bench={index_dir}",
                             "--port", str(port), "--cache_size", str(cache_size), "--log_level", "warning"],
                            cwd=ROOT)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    while True:
        try:
            if httpx.get(f"{url}/health").status_code == 200:
                return proc, url
        except httpx.TransportError:
            pass
        if proc.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError("server did not start")
        time.sleep(0.2)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--passages", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=4096)
    parser.add_argument("--clients", type=int, default=64)
    parser.add_argument("--workdir", default="/tmp/openrm-bench")
    args = parser.parse_args()

    from retrieval.build_index import build_index
    from retrieval.retriever import load_index

    work = Path(args.workdir)
    work.mkdir(parents=True, exist_ok=True)
    corpus = synthetic_corpus(work / f"synthetic-{args.passages}.tsv", args.passages)
    index_dir = work / f"bm25-{args.passages}"
    if not (index_dir / "manifest.json").exists():
        build_index(corpus, "bm25", index_dir, overwrite=True)
    index = load_index(index_dir)
    queries = sample_queries(index, args.queries)

    started = time.perf_counter()
    for i in range(0, len(queries), 256):
        index.search(queries[i:i + 256], 10)
    in_process = len(queries) / (time.perf_counter() - started)

    rows = []
    client = "wrk" if shutil.which("wrk") else "httpx (client-bound)"
    proc, url = serve(index_dir, cache_size=0)
    try:
        asyncio.run(hammer(url, queries[:256], args.clients))  # connections and first batches
        for per_request in (1, 16) if shutil.which("wrk") else (1,):
            qps = http_qps(url, queries, per_request, args.clients, work)
            stats = httpx.get(f"{url}/corpora").json()["bench"]
            rows.append((f"{per_request} query/request, distinct, cache off", qps, stats))
    finally:
        proc.terminate()
        proc.wait()

    proc, url = serve(index_dir, cache_size=100_000)
    try:
        grpo = [q for q in queries for _ in range(5)]
        random.Random(2).shuffle(grpo)
        qps = http_qps(url, grpo, 1, args.clients, work)
        stats = httpx.get(f"{url}/corpora").json()["bench"]
    finally:
        proc.terminate()
        proc.wait()
    hit_rate = stats["cache_hits"] / (stats["cache_hits"] + stats["cache_misses"])
    rows.append((f"1 query/request, each query 5x, cache on (hit rate {hit_rate:.2f})", qps, stats))

    print(f"\nbm25, {args.passages:,} passages, topk 10, {args.clients} concurrent connections, load from {client}")
    print(f"in-process batched (256/call): {in_process:,.0f} queries/s\n")
    print("| HTTP run | queries/s | ÷ in-process | mean queries per backend batch |")
    print("|---|---:|---:|---:|")
    for name, qps, st in rows:
        per_batch = st["queries_searched"] / max(st["batches"], 1)
        print(f"| {name} | {qps:,.0f} | {qps / in_process:.2f} | {per_batch:.1f} |")


if __name__ == "__main__":
    main()
