"""Seeded single elimination (ArenaRL §4.3): anchor matches seed the field (K-1 matches), then a 1-vs-N bracket
(K-1 matches; byes for the top seeds when K is not a power of two).

Ranking is by depth, then by the mean share over all of a candidate's matches. Depth is counted as soft net wins
(a win +1, a loss -1, a tie 0; a bye earns what its holder's seeding match earned, never below 0), so a tie or a
judge failure moves nobody; in a tied match the higher seed goes on, which only keeps the bracket going.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from openrm.tournament.anchor import anchor_scores
from openrm.tournament.records import PairRound, Standing


def bracket_order(size: int) -> list[int]:
    """1-based seeds in bracket slot order for a power-of-two `size`: seed 1 meets seed `size` first, and the
    top two seeds can only meet in the final."""
    if size < 1 or size & (size - 1):
        raise ValueError(f"bracket size must be a power of two, got {size}")
    order = [1]
    while len(order) < size:
        n = 2 * len(order)
        order = [s for seed in order for s in (seed, n + 1 - seed)]
    return order


def seed_order(scores: np.ndarray, rng: np.random.Generator) -> list[int]:
    """Candidates best seed first; equal seeding scores are ordered by a seeded shuffle, not by index."""
    shuffled = rng.permutation(len(scores))
    return [int(i) for i in shuffled[np.argsort(-scores[shuffled], kind="stable")]]


@dataclass(frozen=True)
class SeededSingleElimination:
    anchor: int = 0
    name: str = "seeded_single_elimination"

    def matches(self, k: int) -> int:
        return 2 * (k - 1) if k > 1 else 0

    def play(self, k: int, rng: np.random.Generator):
        if k < 2:
            return Standing(np.zeros(k))
        seeding = yield from anchor_scores(k, self.anchor, "seeding")
        seeds = seed_order(seeding, rng)
        size = 1 << (k - 1).bit_length()
        slots: list[int | None] = [seeds[s - 1] if s <= k else None for s in bracket_order(size)]
        net = np.zeros(k)
        shares: list[list[float]] = [[float(seeding[i])] for i in range(k)]
        rank_of = {c: r for r, c in enumerate(seeds)}
        rnd = 0
        while len(slots) > 1:
            pairs, nxt = [], []
            for a, b in zip(slots[::2], slots[1::2], strict=True):
                if a is None or b is None:
                    holder = b if a is None else a
                    net[holder] += max(0.0, 2 * (seeding[holder] - 0.5))
                    nxt.append(holder)
                else:
                    hi, lo = (a, b) if rank_of[a] < rank_of[b] else (b, a)
                    pairs.append((hi, lo))
                    nxt.append(None)
            ps = (yield PairRound(tuple(pairs), f"bracket{rnd}")) if pairs else []
            it = iter(zip(pairs, ps, strict=True))
            for n, slot in enumerate(nxt):
                if slot is None:
                    (hi, lo), p = next(it)
                    net[hi] += 2 * (p - 0.5)
                    net[lo] -= 2 * (p - 0.5)
                    shares[hi].append(p)
                    shares[lo].append(1 - p)
                    nxt[n] = lo if p < 0.5 else hi
            slots = nxt
            rnd += 1
        return Standing(net, np.array([np.mean(s) for s in shares]))
