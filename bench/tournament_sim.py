"""Tournament fidelity per judge call: latent strengths per candidate, a simulated judge (Bradley-Terry on them
plus a position bias and ties; or `--judges realistic`: noise that varies by pair and repeats, a bias that varies by
group, ties likelier between close candidates); per topology and reward shaping, judge calls, Kendall tau-b to the
latent ranking (with its standard error) and top-1 accuracy, and the Pareto frontier of tau against judge calls.

    .venv/bin/python -m bench.tournament_sim --groups 1000 --ks 4 8 16            # fidelity per judge call
    .venv/bin/python -m bench.tournament_sim --groups 1000 --ks 4 8 16 --judges simple realistic \
        --plot bench/tournament_pareto.png                                         # the Pareto tables
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
    Active,
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
    `tie_rate`. Questions are group numbers, candidates their index, as strings. `info` sums p(1-p) over the items
    asked: the Fisher information they carry about the strengths (a call can carry at most 1/4)."""

    orders = 1

    def __init__(self, strengths: np.ndarray, bias: float, tie_rate: float, seed: int):
        self.s, self.bias, self.tie_rate = strengths, bias, tie_rate
        self.rng = np.random.default_rng(seed)
        self.info, self.asked = 0.0, 0

    def logits(self, g, x, y) -> np.ndarray:
        return self.s[g, x] - self.s[g, y] + self.bias

    def tie_chance(self, g, x, y) -> np.ndarray:
        return np.full(len(g), self.tie_rate)

    def compare_many(self, items):
        g = np.fromiter((int(q) for q, _, _ in items), np.int64, len(items))
        x = np.fromiter((int(a) for _, a, _ in items), np.int64, len(items))
        y = np.fromiter((int(b) for _, _, b in items), np.int64, len(items))
        p = 1 / (1 + np.exp(-self.logits(g, x, y)))
        tie_p = self.tie_chance(g, x, y)
        self.info += float(np.sum((1 - tie_p) * p * (1 - p)))
        self.asked += len(items)
        u, tie = self.rng.random(len(items)), self.rng.random(len(items)) < tie_p
        return np.where(tie, 0.5, (u < p).astype(float)).tolist()


class RealisticPairJudge(SimPairJudge):
    """A judge whose noise varies by pair: logit = a_xy (s_x - s_y) + e_xy + b_g, with a per-pair discrimination
    a_xy = exp(N(0, 0.5)), a per-pair error e_xy ~ N(0, 0.5) that repeats in both orders and on every replay
    (e_yx = -e_xy: the judge misreads that pair), a per-group position bias b_g ~ N(bias, 0.2), and a tie chance
    2.5 x tie_rate x exp(-|s_x - s_y|) (about tie_rate on average; likelier between close candidates)."""

    def __init__(self, strengths: np.ndarray, bias: float, tie_rate: float, seed: int):
        super().__init__(strengths, bias, tie_rate, seed)
        g, k = strengths.shape
        rng = np.random.default_rng([seed, 19])
        upper = np.triu(np.ones((k, k), dtype=bool), 1)
        a, e = np.exp(rng.normal(0, 0.5, (g, k, k))), rng.normal(0, 0.5, (g, k, k))
        self.a = np.where(upper, a, np.swapaxes(a, 1, 2))  # [G, K, K] symmetric
        self.e = np.where(upper, e, -np.swapaxes(e, 1, 2))  # [G, K, K] antisymmetric
        self.b = rng.normal(bias, 0.2, g)  # [G]

    def logits(self, g, x, y) -> np.ndarray:
        return self.a[g, x, y] * (self.s[g, x] - self.s[g, y]) + self.e[g, x, y] + self.b[g]

    def tie_chance(self, g, x, y) -> np.ndarray:
        return np.minimum(1.0, 2.5 * self.tie_rate * np.exp(-np.abs(self.s[g, x] - self.s[g, y])))


JUDGES = {"simple": SimPairJudge, "realistic": RealisticPairJudge}


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


def active_variants() -> list[Variant]:
    """Active at shares of round robin's judge calls: both orders (2 calls a match, share s of the pairs) and one
    order shown as listed with the position bias fitted (1 call a match, so 2s of the pairs); the issue's
    p(1-p)/(1+n) rule at half the calls as the baseline."""
    out = []
    for pct in (25, 37.5, 50, 62.5, 75):
        out.append(Variant(f"active {pct:g}%", Active(share=pct / 100)))
    for pct in (25, 37.5, 50, 62.5, 75, 100):
        out.append(Variant(f"active 1 order {pct:g}%", Active(share=pct / 50, one_order=True), "given"))
    out.append(Variant("active closeness 50%", Active(share=0.5, rule="closeness")))
    out.append(Variant("active 1 order closeness 50%", Active(share=1.0, rule="closeness", one_order=True),
                       "given"))
    return out


VARIANTS = [
    Variant("round_robin", RoundRobin()),
    Variant("round_robin (1 random order)", RoundRobin(), "random"),
    Variant("anchor", Anchor()),
    # the rows of bench/RESULTS.md: the eliminations by net wins, Swiss by the Buchholz mean, cached repeats
    Variant("seeded_single_elimination", SeededSingleElimination(rank_by="net_wins")),
    Variant("double_elimination", DoubleElimination(rank_by="net_wins")),
    Variant("swiss", Swiss(buchholz="mean")),
    Variant("live", Live()),
    Variant("live (1 random order)", Live(), "random"),
    Variant("multi_round G2 M1", MultiRound(2, 1, 1, 1, fresh_repeats=False)),
    Variant("multi_round G2 M3", MultiRound(2, 1, 1, 3, fresh_repeats=False)),
    Variant("multi_round G4 K2 M1", MultiRound(4, 2, 2, 1, fresh_repeats=False)),
    Variant("multi_round G4 K2 M3", MultiRound(4, 2, 2, 3, fresh_repeats=False)),
    *active_variants(),
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


def run_cell(judge: str, k: int, n_groups: int, variant: Variant, args) -> dict:
    rng = np.random.default_rng([args.seed, k])
    strengths = rng.normal(0.0, args.sigma, size=(n_groups, k))
    groups = [Group(str(g), tuple(str(c) for c in range(k)), group_id=g) for g in range(n_groups)]
    pairwise = JUDGES[judge](strengths, args.bias, args.tie_rate, args.seed + 1)
    arena = Arena(pairwise, SimGroupJudge(strengths, args.bias, args.tie_rate, args.seed + 2),
                  orders=variant.orders, seed=args.seed)
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


def self_check() -> None:
    """The vectorised tau-b agrees with scipy's on tied and untied rows."""
    rng = np.random.default_rng(0)
    r = np.round(rng.normal(size=(50, 8)), 1)
    t = rng.normal(size=(50, 8))
    ours = kendall_tau_b(r, t)
    ref = np.array([kendalltau(a, b).statistic for a, b in zip(r, t, strict=True)])
    assert np.allclose(ours, ref), (ours[:5], ref[:5])


SHAPES = ("min-max", "rank-z", "win rate", "BT")


def table(rows: list[dict]) -> str:
    head = ("| K | topology | judge calls / group | τ min-max | τ rank-z | τ win rate | τ BT | top-1 score | "
            "top-1 BT |\n|---|---|---|---|---|---|---|---|---|")
    lines = [head]
    for r in rows:
        calls = f"{r['calls']:.1f}" if r["group_calls"] == 0 else f"{r['group_calls']:.1f} group calls"
        lines.append(f"| {r['k']} | {r['label']} | {calls} | {r['tau min-max']:.3f} | {r['tau rank-z']:.3f} | "
                     f"{r['tau win rate']:.3f} | {r['tau BT']:.3f} | {r['top1 min-max']:.3f} | {r['top1 BT']:.3f} |")
    return "\n".join(lines)


def on_frontier(r: dict, cell: list[dict]) -> bool:
    """No other pairwise variant is as cheap and better, or cheaper and as good (tau of its own scores)."""
    return not any(o is not r and o["calls"] <= r["calls"] and o["tau min-max"] >= r["tau min-max"]
                   and (o["calls"] < r["calls"] or o["tau min-max"] > r["tau min-max"]) for o in cell)


def pareto_table(rows: list[dict]) -> str:
    """Pairwise variants by judge calls: tau-b of the topology's own scores ± its standard error over groups, tau-a
    (ties split by a coin), the best shaping's tau-b, the Fisher information per call (max 0.25), rounds (judge
    batches), and the frontier (by tau-b)."""
    lines = ["| K | topology | judge calls | % of round robin | τ ± se | τ-a ± se | best shaping τ | top-1 | "
             "info / call | rounds | Pareto |", "|---|---|---|---|---|---|---|---|---|---|---|"]
    for k in sorted({r["k"] for r in rows}):
        cell = sorted((r for r in rows if r["k"] == k and not r["group_calls"]), key=lambda r: (r["calls"], r["label"]))
        gold = next(r for r in cell if r["label"] == "round_robin")["calls"]
        for r in cell:
            best = max(SHAPES, key=lambda name: r[f"tau {name}"])
            lines.append(f"| {k} | {r['label']} | {r['calls']:.1f} | {100 * r['calls'] / gold:.0f}% | "
                         f"{r['tau min-max']:.3f} ± {r['se min-max']:.3f} | {r['tau-a']:.3f} ± {r['se tau-a']:.3f} | "
                         f"{r[f'tau {best}']:.3f} ({best}) | "
                         f"{r['top1 min-max']:.3f} | {r['info']:.3f} | {r['rounds']:.1f} | "
                         f"{'●' if on_frontier(r, cell) else ''} |")
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
            best = max(SHAPES, key=lambda s: r[f"tau {s}"])
            if r[f"tau {best}"] >= gold - margin:
                ok.append((r["calls"], -r[f"tau {best}"], r["label"], best))
        calls, neg_tau, label, shaping = min(ok)  # equal cost: the higher tau
        tau = -neg_tau
        out.append(f"K={k}: {label} with {shaping} shaping, {calls:.1f} judge calls, τ {tau:.3f} "
                   f"(round robin τ {gold:.3f})")
    return out


def goal(rows: list[dict], margin: float) -> list[str]:
    """The goal per K: the best active variant at <= half of round robin's calls against round robin."""
    out = []
    for k in sorted({r["k"] for r in rows}):
        cell = [r for r in rows if r["k"] == k]
        rr = next(r for r in cell if r["label"] == "round_robin")
        half = [r for r in cell if r["label"].startswith("active") and r["calls"] <= rr["calls"] / 2]
        if not half:
            continue
        a = max(half, key=lambda r: r["tau min-max"])
        gap = rr["tau min-max"] - a["tau min-max"]
        out.append(f"K={k}: {a['label']} τ {a['tau min-max']:.3f} ± {a['se min-max']:.3f} at {a['calls']:.0f} calls "
                   f"vs round robin {rr['tau min-max']:.3f} ± {rr['se min-max']:.3f} at {rr['calls']:.0f}: "
                   f"{gap:+.3f} short, goal (≤ {margin}) {'met' if gap <= margin else 'not met'}")
    return out


def plot(rows: list[dict], path: str) -> None:
    """τ of the topology's own scores against judge calls, one panel per (judge, K): pairwise topologies as points,
    active as lines (both orders, one order with the bias fitted), round robin's τ - 0.02 and half its calls."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    judges, ks = sorted({r["judge"] for r in rows}, key=list(JUDGES).index), sorted({r["k"] for r in rows})
    fig, axes = plt.subplots(len(judges), len(ks), figsize=(4.2 * len(ks), 3.4 * len(judges)), squeeze=False)
    lines = {"active": ("active ", "C3"), "active 1 order": ("active 1 order ", "C0")}
    for (jn, judge), (kn, k) in ((a, b) for a in enumerate(judges) for b in enumerate(ks)):
        ax = axes[jn][kn]
        cell = [r for r in rows if r["judge"] == judge and r["k"] == k and not r["group_calls"]]
        rr = next(r for r in cell if r["label"] == "round_robin")
        for name, (prefix, color) in lines.items():
            pts = sorted((r for r in cell if r["label"].startswith(prefix) and "closeness" not in r["label"]
                          and r["label"][len(prefix):][0].isdigit()), key=lambda r: r["calls"])
            ax.errorbar([r["calls"] for r in pts], [r["tau min-max"] for r in pts],
                        [r["se min-max"] for r in pts], color=color, marker="o", ms=3, label=name)
        for r in cell:
            if r["label"].startswith("active") and "closeness" not in r["label"]:
                continue
            ax.errorbar(r["calls"], r["tau min-max"], r["se min-max"], fmt="s" if "round_robin" in r["label"] else
                        "^" if "closeness" in r["label"] else ".", color="k" if "round_robin" in r["label"] else
                        "C2" if "closeness" in r["label"] else "0.5", ms=5)
            ax.annotate(r["label"].replace("active ", "").replace("round_robin", "RR"), (r["calls"], r["tau min-max"]),
                        fontsize=6, xytext=(3, -3), textcoords="offset points")
        ax.axhline(rr["tau min-max"] - 0.02, color="k", ls="--", lw=0.7)
        ax.axvline(rr["calls"] / 2, color="k", ls=":", lw=0.7)
        ax.set_title(f"{judge} judge, K={k}", fontsize=9)
        ax.set_xlabel("judge calls per group", fontsize=8)
        ax.set_ylabel("Kendall τ (own scores)", fontsize=8)
        ax.tick_params(labelsize=7)
    axes[0][0].legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    fig.savefig(path, dpi=90)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--groups", type=int, default=1000)
    ap.add_argument("--ks", type=int, nargs="+", default=[4, 8, 16])
    ap.add_argument("--judges", nargs="+", default=["simple"], choices=list(JUDGES))
    ap.add_argument("--sigma", type=float, default=1.0, help="std of the latent log-strengths")
    ap.add_argument("--bias", type=float, default=0.3, help="logit bonus of the first-shown candidate")
    ap.add_argument("--tie-rate", type=float, default=0.1, help="chance a judge run gives no winner")
    ap.add_argument("--margin", type=float, default=0.02)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--only", default="", help="run only the variants whose label contains this (with round_robin)")
    ap.add_argument("--plot", default="", help="write the Pareto plot (PNG) here")
    ap.add_argument("--workers", type=int, default=2, help="processes (one cell each)")
    args = ap.parse_args()
    logging.basicConfig(level=logging.WARNING, format="%(message)s")
    self_check()
    t0 = time.perf_counter()
    variants = [v for v in VARIANTS if args.only in v.label or v.label == "round_robin"]
    cells = [(j, k, args.groups, v, args) for j in args.judges for k in args.ks for v in variants
             if not (isinstance(v.topology, MultiRound) and v.topology.group_size > k)]
    cells.sort(key=lambda c: -c[1] * (c[3].topology.matches(c[1]) if hasattr(c[3].topology, "matches") else 0))
    with ProcessPoolExecutor(args.workers) as pool:
        rows = []
        for row in pool.map(run_cell, *zip(*cells, strict=True)):
            logger.warning("%s K=%d %-30s %.1fs", row["judge"], row["k"], row["label"], row["seconds"])
            rows.append(row)
    order = {(v.label, k): n for n, (k, v) in enumerate((k, v) for k in args.ks for v in variants)}
    rows.sort(key=lambda r: order[r["label"], r["k"]])
    for judge in args.judges:
        mine = [r for r in rows if r["judge"] == judge]
        print(f"### {judge} judge\n\n{table(mine)}\n\n{pareto_table(mine)}\n")
        for line in cheapest(mine, args.margin) + goal(mine, args.margin):
            print(f"- {line}")
        print()
    if args.plot:
        plot(rows, args.plot)
    print(f"{args.groups} groups per cell, sigma {args.sigma}, bias {args.bias}, tie rate {args.tie_rate}, "
          f"seed {args.seed}; {time.perf_counter() - t0:.0f} s")


if __name__ == "__main__":
    main()
