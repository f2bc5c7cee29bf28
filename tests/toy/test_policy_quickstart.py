"""The policy quickstart runs end to end offline (small settings), reuses its stages, and its summary follows its
numbers."""

import json
import subprocess
import sys

import pytest

from toy.policy_quickstart import summary

pytestmark = pytest.mark.slow  # every test here builds or trains for seconds


SMALL = ["--n_questions", "16", "--samples_per_question", "4", "--sft_steps", "4", "--grpo_steps", "2",
         "--eval_samples", "2"]


def test_policy_quickstart_runs_and_reuses_stages(tmp_path):
    cmd = [sys.executable, "-m", "toy.policy_quickstart", "--out", str(tmp_path), *SMALL]
    first = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    assert first.returncode == 0, first.stderr[-3000:]
    assert "[5/5]" in first.stderr + first.stdout
    grpo = [json.loads(x) for x in (tmp_path / "data" / "grpo.jsonl").read_text().splitlines()]
    heldout = [json.loads(x) for x in (tmp_path / "data" / "heldout.jsonl").read_text().splitlines()]
    assert len(grpo) == len(heldout) == 8 and not {r["question"] for r in grpo} & {r["question"] for r in heldout}
    assert json.loads((tmp_path / "grpo" / "policy_run.json").read_text())["global_step"] == 2
    table = json.loads((tmp_path / "results.json").read_text())
    assert set(table) == {"grpo", "heldout"}
    for m in table.values():
        assert 0.0 <= m["ci"][0] <= m["win_rate"] <= m["ci"][1] <= 1.0
    again = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    assert again.returncode == 0 and "reusing GRPO of the policy" in again.stderr + again.stdout


def test_too_few_questions_for_a_step_is_an_error():
    from toy.policy_stages import PolicyQuickstartArguments

    with pytest.raises(ValueError, match="n_questions must be >= 16"):
        PolicyQuickstartArguments(n_questions=8)


def test_the_summary_says_what_the_interval_says():
    row = {"before": {}, "after": {}}
    text = summary({"grpo": {**row, "win_rate": 0.7, "ci": [0.62, 0.78]},
                    "heldout": {**row, "win_rate": 0.53, "ci": [0.47, 0.6]}})
    assert "grpo prompts the policy is better than its step-0 self (win rate 0.70; +15-point goal met)" in text
    assert "heldout prompts the policy is not distinguishable" in text and "goal NOT met" in text
