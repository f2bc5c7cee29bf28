"""bench/cpu_dtype.py: the three dtype modes on a model built from a config alone (random weights), every workload
timed and its loss or greedy tokens compared with float32's."""

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_random_weight_model_from_a_config_runs_every_mode(tmp_path):
    config = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "vocab_size": 256, "hidden_size": 32,
              "intermediate_size": 64, "num_hidden_layers": 1, "num_attention_heads": 2, "num_key_value_heads": 1,
              "max_position_embeddings": 2048, "tie_word_embeddings": True}
    (tmp_path / "model").mkdir()
    (tmp_path / "model" / "config.json").write_text(json.dumps(config))
    out = tmp_path / "dtype.json"
    proc = subprocess.run([sys.executable, "-m", "bench.cpu_dtype", "--model", str(tmp_path / "model"),
                           "--random-weights", "--threads", "1", "--big-threads", "1", "--reps", "1", "--out",
                           str(out)], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    record = json.loads(out.read_text())
    assert (record["device"], record["random_weights"]) == ("cpu", True)
    rows = {r["workload"]: r for r in record["rows"]}
    assert set(rows) == {"train: toy GRPO update", "train: real-text SFT step", "generate: toy judging batch"}
    for row in rows.values():
        assert all(row[f"{mode} s"] > 0 for mode in ("float32", "bf16 autocast", "bf16 weights"))
    toy = rows["train: toy GRPO update"]
    # random weights over a 256-token vocabulary: the loss is near ln 256 in every mode, bf16 within rounding
    assert abs(toy["float32 loss"] - 5.545) < 0.3
    assert abs(toy["bf16 autocast loss"] - toy["float32 loss"]) < 0.05
    assert 0.0 <= rows["generate: toy judging batch"]["bf16 weights same tokens"] <= 1.0
    assert "| train: real-text SFT step | 8 x 1024 | 1 |" in proc.stdout


def test_a_gpu_run_without_a_gpu_is_refused_with_a_clear_error(tmp_path):
    import pytest
    import torch

    if torch.cuda.is_available():
        pytest.skip("the refusal is for machines without a GPU")
    proc = subprocess.run([sys.executable, "-m", "bench.cpu_dtype", "--device", "cuda", "--out", str(tmp_path / "x")],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 2 and "no CUDA GPU" in proc.stderr
    assert not (tmp_path / "x").exists()
