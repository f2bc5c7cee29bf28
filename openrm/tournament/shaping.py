"""Reward shaping: tournament results -> per-candidate rewards, kept apart from the topology that made them.

min-max (+ a format reward; Tournament-GRPO Eq. 8-9), rank quantile then group z-score (ArenaRL Eq. 6-7), win
rate (Reasoning Arena Eq. 8) and min-max Bradley-Terry strengths (Reasoning Arena Eq. 9-10). Equal standings
always give equal rewards. Pure functions.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from openrm.tournament.bradley_terry import fit_bradley_terry, soft_outcome
from openrm.tournament.records import TournamentResult


def min_max(scores, eps: float = 1e-6) -> np.ndarray:
    """(s - min) / (max - min + eps): Eq. 8."""
    s = np.asarray(scores, dtype=float)
    if not len(s):
        return s
    return (s - s.min()) / (s.max() - s.min() + eps)


def tournament_reward(result: TournamentResult, format_ok: Sequence[bool] | None = None,
                      eps: float = 1e-6) -> np.ndarray:
    """Min-max of the tournament scores plus a binary format reward: Eq. 9 (no format term when None)."""
    r = min_max(result.scores, eps)
    if format_ok is not None:
        if len(format_ok) != len(r):
            raise ValueError(f"{len(format_ok)} format flags for {len(r)} candidates")
        r = r + np.asarray(format_ok, dtype=float)
    return r


def rank_quantile(ranks) -> np.ndarray:
    """1 - rank / (K - 1), rank 0 = best (Eq. 6); shared ranks give shared rewards."""
    ranks = np.asarray(ranks, dtype=float)
    k = len(ranks)
    return np.ones(k) if k < 2 else 1.0 - ranks / (k - 1)


def z_score(rewards, eps: float = 1e-6) -> np.ndarray:
    """(r - mean) / (std + eps) within the group (Eq. 7, population std)."""
    r = np.asarray(rewards, dtype=float)
    return (r - r.mean()) / (r.std() + eps) if len(r) else r


def rank_z(result: TournamentResult, eps: float = 1e-6) -> np.ndarray:
    return z_score(rank_quantile(result.ranks), eps)


def win_rate(result: TournamentResult) -> np.ndarray:
    """Each candidate's mean soft outcome over every pairwise outcome it took part in; 0.5 with none."""
    i, j, p = result.pairwise()
    won = np.bincount(i, p, result.k) + np.bincount(j, 1 - p, result.k)
    played = np.bincount(i, minlength=result.k) + np.bincount(j, minlength=result.k)
    return np.where(played > 0, won / np.maximum(played, 1), 0.5)


def bradley_terry(result: TournamentResult, gamma: float = 1.0, l2: float = 1.0) -> np.ndarray:
    """Bradley-Terry log-strengths fitted on the result's pairwise outcomes (soft margin `gamma`)."""
    i, j, p = result.pairwise()
    return fit_bradley_terry(result.k, i, j, soft_outcome(p, gamma), l2=l2)


def bt_min_max(result: TournamentResult, gamma: float = 1.0, l2: float = 1.0, eps: float = 1e-6) -> np.ndarray:
    return min_max(bradley_terry(result, gamma, l2), eps)


SHAPINGS = {
    "min_max": tournament_reward,
    "rank_z": rank_z,
    "win_rate": win_rate,
    "bt_min_max": bt_min_max,
}
