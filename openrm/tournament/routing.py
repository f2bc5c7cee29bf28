"""Adaptive routing (Reasoning Arena Eq. 3, 5): a group whose verifiable rewards all agree (zero variance: no
gradient) goes to the tournament; every other group keeps its verifier rewards.

    routed = adaptive_rewards(verifier_rewards, lambda ids: [rank_z(r) for r in arena.run_many(topo, groups(ids))])
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np


def is_diverse(rewards: Sequence[float], tol: float = 0.0) -> bool:
    """D(G) = 1[sigma_G > tol] (Eq. 3)."""
    r = np.asarray(rewards, dtype=float)
    return bool(len(r) > 1 and r.std() > tol)


@dataclass(frozen=True)
class RoutedRewards:
    rewards: list[np.ndarray]  # per group, the rewards GRPO sees
    routed: list[bool]  # per group: True = judged by the tournament


def adaptive_rewards(verifier_rewards: Sequence[Sequence[float]],
                     judge: Callable[[list[int]], Sequence[Sequence[float]]], tol: float = 0.0) -> RoutedRewards:
    """`judge(group_indices)` is called once with every non-diverse group (one batch) and returns their rewards
    in that order; it is not called when every group is diverse."""
    routed = [not is_diverse(r, tol) for r in verifier_rewards]
    rewards = [np.asarray(r, dtype=float) for r in verifier_rewards]
    ids = [g for g, flag in enumerate(routed) if flag]
    if ids:
        judged = list(judge(ids))
        if len(judged) != len(ids):
            raise ValueError(f"the tournament returned {len(judged)} reward lists for {len(ids)} groups")
        for g, r in zip(ids, judged, strict=True):
            r = np.asarray(r, dtype=float)
            if r.shape != rewards[g].shape:
                raise ValueError(f"group {g}: {len(r)} tournament rewards for {len(rewards[g])} candidates")
            rewards[g] = r
    return RoutedRewards(rewards, routed)
