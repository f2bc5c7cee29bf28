"""Seeded single elimination (ArenaRL §4.3): anchor matches seed the field (K-1 matches), then a 1-vs-N bracket
(K-1 matches; byes for the top seeds when K is not a power of two). `SeededSingleElimination()` ranks by the
paper's survival depth; `SeededSingleElimination(rank_by="net_wins")` by soft net wins.

Ranking, then the mean share over all of a candidate's matches (seeding included) within equal standings:
- the default, the paper's rule, `rank_by="depth"`: the round a candidate goes out in (ArenaRL: "depth of
  survival"). A bye survives its round, so a bye holder out in round 1 is level with a round-0 winner out in
  round 1; the champion is one round deeper than the final's loser. One who goes out on a tie shares the depth
  of the one who went on.
- option `rank_by="net_wins"`: soft net wins (a win +1, a loss -1, a share p scores 2p-1; a bye earns what
  its holder's seeding match earned, never below 0). A narrow win counts less than a clear one, so a close
  first-round loser can rank above the final's loser.
In a tied match (or a judge failure) the higher seed goes on, under both rules, only to keep the bracket going: the
paper is silent on ties, and neither rule lets a tie decide a standing (net: 0 each; depth: shared).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from openrm.tournament.anchor import anchor_scores
from openrm.tournament.depth import RankBy, Survival, check_rank_by
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
    rank_by: RankBy = "depth"  # the paper's rule; "net_wins": soft net wins (see the module docstring)
    name: str = "seeded_single_elimination"

    def __post_init__(self):
        check_rank_by(self.rank_by)

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
        survival = Survival(k)
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
                    won, lost = (lo, hi) if p < 0.5 else (hi, lo)
                    nxt[n] = won
                    survival.out(lost, rnd, won, p)
            slots = nxt
            rnd += 1
        primary = net if self.rank_by == "net_wins" else survival.depths(champion=rnd)
        return Standing(primary, np.array([np.mean(s) for s in shares]))
