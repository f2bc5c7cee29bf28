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
PACKAGES = ("train", "eval", "retrieval", "data_synthesis", "toy", "bench", "experiments")
MAIN = re.compile(r"^if __name__ == [\"']__main__[\"']:", re.MULTILINE)
SHIM = re.compile(r"sys\.path\.insert\(0, str\(Path\(__file__\)")  # a script making its repository importable


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
            "toy.rubric_quickstart", "eval.rubrics", "experiments.rubric_learning_proof", "experiments.learning_proof",
            "bench.parse_reward", "bench.rollout"} <= found


@pytest.mark.parametrize("module", entry_points())
@pytest.mark.slow
def test_help_exits_cleanly_with_usage(module, tmp_path):
    proc = subprocess.run([sys.executable, "-m", module, "--help"], cwd=ROOT, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "usage:" in proc.stdout and "--help" in proc.stdout
    assert "Traceback" not in proc.stderr


# the trainers the README launches by file (`accelerate launch train/grpo_openrm.py ...`): the installed package, not a
# path shim, makes `train.*` importable from there
LAUNCHED_AS_FILES = ("train/grpo_openrm.py", "train/grpo_policy.py", "train/grpo_rubric_generator.py", "train/dpo.py")


@pytest.mark.parametrize("script", LAUNCHED_AS_FILES)
@pytest.mark.slow
def test_a_trainer_runs_as_a_file_from_another_folder(script, tmp_path):
    proc = subprocess.run([sys.executable, str(ROOT / script), "--help"], cwd=tmp_path, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "usage:" in proc.stdout


def test_no_script_puts_the_repository_on_its_import_path():
    shims = [p.relative_to(ROOT).as_posix() for package in PACKAGES for p in sorted((ROOT / package).glob("*.py"))
             if SHIM.search(p.read_text(encoding="utf-8"))]
    assert not shims, f"run these with `python -m` (the package is installed) instead of editing sys.path: {shims}"


LIBRARY_PACKAGES = ("openrm", "retrieval", "plumbing")  # library modules that may keep a short `python -m` tail


def imported_modules(path: Path) -> set[str]:
    """Every module `path` imports, at any depth of its code: `import a.b`, `from a import b` (a.b when b is a module)
    and `from a.b import c`."""
    import ast

    names = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names |= {node.module} | {f"{node.module}.{a.name}" for a in node.names}
    return names


def test_no_module_imports_an_entry_point():
    """Scripts are leaves: what another module needs lives in a library module, and a command-line module only parses
    its flags and calls it. Tests may import entry points (they run them)."""
    entries = {m for m in entry_points() if m.split(".")[0] not in LIBRARY_PACKAGES}
    offenders = {}
    for package in (*PACKAGES, *LIBRARY_PACKAGES):
        for path in sorted((ROOT / package).rglob("*.py")):
            module = ".".join(path.relative_to(ROOT).with_suffix("").parts)
            hits = sorted((imported_modules(path) & entries) - {module})
            if hits:
                offenders[module] = hits
    assert not offenders, offenders


def test_the_entry_point_check_sees_an_import(tmp_path):
    source = tmp_path / "m.py"
    source.write_text("def f():\n    from eval.run import main\n    import train.dpo\n    from toy import quickstart\n")
    assert {"eval.run", "train.dpo", "toy.quickstart"} <= imported_modules(source)


MAX_CODE_LINES = 200  # an entry point reads like a story; the work lives in library modules


def code_lines(text: str) -> int:
    """Lines that are neither blank nor only a comment (a docstring's lines count)."""
    return sum(1 for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#"))


def test_every_entry_point_is_short():
    long = {m: n for m in entry_points() if m.split(".")[0] not in LIBRARY_PACKAGES
            and (n := code_lines((ROOT / (m.replace(".", "/") + ".py")).read_text(encoding="utf-8"))) > MAX_CODE_LINES}
    assert not long, f"entry points over {MAX_CODE_LINES} code lines (move the work into a library module): {long}"


def test_code_lines_skip_blanks_and_comments():
    assert code_lines("import os\n\n# why\n    # more\nx = 1  # inline\n'''doc\n\nstring'''\n") == 4
