"""Double elimination (ArenaRL §4.4): random seeding, a winners' and a losers' bracket, out after two losses, one
grand final without a reset: 2K-2 matches for any K >= 2 (a rematch is answered by the cache).

Each round pairs the winners' bracket among itself and the losers' bracket among itself (an odd one out waits a
round); winners'-bracket losers drop into the losers' bracket. In a tied match the first listed goes on (the paper
is silent on ties). Ranking as in seeded single elimination, then the mean share over all matches:
- the default, the paper's rule, `rank_by="depth"` (ArenaRL: "advancement depth"): the round of a candidate's
  second loss (one who waits a round survives it); the grand final's loser goes out in the last round, the
  champion one deeper. One who goes out on a tie shares the depth of the one who went on.
- option `rank_by="net_wins"`: soft net wins (a tie moves nobody).
`DoubleElimination()`; `DoubleElimination(rank_by="net_wins")`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from openrm.tournament.depth import RankBy, Survival, check_rank_by
from openrm.tournament.records import PairRound, Standing


@dataclass(frozen=True)
class DoubleElimination:
    rank_by: RankBy = "depth"  # the paper's rule; "net_wins": soft net wins (see the module docstring)
    name: str = "double_elimination"

    def __post_init__(self):
        check_rank_by(self.rank_by)

    def matches(self, k: int) -> int:
        return 2 * (k - 1) if k > 1 else 0

    def play(self, k: int, rng: np.random.Generator):
        if k < 2:
            return Standing(np.zeros(k))
        winners = [int(i) for i in rng.permutation(k)]
        losers: list[int] = []
        net = np.zeros(k)
        shares: list[list[float]] = [[] for _ in range(k)]
        survival = Survival(k)
        rnd = 0
        while len(winners) > 1 or len(losers) > 1:
            wb = list(zip(winners[0:len(winners) - 1:2], winners[1::2], strict=True))
            lb = list(zip(losers[0:len(losers) - 1:2], losers[1::2], strict=True))
            ps = yield PairRound(tuple(wb + lb), f"round{rnd}")
            wb_up, wb_down, lb_up = [], [], []
            for n, ((a, b), p) in enumerate(zip(wb + lb, ps, strict=True)):
                net[a] += 2 * (p - 0.5)
                net[b] -= 2 * (p - 0.5)
                shares[a].append(p)
                shares[b].append(1 - p)
                up, down = (b, a) if p < 0.5 else (a, b)
                if n < len(wb):
                    wb_up.append(up)
                    wb_down.append(down)
                else:
                    lb_up.append(up)
                    survival.out(down, rnd, up, p)  # a second loss
            winners = wb_up + winners[2 * len(wb):]  # the odd one out waits
            losers = lb_up + losers[2 * len(lb):] + wb_down
            rnd += 1
        (p,) = yield PairRound(((winners[0], losers[0]),), "grand_final")
        net[winners[0]] += 2 * (p - 0.5)
        net[losers[0]] -= 2 * (p - 0.5)
        shares[winners[0]].append(p)
        shares[losers[0]].append(1 - p)
        up, down = (losers[0], winners[0]) if p < 0.5 else (winners[0], losers[0])
        survival.out(down, rnd, up, p)  # no reset: the grand final decides
        primary = net if self.rank_by == "net_wins" else survival.depths(champion=rnd + 1)
        return Standing(primary, np.array([np.mean(s) for s in shares]))
