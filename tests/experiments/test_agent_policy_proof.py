"""experiments/agent_policy_proof.py: the table's hostile-kind cell and the measure's null distribution."""

from __future__ import annotations

import pytest

from toy.agent_task import ToyAgentTask
from toy.world import ToyWorld


@pytest.fixture(scope="module")
def task():
    return ToyAgentTask(ToyWorld(0))


def test_the_agent_tables_hostile_cell_shows_rare_kinds_and_the_quarters():
    from experiments.agent_policy_proof import hostile_cell

    rare = {"search_tag": [0.0104, 0.0], "refusal": [0.0, 0.0]}
    assert hostile_cell([{"hostile_first_last_quarter": rare}] + [{"hostile_first_last_quarter": {}}]) == \
        "search_tag 0.01 → 0.00"
    # averaged over three seeds one answer in ~300 is 0.003: shown, not rounded to a misleading 0.00
    runs = [{"hostile_first_last_quarter": rare}] + [{"hostile_first_last_quarter": {"search_tag": [0.0, 0.0]}}] * 2
    assert hostile_cell(runs) == "search_tag 0.003 → 0.00"
    assert hostile_cell([{"hostile_first_last_quarter": {"hedge": [0.0, 0.0]}}]) == "none seen"
    assert hostile_cell([{"hostile_first_last_quarter": {}}, {}]) == "not logged"


def test_the_null_is_measured_against_each_seeds_own_baseline_sample(task, tmp_path):
    """--null plays shared draws against one seed's baseline: a baseline that always states the truth wins every
    match, one that never does loses every match, so the two seeds' nulls sit at the two ends."""
    import argparse
    import json

    from experiments.agent_policy_proof import null_draws

    rows = task.rows("heldout")[:6]
    rival = {r["id"]: task._rivals[r["id"]][0] for r in rows}

    def samples(truthful: bool) -> list[list[dict]]:
        return [[{"answer": r["answer"] if truthful else rival[r["id"]], "searches": 1, "tokens": 3}] * 2
                for r in rows]

    warm = tmp_path / "warm"
    warm.mkdir()
    for name, truthful in (("s0", True), ("s1", False), ("null0", True), ("null1", False)):
        (warm / f"samples-heldout-2-{name}.json").write_text(json.dumps(samples(truthful)))
    args = argparse.Namespace(eval_prompts=6, eval_samples=2, out=tmp_path)
    lucky = null_draws(task, warm, args, {}, 2, 0)
    unlucky = null_draws(task, warm, args, {}, 2, 1)
    assert [d["win_rate"] for d in lucky["draws"]] == [0.5, 0.0]
    assert [d["win_rate"] for d in unlucky["draws"]] == [1.0, 0.5]
    assert (lucky["truth_base"], unlucky["truth_base"]) == (1.0, 0.0)
    assert json.loads((tmp_path / "null-6x2-s1.json").read_text())["win_rate_mean"] == 0.75

