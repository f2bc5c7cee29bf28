"""experiments/processes.py: a run's exit code comes back, its output is appended to its log, and its thread count
is the caller's unless the environment already sets one."""

import sys

from experiments.processes import run_logged


def test_a_run_appends_to_its_log_and_returns_its_exit_code(tmp_path, monkeypatch):
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    log = tmp_path / "logs" / "cell.log"
    show = "import os, sys; print('threads', os.environ['OMP_NUM_THREADS']); sys.exit(int(sys.argv[1]))"
    assert run_logged([sys.executable, "-c", show, "0"], log, threads=3) == 0
    assert run_logged([sys.executable, "-c", show, "4"], log, threads=5) == 4  # a failure is reported, not raised
    assert log.read_text().splitlines() == ["threads 3", "threads 5"]  # a rerun keeps the earlier lines
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    assert run_logged([sys.executable, "-c", show, "0"], log, threads=8) == 0
    assert log.read_text().splitlines()[-1] == "threads 1"


def test_without_a_log_the_output_is_the_callers(tmp_path, capfd):
    assert run_logged([sys.executable, "-c", "print('table')"], None, threads=1) == 0
    assert "table" in capfd.readouterr().out
