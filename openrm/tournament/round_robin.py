"""Round robin: every pair meets once; a candidate's score is its win rate (soft: a tie is half a win).

The fidelity gold standard (ArenaRL §4.1, Reasoning Arena Eq. 8) at K(K-1)/2 matches per order.
`Arena(...).run(RoundRobin(), question, candidates)`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from openrm.tournament.records import PairRound, Standing


@dataclass(frozen=True)
class RoundRobin:
    name: str = "round_robin"

    def matches(self, k: int) -> int:
        return k * (k - 1) // 2

    def play(self, k: int, rng: np.random.Generator):
        pairs = tuple((i, j) for i in range(k) for j in range(i + 1, k))
        if not pairs:
            return Standing(np.zeros(k))
        ps = yield PairRound(pairs, "round_robin")
        return Standing(win_rates(k, pairs, ps))


def win_rates(k: int, pairs, ps) -> np.ndarray:
    """Mean soft outcome of each candidate over the matches it played; 0.5 for one that played none."""
    won, played = np.zeros(k), np.zeros(k)
    for (i, j), p in zip(pairs, ps, strict=True):
        won[i] += p
        won[j] += 1 - p
        played[i] += 1
        played[j] += 1
    return np.where(played > 0, won / np.maximum(played, 1), 0.5)
