"""The toy-assets entry point: its help names every flag, it refuses to do nothing, and it writes a toy world."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from toy import assets as toy_assets

ROOT = Path(__file__).resolve().parents[2]


def test_help_lists_the_flags():
    proc = subprocess.run([sys.executable, "-m", "toy.assets", "--help"], cwd=ROOT, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0
    for flag in ("--world_out", "--n_train", "--tiny_out", "--hidden_size", "--tokenizer"):
        assert flag in proc.stdout


def test_needs_an_output_and_writes_the_world(tmp_path):
    with pytest.raises(ValueError, match="--world_out"):
        toy_assets.parse([])
    toy_assets.main(*toy_assets.parse(["--world_out", str(tmp_path / "toy"), "--n_train", "4", "--n_test", "2"]))
    assert len((tmp_path / "toy" / "train.jsonl").read_text().splitlines()) == 4
    assert (tmp_path / "toy" / "corpora" / "wiki.tsv").is_file()
