"""Anchor ranking (ArenaRL §4.2): every candidate meets the anchor (the greedy-decoded answer) once; K-1 matches.

A candidate's score is its share of its match against the anchor; the anchor's score is its mean share over all
of its matches, so both sides of each match are on one scale. `Arena(...).run(Anchor(anchor=0), q, candidates)`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from openrm.tournament.records import PairRound, Standing


@dataclass(frozen=True)
class Anchor:
    anchor: int = 0  # index of the anchor candidate within the group
    name: str = "anchor"

    def matches(self, k: int) -> int:
        return max(k - 1, 0)

    def play(self, k: int, rng: np.random.Generator):
        scores = yield from anchor_scores(k, self.anchor, "anchor")
        return Standing(scores)


def anchor_scores(k: int, anchor: int, phase: str):
    """Play everyone against `anchor`; return the scores (a sub-generator, reused for seeding)."""
    if k < 2:
        return np.full(k, 0.5)
    if not 0 <= anchor < k:
        raise ValueError(f"anchor index {anchor} is outside a group of {k}")
    others = [i for i in range(k) if i != anchor]
    ps = yield PairRound(tuple((i, anchor) for i in others), phase)
    scores = np.empty(k)
    scores[others] = ps
    scores[anchor] = 1.0 - float(np.mean(ps))
    return scores
