"""The trainers' one resume rule and run-record writer."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from train.runs import resume_point, write_run_record


def args(value, out):
    return SimpleNamespace(resume_from_checkpoint=value, output_dir=str(out))


def test_the_resume_rule(tmp_path):
    for value in (None, "", "false", False):
        assert resume_point(args(value, tmp_path)) is None
    assert resume_point(args("last", tmp_path / "new")) is None  # a first run: nothing to resume, starts fresh
    for step in (3, 10, 7):
        (tmp_path / f"checkpoint-{step}").mkdir()
        (tmp_path / f"checkpoint-{step}" / "trainer_state.json").write_text("{}")
    for value in ("last", "true", True):
        assert resume_point(args(value, tmp_path)) == str(tmp_path / "checkpoint-10")  # the newest, not the last made
    assert resume_point(args(str(tmp_path / "checkpoint-3"), tmp_path)) == str(tmp_path / "checkpoint-3")
    with pytest.raises(FileNotFoundError, match="no such checkpoint folder"):
        resume_point(args(str(tmp_path / "checkpoint-99"), tmp_path))


def test_the_run_record_is_written_whole_by_the_main_process_only(tmp_path):
    main = SimpleNamespace(accelerator=SimpleNamespace(is_main_process=True))
    other = SimpleNamespace(accelerator=SimpleNamespace(is_main_process=False))
    assert write_run_record(other, tmp_path, "x_run.json", {"a": 1}) is None
    assert not (tmp_path / "x_run.json").exists()
    path = write_run_record(main, tmp_path, "x_run.json", {"a": 1, "b": [2]})
    assert json.loads(path.read_text()) == {"a": 1, "b": [2]}
    assert [p.name for p in tmp_path.iterdir()] == ["x_run.json"]  # no temporary file left behind
