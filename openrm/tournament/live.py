"""Live tournament (Reasoning Arena): candidates arrive one by one (in index order: pass them in finishing
order); each newcomer plays the current best, median and worst of the live win-rate leaderboard (all of it while
fewer than three are there): 1 + 2 + 3(K-3) matches for K >= 3. Scores are Bradley-Terry strengths fitted on the
incomplete match graph, the win rate breaking exact ties.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from openrm.tournament.bradley_terry import fit_bradley_terry, soft_outcome
from openrm.tournament.records import PairRound, Standing


@dataclass(frozen=True)
class Live:
    gamma: float = 1.0  # soft margin of a win (Eq. 7)
    l2: float = 1.0
    name: str = "live"

    def matches(self, k: int) -> int:
        return 3 * k - 6 if k >= 3 else max(k - 1, 0)

    def play(self, k: int, rng: np.random.Generator):
        won, played = np.zeros(k), np.zeros(k)
        log_i, log_j, log_p = [], [], []
        for new in range(1, k):
            rate = np.where(played > 0, won / np.maximum(played, 1), 0.5)
            board = sorted(range(new), key=lambda c: (-rate[c], c))  # ties: earlier arrival first
            opponents = board if len(board) <= 3 else [board[0], board[(len(board) - 1) // 2], board[-1]]
            ps = yield PairRound(tuple((new, o) for o in opponents), f"arrival{new}")
            for o, p in zip(opponents, ps, strict=True):
                won[new] += p
                won[o] += 1 - p
                played[new] += 1
                played[o] += 1
                log_i.append(new)
                log_j.append(o)
                log_p.append(p)
        beta = fit_bradley_terry(k, log_i, log_j, soft_outcome(log_p, self.gamma), l2=self.l2)
        return Standing(beta, np.where(played > 0, won / np.maximum(played, 1), 0.5))
