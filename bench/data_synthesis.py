"""Data-synthesis throughput: requests/s and records/s at concurrency 1, 8, 32, and the cache hit rate of a run
resumed after kill -9.

    .venv/bin/python -m bench.data_synthesis --slots 48 --out /tmp/synth-bench

Servers on loopback: the real `transformers serve` with the tiny random model (its replies are garbage, so each
slot is a question request plus one JSON repair and no record survives), and the scripted chat server of the
tests with a fixed per-request latency (every slot becomes a record: 3 requests). Fresh cache per run.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

def run(out: Path, corpora: list[str], url: str, model: str, slots: int, concurrency: int, extra: list[str]) -> dict:
    from transformers import HfArgumentParser

    from data_synthesis.builder import BuildDatasetArguments, build

    shutil.rmtree(out, ignore_errors=True)
    started = time.perf_counter()
    (parsed,) = HfArgumentParser(BuildDatasetArguments).parse_args_into_dataclasses(args=[
        *corpora, "--base-url", url, "--model", model, "--n-train", str(slots - slots // 4),
        "--n-test", str(slots // 4), "--out", str(out), "--concurrency", str(concurrency), "--max-rounds", "1",
        "--oversample", "1", "--progress", "false", *extra])
    build(parsed)
    seconds = time.perf_counter() - started
    summary = json.loads((out / "summary.json").read_text())
    records = sum(summary["pairs"].values())
    return {"concurrency": concurrency, "seconds": round(seconds, 2), "slots": summary["slots"],
            "requests": summary["client"]["http_attempts"], "records": records,
            "requests_per_s": round(summary["client"]["http_attempts"] / seconds, 2),
            "slots_per_s": round(summary["slots"] / seconds, 2), "records_per_s": round(records / seconds, 2),
            "completion_tokens": summary["client"]["completion_tokens"]}


def resume(out: Path, corpora: list[str], url: str, model: str, slots: int, extra: list[str]) -> dict:
    """kill -9 a subprocess run once about half its requests are cached, rerun the same command, read the hits."""
    from transformers import HfArgumentParser

    from data_synthesis.builder import BuildDatasetArguments, build

    shutil.rmtree(out, ignore_errors=True)
    args = [*corpora, "--base-url", url, "--model", model, "--n-train", str(slots - slots // 4), "--n-test",
            str(slots // 4), "--out", str(out), "--concurrency", "8", "--max-rounds", "1", "--oversample", "1",
            "--progress", "false", *extra]
    proc = subprocess.Popen([sys.executable, "-m", "data_synthesis.build_dataset", *args], cwd=ROOT,
                            env={**os.environ, "PYTHONPATH": str(ROOT)}, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    cache = out / "requests.jsonl"
    while proc.poll() is None and not (cache.exists() and len(cache.read_text().splitlines()) >= slots):
        time.sleep(0.01)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    cached = len(cache.read_text().splitlines())
    started = time.perf_counter()
    (parsed,) = HfArgumentParser(BuildDatasetArguments).parse_args_into_dataclasses(args=args)
    build(parsed)
    seconds = time.perf_counter() - started
    client = json.loads((out / "summary.json").read_text())["client"]
    return {"cached_at_kill": cached, "requests": client["requests"], "cache_hits": client["cache_hits"],
            "cache_hit_rate": client["cache_hit_rate"], "sent_after_resume": client["http_attempts"],
            "resume_seconds": round(seconds, 2)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--slots", type=int, default=48, help="query slots per run (3/4 train, 1/4 test)")
    parser.add_argument("--out", default="/tmp/synth-bench", help="scratch folder")
    parser.add_argument("--max-tokens", type=int, default=32, help="max_tokens of every request to the tiny model")
    parser.add_argument("--latency-ms", type=float, default=50.0, help="scripted server's time per request")
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 8, 32])
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    # the scripted server is the tests' (tests/synth_servers.py, which imports tests/loopback.py as `loopback`)
    sys.path.insert(0, str(ROOT / "tests"))
    from synth_servers import ScriptedLLM, serve, transformers_serve, write_corpus

    from toy.tiny import build
    from toy.world import ToyWorld

    root = Path(args.out)
    root.mkdir(parents=True, exist_ok=True)
    toy = ToyWorld(0).write_corpora(root / "corpora")
    toy_corpora = ["--corpus", f"wiki={toy['wiki']['jsonl']}", "--corpus", f"arxiv={toy['arxiv']['jsonl']}"]
    tokens = ["--query-max-tokens", str(args.max_tokens), "--answer-max-tokens", str(args.max_tokens)]
    results = {"transformers_serve": [], "scripted": []}
    model_dir = build(root / "tiny")
    with transformers_serve(model_dir) as url:
        for c in args.concurrency:
            results["transformers_serve"].append(run(root / f"ts-c{c}", toy_corpora, f"{url}/v1", str(model_dir),
                                                     args.slots, c, tokens))
            print(json.dumps(results["transformers_serve"][-1]), flush=True)
        results["resume_transformers_serve"] = resume(root / "ts-resume", toy_corpora, f"{url}/v1",
                                                      str(model_dir), args.slots, tokens)
        print(json.dumps(results["resume_transformers_serve"]), flush=True)
    wiki = write_corpus(root / "wiki.jsonl", 4 * args.slots, 0)
    arxiv = write_corpus(root / "arxiv.jsonl", 4 * args.slots, 1)
    scripted = ["--corpus", f"wiki={wiki}", "--corpus", f"arxiv={arxiv}"]
    with serve(ScriptedLLM(delay_s=args.latency_ms / 1000).app) as url:
        for c in args.concurrency:
            results["scripted"].append(run(root / f"sc-c{c}", scripted, url, "scripted", args.slots, c, []))
            print(json.dumps(results["scripted"][-1]), flush=True)
        results["resume_scripted"] = resume(root / "sc-resume", scripted, url, "scripted", args.slots, [])
        print(json.dumps(results["resume_scripted"]), flush=True)
    (root / "results.json").write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
