"""The tables and the plot of the tournament fidelity study (bench.tournament_sim): per topology, judge calls against
Kendall tau of its rewards to the latent ranking, the Pareto frontier of the pairwise topologies, the cheapest one
within a margin of round robin, and whether the best active variant at half its calls meets the goal. Rows are
`openrm.tournament.fidelity.measure_cell`'s dicts.
"""

from __future__ import annotations

from openrm.tournament.fidelity import SHAPERS
from openrm.tournament.simulation import JUDGES

SHAPES = tuple(SHAPERS)


def table(rows: list[dict]) -> str:
    """Every variant: judge calls (or group calls) per group, tau under each shaping, top-1 of its own scores and BT."""
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
