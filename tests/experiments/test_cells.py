"""experiments/cells.py: a table cell over seeds, the hostile-kind cell, and a policy GRPO run's tournament
statistics from its trainer state."""

import json

import pytest

from experiments.cells import hostile_cell, hostile_quarters, mean_sd, tournament_stats


@pytest.mark.parametrize("values, digits, shown", [
    ([0.5, 0.7], 2, "0.60 ± 0.14"),
    ([0.25], 3, "0.250"),
    ([0.5, None, 0.7], 2, "0.60 ± 0.14"),  # a run that did not report the metric is left out
    ([None], 2, "-"),
    ([], 2, "-"),
])
def test_mean_sd_over_seeds(values, digits, shown):
    assert mean_sd(iter(values), digits) == shown


def test_tournament_stats_read_only_the_steps_that_logged_a_tournament(tmp_path):
    history = [{"step": 1, "tournament/judge_calls": 12, "tournament/tie_rate": 0.5},
               {"step": 1, "loss": 0.1},
               {"step": 2, "tournament/judge_calls": 6, "tournament/tie_rate": 0.0},
               {"train_runtime": 30.0}]
    (tmp_path / "trainer_state.json").write_text(json.dumps({"global_step": 2, "log_history": history}))
    assert tournament_stats(tmp_path) == {"judge_calls_per_step": 9.0, "tie_rate": 0.25, "seconds_per_step": 15.0,
                                          "steps": 2}


def test_the_agent_tables_hostile_cell_shows_rare_kinds_and_the_quarters():
    rare = {"search_tag": [0.0104, 0.0], "refusal": [0.0, 0.0]}
    assert hostile_cell([{"hostile_first_last_quarter": rare}] + [{"hostile_first_last_quarter": {}}]) == \
        "search_tag 0.01 → 0.00"
    # averaged over three seeds one answer in ~300 is 0.003: shown, not rounded to a misleading 0.00
    runs = [{"hostile_first_last_quarter": rare}] + [{"hostile_first_last_quarter": {"search_tag": [0.0, 0.0]}}] * 2
    assert hostile_cell(runs) == "search_tag 0.003 → 0.00"
    assert hostile_cell([{"hostile_first_last_quarter": {"hedge": [0.0, 0.0]}}]) == "none seen"
    assert hostile_cell([{"hostile_first_last_quarter": {}}, {}]) == "not logged"


def test_hostile_quarters_average_each_kind_over_the_first_and_the_last_quarter_of_the_steps(tmp_path):
    history = [{"step": s, "tournament/judge_calls": 6, **({"hostile/hedge": s / 10} if s != 2 else {})}
               for s in range(1, 9)]
    (tmp_path / "trainer_state.json").write_text(json.dumps({"global_step": 8, "log_history": history}))
    assert hostile_quarters(tmp_path) == {"hedge": [pytest.approx(0.05), pytest.approx(0.75)]}  # step 2: 0
