"""The Pareto reading of the tournament fidelity study: the frontier, the cheapest topology within a margin of round
robin, and the goal line for the best active variant at half its calls."""

from __future__ import annotations

from bench.pareto import cheapest, goal, on_frontier, pareto_table

SHAPED = ("min-max", "rank-z", "win rate", "BT")


def row(label, calls, tau, k=4, best=None, group_calls=0.0):
    out = {"judge": "simple", "k": k, "label": label, "calls": calls, "group_calls": group_calls, "rounds": 1.0,
           "info": 0.2, "tau-a": tau, "se tau-a": 0.01}
    for name in SHAPED:
        out[f"tau {name}"] = best if best is not None and name == "BT" else tau
        out[f"se {name}"] = 0.01
        out[f"top1 {name}"] = 0.5
    return out


ROWS = [row("round_robin", 12, 0.80), row("swiss", 8, 0.70, best=0.79), row("anchor", 6, 0.60),
        row("active 50%", 6, 0.79), row("multi_round G2 M1", 2, 0.9, group_calls=3.0)]


def test_the_frontier_keeps_only_rows_nothing_beats_on_both_cost_and_tau():
    cell = [r for r in ROWS if not r["group_calls"]]
    assert [r["label"] for r in cell if on_frontier(r, cell)] == ["round_robin", "active 50%"]
    assert "| 4 | active 50% | 6.0 | 50% | 0.790 ± 0.010 |" in pareto_table(ROWS)


def test_cheapest_within_the_margin_takes_the_best_shaping_and_ignores_group_calls():
    assert cheapest(ROWS, 0.02) == ["K=4: active 50% with min-max shaping, 6.0 judge calls, τ 0.790 "
                                    "(round robin τ 0.800)"]


def test_the_goal_is_met_within_the_margin_at_half_round_robins_calls():
    assert goal(ROWS, 0.02)[0].endswith("+0.010 short, goal (≤ 0.02) met")
    assert goal(ROWS, 0.005)[0].endswith("goal (≤ 0.005) not met")
