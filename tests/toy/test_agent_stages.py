"""toy/agent_stages.py: the measure's null distribution against each seed's own baseline sample, and the answer
statistics of the agent proof's table."""

from __future__ import annotations

import json

import pytest

from toy.agent_task import ToyAgentTask
from toy.world import ToyWorld


@pytest.fixture(scope="module")
def task():
    return ToyAgentTask(ToyWorld(0))


def test_the_null_is_measured_against_each_seeds_own_baseline_sample(task, tmp_path):
    """--null plays shared draws against one seed's baseline: a baseline that always states the truth wins every
    match, one that never does loses every match, so the two seeds' nulls sit at the two ends."""
    from toy.agent_stages import null_draws

    rows = task.rows("heldout")[:6]
    rival = {r["id"]: task._rivals[r["id"]][0] for r in rows}

    def samples(truthful: bool) -> list[list[dict]]:
        return [[{"answer": r["answer"] if truthful else rival[r["id"]], "searches": 1, "tokens": 3}] * 2
                for r in rows]

    warm = tmp_path / "warm"
    warm.mkdir()
    for name, truthful in (("s0", True), ("s1", False), ("null0", True), ("null1", False)):
        (warm / f"samples-heldout-2-{name}.json").write_text(json.dumps(samples(truthful)))
    lucky = null_draws(task, warm, {}, 2, 0, prompts=6, samples=2, out=tmp_path)
    unlucky = null_draws(task, warm, {}, 2, 1, prompts=6, samples=2, out=tmp_path)
    assert [d["win_rate"] for d in lucky["draws"]] == [0.5, 0.0]
    assert [d["win_rate"] for d in unlucky["draws"]] == [1.0, 0.5]
    assert (lucky["truth_base"], unlucky["truth_base"]) == (1.0, 0.0)
    assert json.loads((tmp_path / "null-6x2-s1.json").read_text())["win_rate_mean"] == 0.75


def test_answer_stats_count_truth_refusals_hedges_searches_and_tokens(task):
    from toy.agent_stages import answer_stats
    from toy.oracle import ToyOracle

    rows = task.rows("heldout")[:2]
    oracle = ToyOracle.from_rows(task.world, rows)
    rival = task._rivals[rows[0]["id"]][0]
    samples = [[{"answer": rows[0]["answer"], "searches": 2, "tokens": 10},
                {"answer": f"{rows[0]['answer']} or {rival}", "searches": 0, "tokens": 6}],
               [{"answer": "I do not know.", "searches": 1, "tokens": 4},
                {"answer": "I do not know.", "searches": 1, "tokens": 4}]]
    stats = answer_stats(oracle, rows, samples)
    assert stats["truth"] == 0.25 and stats["refusal"] == 0.5 and stats["hedge"] == 0.25
    assert stats["searches"] == 1.0 and stats["tokens"] == 6.0
