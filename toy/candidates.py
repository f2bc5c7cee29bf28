"""Best-of-N candidate sets over the toy world: each toy question (from `toy_prompts`) gets N answers that state
some of its facts right and the rest wrong, rated by how many they state right (the toy oracle's own count).

    python -m toy.candidates --out runs/bon/toy.jsonl --world_seed 0 --prompts 50 --candidates 4
    python -m eval.best_of_n --data runs/bon/toy.jsonl --judge toy-oracle --world_seed 0 --out runs/bon/toy
"""

from __future__ import annotations

import argparse
import json
import logging
import random
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from toy.oracle import ToyOracle, toy_prompts
from toy.world import KINDS, ToyWorld

logger = logging.getLogger(__name__)


def toy_candidate_rows(world: ToyWorld, n_prompts: int, n_candidates: int, split: str = "train",
                       seed: int = 0) -> list[dict[str, Any]]:
    """Rows {"id", "question", "candidates", "ratings", "meta"}: candidate c states a seeded-random number of the
    question's facts right (0..all, each count equally likely) and the others with another document's value."""
    if n_candidates < 2:
        raise ValueError(f"a best-of-N set needs at least 2 candidates, got {n_candidates}")
    prompts = toy_prompts(world, n_prompts, split, style="long")
    oracle = ToyOracle.from_rows(world, prompts)
    values: dict[tuple[str, str], set[str]] = {}
    for doc in world.documents:
        for key, value in doc.facts:
            values.setdefault((doc.kind, key), set()).add(value)
    rows = []
    for prompt in prompts:
        rng = random.Random(f"toy-candidates:{world.seed}:{seed}:{prompt['id']}")
        doc = world.by_id[prompt["meta"]["doc_ids"][0]]
        attributes = {a.key: a for a in KINDS[doc.kind][1]}
        truth = dict(doc.facts)
        keys = [f["attribute"] for f in prompt["meta"]["facts"]]
        candidates, ratings = [], []
        for _ in range(n_candidates):
            right = set(rng.sample(keys, rng.randint(0, len(keys))))
            for _ in range(100):  # redraw until the oracle counts exactly the facts meant to be right
                said = {k: truth[k] if k in right else rng.choice(sorted(values[(doc.kind, k)] - {truth[k]}))
                        for k in keys}
                text = " ".join(rng.choice(attributes[k].phrasings).format(name=doc.subject, value=said[k])
                                for k in keys)
                if oracle.agreements(prompt["question"], text) == len(right):
                    break
            else:
                raise RuntimeError(f"could not write a candidate with {len(right)} right facts for {prompt['id']}")
            candidates.append(text)
            ratings.append(float(len(right)))
        rows.append({"id": prompt["id"], "question": prompt["question"], "candidates": candidates,
                     "ratings": ratings, "meta": prompt["meta"]})
    return rows


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
