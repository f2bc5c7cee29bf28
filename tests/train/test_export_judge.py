"""Judge export: a LoRA adapter merges into its base with the adapter's exact logits, a full model exports as is,
the card records the training run (or nulls without one), an existing --out is never clobbered silently, and the
result loads with `Judge.from_pretrained` and judges."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from datetime import datetime
from pathlib import Path

import pytest

from openrm.card import CARD_NAME, JudgeCard
from openrm.judge import Judge, Verdict
from train import export_judge
from train.judge_export import RUN_FILE, write_atomically

ROOT = Path(__file__).resolve().parents[2]
IDS = [[5, 17, 300, 42, 9, 1200, 77, 3]]
EVAL = {"toy-test": {"accuracy": 0.5, "consistency": 0.25}}
RUN_CARD = JudgeCard(tools={"WIKI": "wiki"}, topk=2, max_tool_calls=2, max_turns=4, max_new_tokens=32,
                     max_information_tokens=64, reward_variant="composite", global_step=8, base_model="somewhere/else",
                     data={"dataset": "runs/toy/dataset", "dataset_split": "train", "max_examples": 0},
                     retrievers={"wiki": "runs/toy/indexes/wiki"})  # as train/grpo_openrm.py writes it


def logits(model):
    import torch

    with torch.no_grad():
        return model(torch.tensor(IDS)).logits


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory):
    from toy.tiny import build

    return build(tmp_path_factory.mktemp("tiny"))


@pytest.fixture(scope="module")
def adapter_run(tiny_dir, tmp_path_factory):
    """A training output folder holding `checkpoint-7` (a perturbed LoRA adapter, no tokenizer) and the run file;
    returns (checkpoint, adapter logits, base logits)."""
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    run = tmp_path_factory.mktemp("run")
    base = AutoModelForCausalLM.from_pretrained(tiny_dir)
    base_logits = logits(base)
    model = get_peft_model(base, LoraConfig(r=4, lora_alpha=8, target_modules=["q_proj", "v_proj"]))
    generator = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for name, param in model.named_parameters():
            if "lora_B" in name:  # zero at init: perturb so that merging changes the outputs
                param.copy_(torch.randn(param.shape, generator=generator) * 0.5)
    adapter_logits = logits(model)
    checkpoint = run / "checkpoint-7"
    model.save_pretrained(checkpoint)
    (checkpoint / "trainer_state.json").write_text(json.dumps({"global_step": 7}))
    RUN_CARD.write(run, RUN_FILE)
    return checkpoint, adapter_logits, base_logits


@pytest.fixture(scope="module")
def exported(adapter_run, tmp_path_factory):
    checkpoint, _, _ = adapter_run
    root = tmp_path_factory.mktemp("exports")
    (root / "eval.json").write_text(json.dumps(EVAL))
    out = root / "judge"
    assert export_judge.main(["--checkpoint", str(checkpoint), "--out", str(out),
                              "--eval-results", str(root / "eval.json"), "--max-completion-tokens", "96"]) == out
    return out


@pytest.fixture(scope="module")
def wiki_index(tmp_path_factory):
    from retrieval.build_index import build_index
    from retrieval.retriever import load_index
    from toy.world import ToyWorld

    root = tmp_path_factory.mktemp("toy")
    corpora = ToyWorld(0).write_corpora(root / "corpora")
    build_index(corpora["wiki"]["tsv"], "bm25", root / "wiki", progress=False)
    return load_index(root / "wiki", numba=False)


def test_lora_export_has_the_adapter_logits(adapter_run, exported):
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    _, adapter_logits, base_logits = adapter_run
    assert (base_logits - adapter_logits).abs().max() > 1e-3  # the adapter really changes the model
    merged = AutoModelForCausalLM.from_pretrained(exported)
    torch.testing.assert_close(logits(merged), adapter_logits, atol=1e-5, rtol=0)
    assert (exported / "model.safetensors").is_file() and not (exported / "adapter_config.json").exists()
    assert not any("lora" in name for name, _ in merged.named_parameters())
    assert AutoTokenizer.from_pretrained(exported).eos_token == "<|im_end|>"  # taken from the base


def test_card_records_the_training_run(adapter_run, exported, tiny_dir):
    checkpoint, _, _ = adapter_run
    card = json.loads((exported / CARD_NAME).read_text())
    assert card["base_model"] == str(tiny_dir)  # the adapter config's base, not the run file's
    assert card["adapter"] is True and card["source"] == str(checkpoint.resolve())
    assert card["global_step"] == 7  # this checkpoint's step, not the run's final 8
    assert card["data"] == {"dataset": "runs/toy/dataset", "dataset_split": "train", "max_examples": 0}
    assert card["reward_variant"] == "composite"
    assert card["tools"] == {"WIKI": "wiki"} and card["retrievers"] == {"wiki": "runs/toy/indexes/wiki"}
    assert (card["max_tool_calls"], card["topk"], card["max_turns"]) == (2, 2, 4)
    assert (card["max_new_tokens"], card["max_information_tokens"], card["max_completion_tokens"]) == (32, 64, 96)
    assert card["temperature"] == 0.0 and card["eval_results"] == EVAL
    assert card["openrm_version"] and card["format"] == "openrm-judge/1"
    assert card["openrm_commit"] is None or len(card["openrm_commit"].removesuffix("-dirty")) == 40
    assert datetime.fromisoformat(card["exported_at"]).tzinfo is not None
    assert not [p for p in exported.parent.iterdir() if p.name.startswith(".judge.")]  # no temp folder left


def test_full_model_exports_with_a_null_card(tiny_dir, tmp_path):
    from safetensors.torch import load_file

    out = tmp_path / "judge"
    export_judge.main(["--checkpoint", str(tiny_dir), "--out", str(out)])
    card = json.loads((out / CARD_NAME).read_text())
    assert card["adapter"] is False and card["global_step"] is None and card["reward_variant"] is None
    assert card["data"] is None and card["base_model"] is None and card["eval_results"] is None
    assert card["tools"] == {"WIKI": "wiki", "ARXIV": "arxiv"}  # the defaults
    before, after = load_file(tiny_dir / "model.safetensors"), load_file(out / "model.safetensors")
    assert before.keys() == after.keys() and all((before[k] == after[k]).all() for k in before)


def test_existing_out_needs_overwrite(tiny_dir, tmp_path):
    out = tmp_path / "judge"
    out.mkdir()
    (out / "keep.txt").write_text("mine")
    with pytest.raises(FileExistsError, match="--overwrite"):
        export_judge.main(["--checkpoint", str(tiny_dir), "--out", str(out)])
    assert (out / "keep.txt").read_text() == "mine"
    export_judge.main(["--checkpoint", str(tiny_dir), "--out", str(out), "--overwrite"])
    assert not (out / "keep.txt").exists() and (out / CARD_NAME).is_file()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["judge"]  # neither temp nor old folder left
    with pytest.raises(ValueError, match="outside"):
        export_judge.main(["--checkpoint", str(tiny_dir), "--out", str(tiny_dir / "sub")])


def test_cli_refuses_to_overwrite_with_a_clear_message(tiny_dir, tmp_path):
    out = tmp_path / "judge"
    out.mkdir()
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    proc = subprocess.run([sys.executable, "-m", "train.export_judge", "--checkpoint", str(tiny_dir),
                           "--out", str(out)], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1
    assert f"export_judge: {out} exists; pass --overwrite to replace it" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_missing_base_model_is_a_clear_error(adapter_run, tmp_path):
    checkpoint, _, _ = adapter_run
    copy = tmp_path / "adapter"
    shutil.copytree(checkpoint, copy)
    with pytest.raises(ValueError, match="--base-model"):
        export_judge.main(["--checkpoint", str(copy), "--out", str(tmp_path / "judge"),
                           "--base-model", str(tmp_path / "nowhere")])
    assert not (tmp_path / "judge").exists()


def test_exported_judge_loads_and_judges(exported, wiki_index):
    with Judge.from_pretrained(exported, retrievers={"wiki": wiki_index}, max_new_tokens=16) as judge:
        assert judge.tool_names == ("WIKI",) and judge.rollout_cfg.max_tool_calls == 2
        assert judge.rollout_cfg.max_completion_tokens == 96 and judge.rollout_cfg.sampling.temperature == 0.0
        assert judge.rollout_cfg.sampling.max_new_tokens == 16  # a call's option beats the card
        verdict = judge.compare("Where does the Velmora river rise?", "In the Therion Mountains.", "In the sea.")
    assert isinstance(verdict, Verdict) and verdict.p_a in (0.0, 0.25, 0.5, 0.75, 1.0)
    assert [r.order for r in verdict.orders] == ["AB", "BA"]
    assert all(0 < len(r.trajectory.completion_ids) <= 96 for r in verdict.orders)


def test_a_failed_write_leaves_out_as_it_was(tmp_path):
    out = tmp_path / "judge"
    out.mkdir()
    (out / "keep.txt").write_text("mine")

    def fill(folder):
        (folder / "model.safetensors").write_text("half written")
        raise RuntimeError("disk full")

    with pytest.raises(RuntimeError, match="disk full"):
        write_atomically(out, fill, overwrite=True)
    assert sorted(p.name for p in out.iterdir()) == ["keep.txt"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["judge"]
