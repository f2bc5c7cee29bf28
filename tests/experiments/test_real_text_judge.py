"""experiments/real_text_judge.py: a model trained elsewhere is judged as it is, never trained again."""

import sys

import pytest

from experiments import real_text_judge


@pytest.mark.parametrize("extra, reason", [
    (["--grpo-steps", "5"], "no --grpo-steps"),
    (["--rows", "warm-up"], "only the rows of 'after GRPO'"),
    (["--rows", "after GRPO", "zero-shot"], "only the rows of 'after GRPO'"),
])
def test_a_judge_from_elsewhere_is_not_trained_or_judged_as_another_row(tmp_path, monkeypatch, capsys, extra,
                                                                         reason):
    monkeypatch.setattr(sys, "argv", ["real_text_judge", "--out", str(tmp_path / "out"), "--judge",
                                      str(tmp_path / "judge"), *extra])
    with pytest.raises(SystemExit) as exc:
        real_text_judge.main()
    assert exc.value.code == 2
    assert reason in capsys.readouterr().err
    assert not (tmp_path / "out").exists()  # refused before any stage ran
