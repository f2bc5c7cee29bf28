"""Swiss system (ArenaRL §4.5): ceil(log2 K) rounds of floor(K/2) matches; each round pairs candidates with equal
(or the nearest) points, avoiding rematches where it can. A bye is worth half a point (a tie, not a free win; the
paper is silent on byes). `Swiss()` breaks ties by the paper's Buchholz sum; `Swiss(buchholz="mean")` by the mean.

Ranking: points (soft wins: a tie is half a win), then Buchholz over a candidate's opponents' final points:
- the default, the paper's rule, `buchholz="sum"` (ArenaRL: "the sum of wins achieved by a trajectory's past
  opponents");
- option `buchholz="mean"`: a bye holder met one opponent fewer, and a sum counts that against it.
With an even K everyone meets the same number of opponents and the two rank alike; they differ only with byes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal, get_args

import numpy as np

from openrm.tournament.records import PairRound, Standing

Buchholz = Literal["mean", "sum"]


@dataclass(frozen=True)
class Swiss:
    rounds: int | None = None  # None: ceil(log2 K)
    buchholz: Buchholz = "sum"  # the paper's rule; "mean": over the opponents met (see the module docstring)
    name: str = "swiss"

    def __post_init__(self):
        if self.buchholz not in get_args(Buchholz):
            raise ValueError(f"buchholz must be one of {get_args(Buchholz)}, got {self.buchholz!r}")

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
        reduce = np.mean if self.buchholz == "mean" else np.sum
        buchholz = np.array([reduce(points[o]) if o else 0.0 for o in opponents])
        return Standing(points, buchholz)
