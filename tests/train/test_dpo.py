"""train/dpo.py on the toy chain: toy candidates → the toy oracle picks chosen/rejected (train.select_preferences) →
DPO of a tiny random-weight model. The run changes the weights and lowers the DPO loss on its own training pairs
(log 2 before any step, the policy being its reference); LoRA by config trains only an adapter and reports the
held-out loss; the paper-scale configs parse."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CONFIGS = ROOT / "configs" / "dpo"


@pytest.fixture(scope="module")
def chain(tmp_path_factory):
    from toy.candidate_sets import toy_candidate_rows
    from toy.tiny import build
    from toy.world import ToyWorld
    from train import select_preferences

    root = tmp_path_factory.mktemp("dpo")
    rows = toy_candidate_rows(ToyWorld(0), 12, 4)
    (root / "toy.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    report = select_preferences.main(["--data", str(root / "toy.jsonl"), "--judge", "toy-oracle", "--world_seed", "0",
                                      "--out", str(root / "select")])
    assert report["output"]["pairs"] >= 10
    return {"tiny": build(root / "tiny"), "pairs": root / "select" / "dataset"}


def arguments(chain, out: Path, *extra: str) -> list[str]:
    return ["--config", str(CONFIGS / "tiny_cpu.yaml"), "--model_name_or_path", str(chain["tiny"]),
            "--dataset", str(chain["pairs"]), "--output_dir", str(out), "--per_device_train_batch_size", "4",
            "--max_length", "256", *extra]


def test_a_tiny_dpo_run_changes_the_weights_and_lowers_the_loss_on_its_pairs(chain, tmp_path):
    import torch

    from train import dpo

    script_args, training_args, model_args = dpo.parse(arguments(chain, tmp_path / "dpo", "--max_steps", "16"))
    trainer = dpo.build_trainer(script_args, training_args, model_args)
    pairs = dpo.load_pairs(str(chain["pairs"]), "train", 0)
    start = {n: p.detach().clone() for n, p in trainer.model.named_parameters()}
    before = trainer.evaluate(pairs)["eval_loss"]
    assert before == pytest.approx(math.log(2), abs=1e-4)  # the policy is still its own reference
    trainer.train()
    after = trainer.evaluate(pairs)["eval_loss"]
    assert after < before - 0.1, (before, after)
    moved = [n for n, p in trainer.model.named_parameters() if not torch.equal(p.detach(), start[n])]
    assert len(moved) == len(start)  # full fine-tuning: every tensor moved
    assert trainer.state.global_step == 16


def test_lora_by_config_trains_an_adapter_and_reports_held_out_loss(chain, tmp_path):
    from safetensors.torch import load_file

    from train import dpo

    out = tmp_path / "lora"
    dpo.main(*dpo.parse(arguments(chain, out, "--max_steps", "3", "--use_peft", "true", "--lora_r", "4",
                                  "--lora_alpha", "8", "--lora_target_modules", "q_proj", "v_proj",
                                  "--eval_fraction", "0.25")))
    adapter = load_file(str(out / "adapter_model.safetensors"))
    lora_b = [t for n, t in adapter.items() if "lora_B" in n]
    assert lora_b and any(t.abs().sum() > 0 for t in lora_b)  # LoRA's B starts at zero: the adapter trained
    assert not (out / "model.safetensors").exists()  # only the adapter is saved
    run = json.loads((out / "dpo_run.json").read_text())
    assert run["peft"] is True and run["global_step"] == 3 and 0 < run["held_out"]["eval_loss"] < 5


def test_the_paper_configs_parse_with_their_values():
    from train import dpo

    def load(name):
        return dpo.parse(["--config", str(CONFIGS / f"{name}.yaml"), "--use_cpu", "true", "--bf16", "false"])

    s, t, m = load("qwen2.5-3b")
    assert (m.model_name_or_path, m.use_peft, t.beta, t.learning_rate) == ("Qwen/Qwen2.5-3B-Instruct", False, 0.01,
                                                                            5e-7)
    assert (t.lr_scheduler_type.value, t.warmup_steps, t.num_train_epochs, t.max_length) == ("cosine", 0.1, 1, 1024)
    assert 8 * t.per_device_train_batch_size * t.gradient_accumulation_steps == 128
    s, t, m = load("qwen2.5-7b")
    assert (m.model_name_or_path, m.use_peft, m.lora_r, m.lora_alpha, t.learning_rate) == (
        "Qwen/Qwen2.5-7B-Instruct", True, 16, 16, 5e-6)
    assert set(m.lora_target_modules) == {"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"}
    assert 8 * t.per_device_train_batch_size * t.gradient_accumulation_steps == 128 and t.beta == 0.01
    s, t, m = load("tiny_cpu")
    assert (s.dataset, t.use_cpu, t.gradient_checkpointing) == ("runs/prefs/select/dataset", True, False)
    s, t, m = load("smollm2_cpu")
    assert (m.model_name_or_path, m.use_peft, m.dtype, t.use_cpu, t.num_train_epochs) == (
        "smollm2-135m-instruct", False, "float32", True, 1)


def test_pairs_without_the_trl_columns_are_refused(tmp_path):
    from train.dpo import load_pairs

    path = tmp_path / "pairs.jsonl"
    path.write_text(json.dumps({"prompt": "q", "chosen": "a"}) + "\n")
    with pytest.raises(ValueError, match=r"missing \['rejected'\]"):
        load_pairs(str(path), "train", 0)
    with pytest.raises(FileNotFoundError):
        load_pairs(str(tmp_path / "nope"), "train", 0)
