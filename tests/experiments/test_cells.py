"""experiments/cells.py: a table cell over seeds, and a policy GRPO run's tournament statistics from its trainer
state."""

import json

import pytest

from experiments.cells import mean_sd, tournament_stats


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
