"""The README's commands agree with the code: every command it shows names a module that exists, and every flag it
passes appears in that command's `--help`. The commands are read from the README's code blocks, so a renamed
flag or a moved script fails here before a user meets it."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PY = re.compile(r"(?:^|\s)(?:\S*/)?python3?\s+(-m\s+\S+|\S+\.py)(.*)$")
LAUNCH = re.compile(r"accelerate launch\s+(.*?)(\S+\.py)(.*)$")
# commands that pass what follows a bare `--` to another module's command line
PASSTHROUGH = {"experiments.real_text_seeds": "experiments.real_text_judge",
               "experiments.learning_grid": "experiments.learning_proof"}


def readme_commands() -> list[tuple[str, tuple[str, ...]]]:
    """(module, flags) for each command in the README's code blocks (fenced shell blocks and indented ones);
    continuation lines joined, comments dropped."""
    blocks, inside, language = [], False, ""
    for line in (ROOT / "README.md").read_text(encoding="utf-8").splitlines():
        if line.strip().startswith("```"):
            inside, language = not inside, line.strip()[3:]
            if inside:
                blocks.append([])
        elif inside and language in ("", "bash", "sh"):
            blocks[-1].append(line)
        elif not inside and line.startswith("    "):  # an indented code block
            blocks.append([line])
    commands: dict[tuple[str, tuple[str, ...]], None] = {}
    for block in ("\n".join(b) + "\n" for b in _joined(blocks)):
        for line in block.replace("\\\n", " ").splitlines():
            line = line.split(" #")[0].strip()
            for part in re.split(r"&&|\|", line):
                found = LAUNCH.search(part) or PY.search(part)
                if not found:
                    continue
                script, rest = found.groups()[-2:]
                module = script[3:].strip() if script.startswith("-m") else script[:-3].replace("/", ".")
                try:
                    words = shlex.split(rest)
                except ValueError:
                    words = rest.split()
                if "--" in words and module in PASSTHROUGH:  # the words after a bare `--` are another module's
                    cut = words.index("--")
                    commands[(PASSTHROUGH[module], _flags(words[cut + 1:]))] = None
                    words = words[:cut]
                commands[(module, _flags(words))] = None
    return list(commands)


def _flags(words: list[str]) -> tuple[str, ...]:
    return tuple(sorted({w.split("=")[0] for w in words if w.startswith("--") and len(w) > 2}))


def _joined(blocks: list[list[str]]) -> list[list[str]]:
    """Indented blocks cut line by line are put back together where a line ends with a continuation."""
    out: list[list[str]] = []
    for block in blocks:
        if out and out[-1] and out[-1][-1].rstrip().endswith("\\") and len(block) == 1:
            out[-1].append(block[0])
        else:
            out.append(list(block))
    return out


def trl_parsed(module: str) -> bool:
    """TRL's TrlParser takes `--config FILE` (the YAML whose keys are the flags) without listing it in `--help`. A
    command parses with it when its module, or a module of this tree it imports from (its library), names it."""
    source = (ROOT / (module.replace(".", "/") + ".py")).read_text(encoding="utf-8")
    imported = re.findall(r"^from ((?:train|eval|toy|data_synthesis|openrm)\.\w+) import", source, re.MULTILINE)
    return any("TrlParser" in (ROOT / (m.replace(".", "/") + ".py")).read_text(encoding="utf-8")
               for m in (module, *imported))


@cache
def help_text(module: str) -> str:
    proc = subprocess.run([sys.executable, "-m", module, "--help"], cwd=ROOT, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout


def test_the_readme_commands_are_found():
    modules = {m for m, _ in readme_commands()}
    assert {"eval.run", "train.export_judge", "experiments.real_text_judge", "train.grpo_openrm", "train.grpo_policy",
            "train.select_preferences", "retrieval.server", "data_synthesis.build_dataset"} <= modules


SCRIPT = re.compile(r"(?<![\w/.-])((?:bench|experiments)/\w+\.py)")


def test_every_script_the_readme_names_exists():
    """Prose names the bench and experiment scripts by path too (`experiments/learning_proof.py`): each one is a
    file, so a moved script fails here."""
    for name in ("README.md", "toy/README.md", "bench/RESULTS.md"):
        for path in SCRIPT.findall((ROOT / name).read_text(encoding="utf-8")):
            assert (ROOT / path).is_file(), f"{name} names {path}, which does not exist"


def test_the_script_check_sees_a_path():
    assert SCRIPT.findall("see `experiments/learning_proof.py --stage a` and bench/rollout.py, not x/bench/y.py") == \
        ["experiments/learning_proof.py", "bench/rollout.py"]


def test_every_readme_module_exists():
    for module, _ in readme_commands():
        path = ROOT / (module.replace(".", "/") + ".py")
        assert path.is_file(), f"the README runs {module}, which has no {path.relative_to(ROOT)}"


@pytest.mark.slow
@pytest.mark.parametrize("module", sorted({m for m, _ in readme_commands()}))
def test_every_flag_the_readme_passes_is_in_the_commands_help(module):
    shown = help_text(module)
    for m, flags in readme_commands():
        if m != module:
            continue
        missing = [f for f in flags if not re.search(re.escape(f) + r"(?![\w-])", shown)
                   and not (f == "--config" and trl_parsed(module))]
        assert not missing, f"the README passes {missing} to {module}, whose --help does not list them"
