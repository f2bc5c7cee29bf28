"""experiments/learning_grid.py: the warm-ups before the cells, every cell once from the shared folder, the table
only when every cell finished."""

import threading

import pytest

from experiments import learning_grid


def recorded(monkeypatch, fail: str = ""):
    """Replace the runs by a recorder; a run whose log is named `fail` exits 1."""
    calls, lock = [], threading.Lock()

    def run_logged(command, log, threads):
        with lock:
            calls.append((command, None if log is None else log.stem, threads))
        return 1 if log is not None and log.stem == fail else 0

    monkeypatch.setattr(learning_grid, "run_logged", run_logged)
    return calls


def option(command: list[str], name: str) -> list[str]:
    """The words after `name` up to the next option, from its last occurrence (argparse's rule)."""
    at = len(command) - 1 - command[::-1].index(name)
    words = []
    for word in command[at + 1:]:
        if word.startswith("--"):
            break
        words.append(word)
    return words


def test_warm_ups_then_every_cell_then_the_table_over_all_of_them(tmp_path, monkeypatch):
    calls = recorded(monkeypatch)
    code = learning_grid.main(["--stage", "c", "--out", str(tmp_path), "--seeds", "0", "1", "--variants", "composite",
                               "em_only", "--parallel", "2", "--", "--bf16", "false", "--grpo-steps", "30"])
    assert code == 0
    parts = [log for _, log, _ in calls]
    assert parts[0] == "warm-up-s0" and parts[1] == "warm-up-s1"  # the first alone: it writes the data
    assert sorted(parts[2:-1]) == ["composite-s0", "composite-s1", "em_only-s0", "em_only-s1"]
    assert parts[-1] is None  # the table, on this command's output
    for command, _log, threads in calls:
        assert command[1:3] == ["-m", "experiments.learning_proof"] and option(command, "--out") == [str(tmp_path)]
        assert option(command, "--stage") == ["c"] and option(command, "--bf16") == ["false"]
        assert threads >= 1
    warm = {log: command for command, log, _ in calls if log and log.startswith("warm-up")}
    assert all(option(c, "--grpo-steps") == ["0"] for c in warm.values())  # overrides the passed 30
    assert option(warm["warm-up-s1"], "--seeds") == ["1"]
    cell = next(command for command, log, _ in calls if log == "em_only-s1")
    assert option(cell, "--seeds") == ["1"] and option(cell, "--variants") == ["em_only"]
    assert option(cell, "--grpo-steps") == ["30"]
    table = calls[-1][0]
    assert option(table, "--seeds") == ["0", "1"] and option(table, "--variants") == ["composite", "em_only"]


def test_a_failed_cell_stops_the_table_and_the_command_fails(tmp_path, monkeypatch, capsys):
    calls = recorded(monkeypatch, fail="em_only-s1")
    assert learning_grid.main(["--stage", "a", "--out", str(tmp_path), "--seeds", "0", "1",
                               "--variants", "composite", "em_only"]) == 1
    assert None not in [log for _, log, _ in calls] and len(calls) == 2 + 4
    assert "em_only-s1" in capsys.readouterr().err


def test_a_failed_warm_up_trains_no_cell(tmp_path, monkeypatch):
    calls = recorded(monkeypatch, fail="warm-up-s0")
    assert learning_grid.main(["--stage", "c", "--out", str(tmp_path), "--seeds", "0", "1", "2"]) == 1
    assert [log for _, log, _ in calls] == ["warm-up-s0"]


def test_stage_b_trains_composite_only(tmp_path, monkeypatch):
    calls = recorded(monkeypatch)
    assert learning_grid.main(["--stage", "b", "--out", str(tmp_path), "--seeds", "3"]) == 0
    assert [log for _, log, _ in calls] == ["warm-up-s3", "composite-s3", None]


@pytest.mark.parametrize("words", [["--", "--seeds", "4"], ["--", "--out=x"], ["--parallel", "0"],
                                   ["--seeds", "1", "1"]])
def test_the_commands_own_options_and_bad_counts_are_refused(tmp_path, monkeypatch, words):
    calls = recorded(monkeypatch)
    with pytest.raises(SystemExit):
        learning_grid.main(["--stage", "c", "--out", str(tmp_path), *words])
    assert calls == []
