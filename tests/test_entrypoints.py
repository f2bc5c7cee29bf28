"""Every command-line entry point answers `--help` with its usage and exit status 0 (argparse %-formats help
strings, so one bare `%` in a field's help crashes `--help`). Entry points are found, not listed, so a new one is
covered without editing this file."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("train", "eval", "retrieval", "data_synthesis", "toy", "bench")
MAIN = re.compile(r"^if __name__ == [\"']__main__[\"']:", re.MULTILINE)


def entry_points() -> list[str]:
    found = []
    for package in PACKAGES:
        for path in sorted((ROOT / package).glob("*.py")):
            if MAIN.search(path.read_text(encoding="utf-8")):
                found.append(f"{package}.{path.stem}")
    return found


def test_the_known_entry_points_are_found():
    found = set(entry_points())
    assert {"eval.run", "eval.report", "eval.best_of_n", "toy.candidates", "eval.downstream",
            "eval.benchmark_files", "train.grpo_openrm", "train.select_preferences", "train.dpo",
            "retrieval.server", "retrieval.build_index", "data_synthesis.build_dataset", "train.grpo_rubric_generator",
            "toy.rubric_quickstart", "eval.rubrics", "bench.rubric_learning_proof"} <= found


@pytest.mark.parametrize("module", entry_points())
@pytest.mark.slow
def test_help_exits_cleanly_with_usage(module, tmp_path):
    proc = subprocess.run([sys.executable, "-m", module, "--help"], cwd=ROOT, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "usage:" in proc.stdout and "--help" in proc.stdout
    assert "Traceback" not in proc.stderr
