"""A judge dataset of clean pairs from real Wikipedia lead sections, at scale: the chosen answer is an article's own
text cut to a length class, the rejected answer the same cut with one kind of factual change
(`data_synthesis.wiki_changes`), so every label is right by construction.

    python -m data_synthesis.wiki_judge_pairs --out runs/wiki-pairs --n-train 3000 --n-test 300 [--kinds date swap]

The dataset is `data_synthesis.wiki_dataset`'s.
"""

from __future__ import annotations

import argparse
import logging
from pathlib import Path

from data_synthesis.wiki_changes import KINDS, LEAD_WORDS, LENGTHS
from data_synthesis.wiki_dataset import write_dataset


def add_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--kinds", nargs="+", choices=KINDS, default=list(KINDS), help="kinds of change")
    parser.add_argument("--lengths", nargs="+", choices=LENGTHS, default=list(LENGTHS), help="length classes")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--n-train", type=int, required=True, help="train pairs (negative: as many as there are)")
    parser.add_argument("--n-test", type=int, required=True, help="test pairs, drawn first")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--summaries", default=None, help="lead-section JSON (default: the packaged file)")
    parser.add_argument("--max-words", type=int, default=LEAD_WORDS, help="longest answer, in words")
    add_options(parser)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")
    counts = write_dataset(args.out, args.n_train, args.n_test, args.seed, args.summaries, args.max_words,
                           args.kinds, args.lengths)
    print(f"judge dataset in {args.out}: {counts['train']} train, {counts['test']} test pairs")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
