"""Best-of-N candidate sets over the toy world: each toy question (from `toy_prompts`) gets N answers that state
some of its facts right and the rest wrong, rated by how many they state right (the toy oracle's own count).

    python -m toy.candidates --out runs/bon/toy.jsonl --world_seed 0 --prompts 50 --candidates 4
    python -m eval.best_of_n --data runs/bon/toy.jsonl --judge toy-oracle --world_seed 0 --out runs/bon/toy
"""

from __future__ import annotations

import argparse
import json
import logging
from collections.abc import Sequence
from pathlib import Path

from toy.candidate_sets import toy_candidate_rows
from toy.world import ToyWorld

logger = logging.getLogger(__name__)


def main(argv: Sequence[str] | None = None) -> Path:
    parser = argparse.ArgumentParser(description="Write toy-world best-of-N candidate sets (JSONL).")
    parser.add_argument("--out", required=True, help="JSONL file to write")
    parser.add_argument("--world_seed", type=int, default=0, help="toy world seed (the oracle must use the same)")
    parser.add_argument("--prompts", type=int, default=50, help="questions (the first N of toy_prompts)")
    parser.add_argument("--candidates", type=int, default=4, help="answers per question (N)")
    parser.add_argument("--split", default="train", choices=("train", "test"), help="toy_prompts split")
    parser.add_argument("--seed", type=int, default=0, help="seeds which facts each answer gets right")
    args = parser.parse_args(argv)
    rows = toy_candidate_rows(ToyWorld(args.world_seed), args.prompts, args.candidates, args.split, args.seed)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    print(f"wrote {len(rows)} candidate sets of {args.candidates} to {out}")
    return out


if __name__ == "__main__":
    main()
