"""One pattern for the records a run leaves: every trainer's run record is `<trainer>_run.json`, every stage marker
`stage.json`, every experiment's numbers `results.json`; no module spells another record name of its own."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from plumbing.records import RESULTS, STAGE, run_record

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("openrm", "retrieval", "plumbing", "data_synthesis", "eval", "train", "toy", "bench", "experiments")
# a string naming a run record, stage marker or experiment result other than by the pattern
OTHER_RECORD = re.compile(r"^(\w+_run|proof|warmup|built|quickstart_origin|agent_result|audit|results-.*)\.json$")


def test_the_names_follow_one_pattern():
    assert (run_record("dpo"), STAGE, RESULTS) == ("dpo_run.json", "stage.json", "results.json")
    with pytest.raises(ValueError, match="letters, digits"):
        run_record("../x")


def test_every_trainer_names_its_record_by_the_pattern():
    from openrm.card import RUN_CARD_NAME
    from train import dpo, judge_trainer, policy_trainer, rubric_trainer

    assert {RUN_CARD_NAME, dpo.RUN_FILE, judge_trainer.RUN_FILE, policy_trainer.RUN_FILE, rubric_trainer.RUN_FILE} == {
        "openrm_run.json", "dpo_run.json", "policy_run.json", "rubric_generator_run.json"}


def test_no_module_spells_a_record_name_of_its_own():
    spelled = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.Constant) and isinstance(node.value, str) and OTHER_RECORD.match(node.value):
                    spelled.setdefault(path.relative_to(ROOT).as_posix(), []).append(node.value)
    assert not spelled, f"name records through plumbing.records: {spelled}"
