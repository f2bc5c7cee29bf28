"""Swiss system (ArenaRL §4.5): ceil(log2 K) rounds of floor(K/2) matches; each round pairs candidates with equal
(or the nearest) points, avoiding rematches where it can. A bye is worth half a point (a tie, not a free win).

Ranking: points (soft wins), then Buchholz taken as the mean final points of a candidate's opponents (a mean, so
a bye holder is not penalised for meeting one opponent fewer).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from openrm.tournament.records import PairRound, Standing


@dataclass(frozen=True)
class Swiss:
    rounds: int | None = None  # None: ceil(log2 K)
    name: str = "swiss"

    def n_rounds(self, k: int) -> int:
        return self.rounds if self.rounds is not None else (math.ceil(math.log2(k)) if k > 1 else 0)

    def matches(self, k: int) -> int:
        return self.n_rounds(k) * (k // 2)

    def play(self, k: int, rng: np.random.Generator):
        points = np.zeros(k)
        opponents: list[list[int]] = [[] for _ in range(k)]
        had_bye: set[int] = set()
        for rnd in range(self.n_rounds(k)):
            shuffled = rng.permutation(k)
            order = [int(i) for i in shuffled[np.argsort(-points[shuffled], kind="stable")]]
            if k % 2:
                bye = next((c for c in reversed(order) if c not in had_bye), order[-1])
                had_bye.add(bye)
                order.remove(bye)
                points[bye] += 0.5
            pairs = []
            while order:
                a = order.pop(0)
                b = next((c for c in order if c not in opponents[a]), order[0])
                order.remove(b)
                pairs.append((a, b))
            ps = yield PairRound(tuple(pairs), f"round{rnd}")
            for (a, b), p in zip(pairs, ps, strict=True):
                points[a] += p
                points[b] += 1 - p
                opponents[a].append(b)
                opponents[b].append(a)
        buchholz = np.array([np.mean(points[o]) if o else 0.0 for o in opponents])
        return Standing(points, buchholz)
