"""Toy best-of-N candidate sets: each toy question (from `toy_prompts`) gets N answers that state some of its facts
right and the rest wrong, rated by how many they state right (the toy oracle's own count). toy/candidates.py writes
them to a file; the best-of-N, DPO and preference-selection tests build them in memory.
"""

from __future__ import annotations

import random
from typing import Any

from toy.oracle import ToyOracle, toy_prompts
from toy.world import KINDS, ToyWorld


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
