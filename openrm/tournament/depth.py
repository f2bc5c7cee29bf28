"""Survival depth in an elimination bracket (ArenaRL §4.3-4.4): the round a candidate goes out in, the champion one
round deeper than the last one out. `SeededSingleElimination(rank_by="depth")` and `DoubleElimination(rank_by=
"depth")` rank by it, then by the mean share of every match a candidate played.

A tied match (or a judge failure) still sends one side on, to keep the bracket going, but decides no depth: the side
that went out on a tie is credited with the depth the side that went on reaches, so a tie never picks a winner.
"""

from __future__ import annotations

import math
from typing import Literal, get_args

import numpy as np

RankBy = Literal["net_wins", "depth"]


def check_rank_by(rank_by: str) -> None:
    if rank_by not in get_args(RankBy):
        raise ValueError(f"rank_by must be one of {get_args(RankBy)}, got {rank_by!r}")


class Survival:
    """Who went out in which round, and on whose tie."""

    def __init__(self, k: int):
        self.out_round: dict[int, int] = {}
        self.tied_with: dict[int, int] = {}  # went out on a tie -> the one that went on
        self.k = k

    def out(self, loser: int, rnd: int, winner: int, p: float) -> None:
        """`loser` goes out in round `rnd` after a match `winner` won with share `p` (0.5: a tie)."""
        self.out_round[loser] = rnd
        if math.isclose(p, 0.5, abs_tol=1e-12):
            self.tied_with[loser] = winner

    def depths(self, champion: int) -> np.ndarray:
        """[K] the round each candidate went out in; `champion` (one past the last round) for those never out.
        A tie link is followed to the end: whoever went on, and on, carries the depth."""
        own = np.array([self.out_round.get(c, champion) for c in range(self.k)], dtype=float)
        depth = own.copy()
        for c in range(self.k):
            d = c
            while d in self.tied_with:
                d = self.tied_with[d]
            depth[c] = own[d]
        return depth
