"""Benchmark-shaped pair files built from real Wikipedia text, for running `eval.run` end to end on real-length
candidates where the benchmarks' own files are not at hand (no hub here).

    python -m data_synthesis.wiki_pairs --out runs/wiki-bench --n 12 --long 2            # benchmark-shaped files

The pairs are `data_synthesis.wiki_articles`', the files `data_synthesis.wiki_benchmarks`'. Judge datasets (train and
test splits, seven kinds of error at three lengths) are `python -m data_synthesis.wiki_judge_pairs`.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from data_synthesis.wiki_benchmarks import write_files


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--n", type=int, default=12, help="pairs per benchmark file")
    parser.add_argument("--long", type=int, default=2, help="extra long pairs in the RewardBench file")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--summaries", default=None, help="lead-section JSON (default: the packaged file)")
    args = parser.parse_args(argv)
    for name, file in write_files(args.out, args.n, args.long, args.seed, args.summaries).items():
        print(f"{name}: {file}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
