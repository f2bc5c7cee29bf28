"""The quickstart main job runs end to end offline and leaves reusable artefacts."""

import json
import subprocess
import sys


def test_quickstart_runs_and_resumes(tmp_path):
    cmd = [sys.executable, "-m", "train.quickstart", "--out", str(tmp_path), "--n_train", "20", "--n_test", "5"]
    first = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert first.returncode == 0, first.stderr[-2000:]
    log = first.stdout + first.stderr
    assert "<|im_start|>assistant" in log and "well_formed=True" in log
    assert "source document in top 3: ['" in log  # the gold trajectory's search finds its document
    assert json.loads((tmp_path / "indexes" / "wiki" / "manifest.json").read_text())["n_passages"] == 280
    assert len((tmp_path / "data" / "train.jsonl").read_text().splitlines()) == 20
    assert json.loads((tmp_path / "tiny-judge" / "tiny_card.json").read_text())["kind"] == "openrm-tiny"
    second = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert second.returncode == 0 and "reusing tiny judge" in second.stdout + second.stderr
    assert "reusing wiki index" in second.stdout + second.stderr


def test_quickstart_rejects_bad_arguments(tmp_path):
    cmd = [sys.executable, "-m", "train.quickstart", "--out", str(tmp_path), "--n_train", "0"]
    result = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert result.returncode != 0 and "n_train" in result.stderr
