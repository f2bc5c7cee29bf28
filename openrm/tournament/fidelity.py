"""How faithfully a tournament's rewards rank candidates of known latent strength: Kendall tau-b and tau-a per group
and top-1 accuracy (pure numpy), and one cell of a fidelity study (`measure_cell`: a topology played by the real
`Arena` against a simulated judge over many groups of K, scored under every shaping). bench.tournament_sim runs the
study; its tables are bench/pareto.py's.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from openrm.tournament.arena import Arena, Group
from openrm.tournament.shaping import bt_min_max, rank_z, tournament_reward, win_rate
from openrm.tournament.simulation import JUDGES, SimGroupJudge

SHAPERS = {"min-max": tournament_reward, "rank-z": rank_z, "win rate": win_rate, "BT": bt_min_max}


@dataclass(frozen=True)
class Variant:
    """A row of the study: a topology under its label, and the presentation orders the Arena asks for."""

    label: str
    topology: object
    orders: str = "both"


@dataclass(frozen=True)
class Latent:
    """The simulated world: strengths ~ N(0, sigma) per candidate, the judges' position bias (a logit bonus of the
    first-shown candidate) and tie rate, and the seed everything is drawn from."""

    sigma: float = 1.0
    bias: float = 0.3
    tie_rate: float = 0.1
    seed: int = 0


def kendall_tau_b(rewards: np.ndarray, truth: np.ndarray) -> np.ndarray:
    """tau-b of each row of rewards [G, K] against truth [G, K] (truth without ties); 0 for a constant row."""
    dr = np.sign(rewards[:, :, None] - rewards[:, None, :])  # [G, K, K]
    dt = np.sign(truth[:, :, None] - truth[:, None, :])
    iu = np.triu_indices(rewards.shape[1], 1)
    dr, dt = dr[:, iu[0], iu[1]], dt[:, iu[0], iu[1]]  # [G, P]
    num = (dr * dt).sum(1)
    den = np.sqrt((dr != 0).sum(1) * (dt != 0).sum(1))
    return np.where(den > 0, num / np.maximum(den, 1e-12), 0.0)


def kendall_tau_a(rewards: np.ndarray, truth: np.ndarray) -> np.ndarray:
    """(concordant - discordant) / pairs: tau-b's expectation when tied rewards are ordered by a fair coin. tau-b
    drops tied pairs from its denominator, so it credits a topology whose scores tie (round robin's win rates) over
    one whose scores never do (Bradley-Terry); tau-a does not."""
    dr = np.sign(rewards[:, :, None] - rewards[:, None, :])  # [G, K, K]
    dt = np.sign(truth[:, :, None] - truth[:, None, :])
    iu = np.triu_indices(rewards.shape[1], 1)
    return (dr * dt)[:, iu[0], iu[1]].mean(1)


def top1(rewards: np.ndarray, truth: np.ndarray) -> np.ndarray:
    """Chance that the top reward is the latent best, ties at the top broken uniformly."""
    top = np.isclose(rewards, rewards.max(1, keepdims=True), rtol=0, atol=1e-9)
    best = truth.argmax(1)
    return top[np.arange(len(best)), best] / top.sum(1)


def measure_cell(judge: str, k: int, n_groups: int, variant: Variant, latent: Latent) -> dict:
    """`variant` on `n_groups` groups of `k` against the simulated `judge` (a key of `JUDGES`): mean judge calls,
    group calls, matches and rounds per group, Fisher information per call, and per shaping the mean tau-b (with its
    standard error over groups) and top-1; tau-a of the min-max scores; seconds in all and in the Arena."""
    rng = np.random.default_rng([latent.seed, k])
    strengths = rng.normal(0.0, latent.sigma, size=(n_groups, k))
    groups = [Group(str(g), tuple(str(c) for c in range(k)), group_id=g) for g in range(n_groups)]
    pairwise = JUDGES[judge](strengths, latent.bias, latent.tie_rate, latent.seed + 1)
    arena = Arena(pairwise, SimGroupJudge(strengths, latent.bias, latent.tie_rate, latent.seed + 2),
                  orders=variant.orders, seed=latent.seed)
    t0 = time.perf_counter()
    results = arena.run_many(variant.topology, groups, step=0)
    seconds = time.perf_counter() - t0
    row = {"judge": judge, "k": k, "label": variant.label,
           "calls": np.mean([r.inferences for r in results]), "group_calls": np.mean([r.group_calls for r in results]),
           "matches": np.mean([len(r.matches) for r in results]),
           "rounds": np.mean([len({m.round for m in r.matches}) for r in results]),
           "info": pairwise.info / max(pairwise.asked, 1)}
    for name, shape in SHAPERS.items():
        rewards = np.stack([shape(r) for r in results])
        tau = kendall_tau_b(rewards, strengths)
        row[f"tau {name}"] = tau.mean()
        row[f"se {name}"] = tau.std(ddof=1) / np.sqrt(len(tau))
        row[f"top1 {name}"] = top1(rewards, strengths).mean()
        if name == "min-max":
            tau_a = kendall_tau_a(rewards, strengths)
            row["tau-a"], row["se tau-a"] = tau_a.mean(), tau_a.std(ddof=1) / np.sqrt(len(tau_a))
    row["seconds"] = time.perf_counter() - t0
    row["arena seconds"] = seconds
    return row
