"""Tournament fidelity per judge call: latent strengths per candidate, a simulated judge (Bradley-Terry on them
plus a position bias and ties; or `--judges realistic`: noise that varies by pair and repeats, a bias that varies by
group, ties likelier between close candidates); per topology and reward shaping, judge calls, Kendall tau-b to the
latent ranking (with its standard error) and top-1 accuracy, and the Pareto frontier of tau against judge calls.

    .venv/bin/python -m bench.tournament_sim --groups 1000 --ks 4 8 16            # fidelity per judge call
    .venv/bin/python -m bench.tournament_sim --groups 1000 --ks 4 8 16 --judges simple realistic \
        --plot bench/tournament_pareto.png                                         # the Pareto tables
Runs the real `openrm.tournament` code (Arena, topologies, shaping); only the judge is simulated
(`openrm.tournament.simulation`). Cells are scored by `openrm.tournament.fidelity`, tabled by `bench.pareto`.
"""

from __future__ import annotations

import argparse
import logging
import os
import time
from concurrent.futures import ProcessPoolExecutor

# tiny BLAS calls inside scipy's L-BFGS-B: threads only add contention (12 ms -> 2.5 ms per fit on a busy machine)
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np
from scipy.stats import kendalltau

from bench import pareto
from openrm.tournament import (
    Active,
    Anchor,
    DoubleElimination,
    Live,
    MultiRound,
    RoundRobin,
    SeededSingleElimination,
    Swiss,
)
from openrm.tournament.fidelity import Latent, Variant, kendall_tau_b, measure_cell
from openrm.tournament.simulation import JUDGES

logger = logging.getLogger("tournament_sim")


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


def self_check() -> None:
    """The vectorised tau-b agrees with scipy's on tied and untied rows."""
    rng = np.random.default_rng(0)
    r = np.round(rng.normal(size=(50, 8)), 1)
    t = rng.normal(size=(50, 8))
    ours = kendall_tau_b(r, t)
    ref = np.array([kendalltau(a, b).statistic for a, b in zip(r, t, strict=True)])
    assert np.allclose(ours, ref), (ours[:5], ref[:5])


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
    latent = Latent(args.sigma, args.bias, args.tie_rate, args.seed)
    cells = [(j, k, args.groups, v, latent) for j in args.judges for k in args.ks for v in variants
             if not (isinstance(v.topology, MultiRound) and v.topology.group_size > k)]
    cells.sort(key=lambda c: -c[1] * (c[3].topology.matches(c[1]) if hasattr(c[3].topology, "matches") else 0))
    with ProcessPoolExecutor(args.workers) as pool:
        rows = []
        for row in pool.map(measure_cell, *zip(*cells, strict=True)):
            logger.warning("%s K=%d %-30s %.1fs", row["judge"], row["k"], row["label"], row["seconds"])
            rows.append(row)
    order = {(v.label, k): n for n, (k, v) in enumerate((k, v) for k in args.ks for v in variants)}
    rows.sort(key=lambda r: order[r["label"], r["k"]])
    for judge in args.judges:
        mine = [r for r in rows if r["judge"] == judge]
        print(f"### {judge} judge\n\n{pareto.table(mine)}\n\n{pareto.pareto_table(mine)}\n")
        for line in pareto.cheapest(mine, args.margin) + pareto.goal(mine, args.margin):
            print(f"- {line}")
        print()
    if args.plot:
        pareto.plot(rows, args.plot)
    print(f"{args.groups} groups per cell, sigma {args.sigma}, bias {args.bias}, tie rate {args.tie_rate}, "
          f"seed {args.seed}; {time.perf_counter() - t0:.0f} s")


if __name__ == "__main__":
    main()
