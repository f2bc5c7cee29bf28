"""Tournament fidelity per judge call: latent strengths per candidate, a simulated judge that follows
Bradley-Terry on them plus a position bias and a tie rate; per topology and reward shaping, judge calls, Kendall
tau-b to the latent ranking and top-1 accuracy.

    .venv/bin/python bench/tournament_sim.py --groups 1000 --ks 4 8 16            # the RESULTS.md table
    .venv/bin/python bench/tournament_sim.py --groups 200 --ks 8 --bias 0.5 --tie-rate 0.3
Runs the real `openrm.tournament` code (Arena, topologies, shaping); only the judge is simulated.
"""

from __future__ import annotations

import argparse
import logging
import os
import time
from concurrent.futures import ProcessPoolExecutor

# tiny BLAS calls inside scipy's L-BFGS-B: threads only add contention (12 ms -> 2.5 ms per fit on a busy machine)
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
from dataclasses import dataclass

import numpy as np
from scipy.stats import kendalltau

from openrm.tournament import (
    Anchor,
    Arena,
    DoubleElimination,
    Group,
    GroupRequest,
    Live,
    MultiRound,
    RoundRobin,
    SeededSingleElimination,
    Swiss,
    bt_min_max,
    rank_z,
    tournament_reward,
    win_rate,
)

logger = logging.getLogger("tournament_sim")


class SimPairJudge:
    """One presentation order per item: P(x wins) = sigmoid(s_x - s_y + bias); a tie with probability
    `tie_rate`. Questions are group numbers, candidates their index, as strings."""

    orders = 1

    def __init__(self, strengths: np.ndarray, bias: float, tie_rate: float, seed: int):
        self.s, self.bias, self.tie_rate = strengths, bias, tie_rate
        self.rng = np.random.default_rng(seed)

    def compare_many(self, items):
        g = np.fromiter((int(q) for q, _, _ in items), np.int64, len(items))
        x = np.fromiter((int(a) for _, a, _ in items), np.int64, len(items))
        y = np.fromiter((int(b) for _, _, b in items), np.int64, len(items))
        p = 1 / (1 + np.exp(-(self.s[g, x] - self.s[g, y] + self.bias)))
        u, tie = self.rng.random(len(items)), self.rng.random(len(items)) < self.tie_rate
        return np.where(tie, 0.5, (u < p).astype(float)).tolist()


class SimGroupJudge:
    """Plackett-Luce top-k on the strengths (Gumbel trick), the first shown candidate getting the position bias;
    fails (no winners) with probability `tie_rate`."""

    def __init__(self, strengths: np.ndarray, bias: float, tie_rate: float, seed: int):
        self.s, self.bias, self.tie_rate = strengths, bias, tie_rate
        self.rng = np.random.default_rng(seed)

    def select_winners_many(self, requests: list[GroupRequest]):
        out = []
        for req in requests:
            if self.rng.random() < self.tie_rate:
                out.append([])
                continue
            util = self.s[int(req.question), [int(c) for c in req.candidates]].copy()
            util[0] += self.bias
            util += self.rng.gumbel(size=len(util))
            out.append(sorted(int(i) for i in np.argsort(-util)[:req.k]))
        return out


@dataclass(frozen=True)
class Variant:
    label: str
    topology: object
    orders: str = "both"


VARIANTS = [
    Variant("round_robin", RoundRobin()),
    Variant("round_robin (1 random order)", RoundRobin(), "random"),
    Variant("anchor", Anchor()),
    Variant("seeded_single_elimination", SeededSingleElimination()),
    Variant("double_elimination", DoubleElimination()),
    Variant("swiss", Swiss()),
    Variant("live", Live()),
    Variant("live (1 random order)", Live(), "random"),
    Variant("multi_round G2 M1", MultiRound(2, 1, 1, 1)),
    Variant("multi_round G2 M3", MultiRound(2, 1, 1, 3)),
    Variant("multi_round G4 K2 M1", MultiRound(4, 2, 2, 1)),
    Variant("multi_round G4 K2 M3", MultiRound(4, 2, 2, 3)),
]
SHAPERS = {"min-max": tournament_reward, "rank-z": rank_z, "win rate": win_rate, "BT": bt_min_max}


def kendall_tau_b(rewards: np.ndarray, truth: np.ndarray) -> np.ndarray:
    """tau-b of each row of rewards [G, K] against truth [G, K] (truth without ties); 0 for a constant row."""
    dr = np.sign(rewards[:, :, None] - rewards[:, None, :])  # [G, K, K]
    dt = np.sign(truth[:, :, None] - truth[:, None, :])
    iu = np.triu_indices(rewards.shape[1], 1)
    dr, dt = dr[:, iu[0], iu[1]], dt[:, iu[0], iu[1]]  # [G, P]
    num = (dr * dt).sum(1)
    den = np.sqrt((dr != 0).sum(1) * (dt != 0).sum(1))
    return np.where(den > 0, num / np.maximum(den, 1e-12), 0.0)


def top1(rewards: np.ndarray, truth: np.ndarray) -> np.ndarray:
    """Chance that the top reward is the latent best, ties at the top broken uniformly."""
    top = np.isclose(rewards, rewards.max(1, keepdims=True), rtol=0, atol=1e-9)
    best = truth.argmax(1)
    return top[np.arange(len(best)), best] / top.sum(1)


def run_cell(k: int, n_groups: int, variant: Variant, args) -> dict:
    rng = np.random.default_rng([args.seed, k])
    strengths = rng.normal(0.0, args.sigma, size=(n_groups, k))
    groups = [Group(str(g), tuple(str(c) for c in range(k)), group_id=g) for g in range(n_groups)]
    arena = Arena(SimPairJudge(strengths, args.bias, args.tie_rate, args.seed + 1),
                  SimGroupJudge(strengths, args.bias, args.tie_rate, args.seed + 2), orders=variant.orders,
                  seed=args.seed)
    t0 = time.perf_counter()
    results = arena.run_many(variant.topology, groups, step=0)
    seconds = time.perf_counter() - t0
    row = {"k": k, "label": variant.label,
           "calls": np.mean([r.inferences for r in results]), "group_calls": np.mean([r.group_calls for r in results]),
           "matches": np.mean([len(r.matches) for r in results])}
    for name, shape in SHAPERS.items():
        rewards = np.stack([shape(r) for r in results])
        row[f"tau {name}"] = kendall_tau_b(rewards, strengths).mean()
        row[f"top1 {name}"] = top1(rewards, strengths).mean()
    row["seconds"] = time.perf_counter() - t0
    row["arena seconds"] = seconds
    return row


def self_check() -> None:
    """The vectorised tau-b agrees with scipy's on tied and untied rows."""
    rng = np.random.default_rng(0)
    r = np.round(rng.normal(size=(50, 8)), 1)
    t = rng.normal(size=(50, 8))
    ours = kendall_tau_b(r, t)
    ref = np.array([kendalltau(a, b).statistic for a, b in zip(r, t, strict=True)])
    assert np.allclose(ours, ref), (ours[:5], ref[:5])


def table(rows: list[dict]) -> str:
    head = ("| K | topology | judge calls / group | τ min-max | τ rank-z | τ win rate | τ BT | top-1 score | "
            "top-1 BT |\n|---|---|---|---|---|---|---|---|---|")
    lines = [head]
    for r in rows:
        calls = f"{r['calls']:.1f}" if r["group_calls"] == 0 else f"{r['group_calls']:.1f} group calls"
        lines.append(f"| {r['k']} | {r['label']} | {calls} | {r['tau min-max']:.3f} | {r['tau rank-z']:.3f} | "
                     f"{r['tau win rate']:.3f} | {r['tau BT']:.3f} | {r['top1 min-max']:.3f} | {r['top1 BT']:.3f} |")
    return "\n".join(lines)


def cheapest(rows: list[dict], margin: float) -> list[str]:
    """Per K, the pairwise topology with the fewest judge calls whose best shaping is within `margin` tau of
    round robin's native win-rate score."""
    out = []
    for k in sorted({r["k"] for r in rows}):
        cell = [r for r in rows if r["k"] == k]
        gold = next(r for r in cell if r["label"] == "round_robin")["tau min-max"]
        ok = []
        for r in cell:
            if r["group_calls"]:
                continue
            best = max(("min-max", "rank-z", "win rate", "BT"), key=lambda s: r[f"tau {s}"])
            if r[f"tau {best}"] >= gold - margin:
                ok.append((r["calls"], -r[f"tau {best}"], r["label"], best))
        calls, neg_tau, label, shaping = min(ok)  # equal cost: the higher tau
        tau = -neg_tau
        out.append(f"K={k}: {label} with {shaping} shaping, {calls:.1f} judge calls, τ {tau:.3f} "
                   f"(round robin τ {gold:.3f})")
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--groups", type=int, default=1000)
    ap.add_argument("--ks", type=int, nargs="+", default=[4, 8, 16])
    ap.add_argument("--sigma", type=float, default=1.0, help="std of the latent log-strengths")
    ap.add_argument("--bias", type=float, default=0.3, help="logit bonus of the first-shown candidate")
    ap.add_argument("--tie-rate", type=float, default=0.1, help="chance a judge run gives no winner")
    ap.add_argument("--margin", type=float, default=0.02)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--workers", type=int, default=2, help="processes (one cell each)")
    args = ap.parse_args()
    logging.basicConfig(level=logging.WARNING, format="%(message)s")
    self_check()
    t0 = time.perf_counter()
    cells = [(k, args.groups, v, args) for k in args.ks for v in VARIANTS
             if not (isinstance(v.topology, MultiRound) and v.topology.group_size > k)]
    with ProcessPoolExecutor(args.workers) as pool:
        rows = []
        for row in pool.map(run_cell, *zip(*cells, strict=True)):
            logger.warning("K=%d %-30s %.1fs", row["k"], row["label"], row["seconds"])
            rows.append(row)
    print(table(rows))
    print()
    for line in cheapest(rows, args.margin):
        print(f"- {line}")
    print(f"\n{args.groups} groups per cell, sigma {args.sigma}, bias {args.bias}, tie rate {args.tie_rate}, "
          f"seed {args.seed}; {time.perf_counter() - t0:.0f} s")


if __name__ == "__main__":
    main()
