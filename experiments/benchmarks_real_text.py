"""The benchmark path on real text with a real judge: `eval.run` with SmolLM2 judges on files shaped like
RewardBench, PandaLM, LLMBar, JudgeBench, Auto-J and MT-Bench human judgments, built from real Wikipedia lead
sections (`data_synthesis.wiki_pairs`: the article's lead section against the same text with its numbers changed,
or against another article of the topic), with search over the real Wikipedia index.

    .venv/bin/python -m experiments.benchmarks_real_text [--judges zero-shot=smollm2-135m-instruct toy=runs/qs1/judge] \
        [--no-tools toy] [--n 12] [--long 2] [--out runs/wiki-bench]

Both tools (WIKI and ARXIV) search the real Wikipedia bm25 index (there is no offline arXiv text). Every judge runs
with the same budget (--max_completion_tokens). Per benchmark and judge: accuracy with its 95 % bootstrap interval,
orders without a parseable verdict, searches per judgment, seconds per pair, rows the context policy cut, and the
length baseline (the longer answer wins). Verdicts are cached per run folder, so a rerun resumes.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import time
from pathlib import Path

from data_synthesis.wiki_benchmarks import WRITERS, write_files
from eval import loaders
from plumbing import atomic
from plumbing.records import RESULTS
from retrieval.wikipedia import packaged_index


def length_baseline(examples: list[dict]) -> float:
    """Accuracy of "the longer answer (in words) wins" on A/B-labelled examples; equal lengths are a miss."""
    hits = [(len(e["answer_a"].split()) > len(e["answer_b"].split())) == (e["label"] == "A")
            and len(e["answer_a"].split()) != len(e["answer_b"].split()) for e in examples]
    return sum(hits) / len(hits) if hits else float("nan")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("runs/wiki-bench"))
    parser.add_argument("--judges", nargs="+", default=["zero-shot=smollm2-135m-instruct", "toy=runs/qs1/judge"],
                        help="NAME=JUDGE (exported judge folder or packaged short name)")
    parser.add_argument("--no-tools", nargs="*", default=["toy"], help="judges also run without search")
    parser.add_argument("--benchmarks", nargs="+", default=list(WRITERS))
    parser.add_argument("--n", type=int, default=12, help="pairs per benchmark")
    parser.add_argument("--long", type=int, default=2, help="long pairs (past 8,192 tokens) in the RewardBench file")
    parser.add_argument("--index", type=Path, default=None,
                        help="Wikipedia index (default: bm25 over the packaged lead sections, in runs/wiki-vital)")
    parser.add_argument("--max-completion-tokens", type=int, default=192)
    args = parser.parse_args()
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    from eval.evaluation import EvalArguments, evaluate
    from eval.scorecard import markdown

    files = write_files(args.out / "data", args.n, args.long, benchmarks=tuple(args.benchmarks))
    index = args.index or packaged_index(Path("runs/wiki-vital"))
    judges = dict(j.split("=", 1) for j in args.judges)
    runs = [(name, path, False) for name, path in judges.items()]
    runs += [(name, judges[name], True) for name in args.no_tools if name in judges]
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    rows = []
    for bench, data in files.items():
        examples = loaders.load_benchmark(bench, data).examples
        rows.append({"benchmark": bench, "judge": "longer answer wins", "n": len(examples),
                     "accuracy": length_baseline(examples)})
        for name, path, no_tools in runs:
            label = f"{name}, no search" if no_tools else name
            out = args.out / "eval" / f"{name}{'-nosearch' if no_tools else ''}" / bench
            t = time.perf_counter()
            r = evaluate(EvalArguments(
                judge=path, benchmark=bench, data=str(data), out=str(out),
                judge_max_completion_tokens=args.max_completion_tokens, chunk_size=8, judge_batch_size=16,
                no_tools=no_tools,
                retrievers=[] if no_tools else [f"wiki={index}", f"arxiv={index}"]))
            print(markdown(r))
            j = r["judging"]
            rows.append({"benchmark": bench, "judge": label, "n": r["counts"]["examples"],
                         "accuracy": r.get("accuracy"), "ci95": r.get("ci95"),
                         "unparsed_orders": j["unparsed_orders"] / max(1, 2 * j["judged"]),
                         "searches": j["searches_per_judgment"], "seconds_per_pair": j["seconds_per_judgment"],
                         "truncated": j["context"]["truncated"], "context_failed": j["context"]["failed"],
                         "wall_seconds": time.perf_counter() - t})
            print(json.dumps(rows[-1]), flush=True)
    atomic.write_json(args.out / RESULTS, rows, indent=1)
    print("| benchmark | judge | pairs | accuracy (95 % CI) | unparsed orders | searches / pair | s / pair "
          "| cut to fit |")
    print("|---|---|---:|---|---:|---:|---:|---:|")
    for r in rows:
        ci = f" ({r['ci95'][0]:.2f}-{r['ci95'][1]:.2f})" if r.get("ci95") else ""
        extra = (f"{r['unparsed_orders']:.2f} | {r['searches'] or 0:.2f} | {r['seconds_per_pair'] or 0:.1f} | "
                 f"{r['truncated']}" if "unparsed_orders" in r else "- | - | - | -")
        print(f"| {r['benchmark']} | {r['judge']} | {r['n']} | {r['accuracy']:.2f}{ci} | {extra} |")


if __name__ == "__main__":
    main()
