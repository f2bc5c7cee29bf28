"""The rubric generator's GRPO through `train/grpo_rubric_generator.py`: a tiny generator warmed up on the toy
rubric mixture takes 2 GRPO steps against the toy scorer served over HTTP; its weights move, every reward component
is logged, every completion's breakdown is written and the scorer's requests are cached. The paper config parses
with the paper's values."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from loopback import serve

ROOT = Path(__file__).resolve().parents[2]
N_GEN = 4


def _memorise(model_dir: Path, records: list[dict], steps: int) -> None:
    """A plain teacher-forced loop (loss on the completion) over `records`, saved in place: a few seconds, where
    SFTTrainer's per-step overhead would take minutes to teach a tiny model JSON."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from openrm.rollout import tokenize_record

    tok = AutoTokenizer.from_pretrained(model_dir)
    model = AutoModelForCausalLM.from_pretrained(model_dir)
    rows = [tokenize_record(tok, r["prompt"], r["completion"][0]["content"]) for r in records]
    width = max(len(r["input_ids"]) for r in rows)
    ids = torch.full((len(rows), width), tok.pad_token_id)
    labels = torch.full((len(rows), width), -100)
    for n, r in enumerate(rows):
        ids[n, :len(r["input_ids"])] = torch.tensor(r["input_ids"])
        keep = torch.tensor(r["completion_mask"], dtype=torch.bool)
        labels[n, :len(r["input_ids"])] = torch.where(keep, torch.tensor(r["input_ids"]), -100)
    torch.manual_seed(0)
    optim = torch.optim.AdamW(model.parameters(), lr=1e-2)
    for _ in range(steps):
        loss = model(input_ids=ids, labels=labels).loss
        loss.backward()
        optim.step()
        optim.zero_grad()
    model.save_pretrained(model_dir)


@pytest.fixture(scope="module")
def generator_dir(tmp_path_factory):
    """Toy triplets and a tiny generator that has memorised a valid or a broken rubric per query, so sampled groups
    hold valid and invalid rubrics (rewards differ) from the first step."""
    import shutil

    from toy.rubric_task import ToyRubricTask, add_rubric_tokens
    from toy.tiny import TinyConfig, build
    from toy.world import ToyWorld

    root = tmp_path_factory.mktemp("rubric-gen")
    task = ToyRubricTask(ToyWorld(0), 16)
    with (root / "triplets.jsonl").open("w") as f:
        for row in task.triplets("grpo"):
            f.write(json.dumps(row) + "\n")
    build(root / "tiny", TinyConfig(tokenizer="words", hidden_size=32, intermediate_size=64, num_heads=2,
                                    num_kv_heads=1, vocab_size=1024))
    add_rubric_tokens(root / "tiny")
    shutil.copytree(root / "tiny", root / "warm")
    records = task.sft_records(4, random.Random(0), mix={"specific": 0.5, "generic": 0.25, "broken": 0.25})
    _memorise(root / "warm", records, steps=60)
    return root


@pytest.mark.slow
def test_two_grpo_steps_change_the_weights_and_log_every_component(generator_dir, tmp_path):
    from safetensors.torch import load_file

    from toy.rubric_scorer import ToyScorer, scorer_app
    from toy.rubric_task import toy_entities
    from toy.world import ToyWorld
    from train import rubric_trainer as g

    out = tmp_path / "run"
    with serve(scorer_app(ToyScorer(toy_entities(ToyWorld(0))))) as url:
        trainer = g.train_rubric_generator(*g.parse([
            "--config", str(ROOT / "configs/grpo_rubric_generator/tiny_cpu.yaml"),
            "--model_name_or_path", str(generator_dir / "warm"), "--dataset", str(generator_dir / "triplets.jsonl"),
            "--output_dir", str(out), "--scorer", "server", "--scorer_server", f"{url}/v1", "--scorer_model", "toy",
            "--scorer_concurrency", "8", "--max_steps", "2", "--num_generations", str(N_GEN),
            "--per_device_train_batch_size", str(4 * N_GEN), "--max_completion_length", "48",
            "--logging_steps", "1"]))
    before = load_file(str(generator_dir / "warm/model.safetensors"))
    after = load_file(str(out / "model.safetensors"))
    assert any(not (before[k] == after[k]).all() for k in before)

    logs = [h for h in trainer.state.log_history if "rubric/valid_rate" in h]
    assert len(logs) == 2
    for name in ("preference", "format", "judge", "total", "valid_rate", "items", "preference_failures",
                 "judge_failures"):
        assert all(f"rubric/{name}" in h for h in logs), name
    assert all(h["rubric/preference_failures"] == 0 and h["rubric/judge_failures"] == 0 for h in logs)
    lines = [json.loads(x) for x in (out / "rubric_rewards.rank0.jsonl").read_text().splitlines()]
    assert len(lines) == 2 * 4 * N_GEN and {x["step"] for x in lines} == {0, 1}
    for x in lines:  # each total is Eq. 1 of its own parts (weights 1)
        assert abs(x["total"] - (x["preference"] + x["format"] + x["judge"])) < 1e-9
        assert x["valid"] == (x["format"] == 0.0) and (x["valid"] or x["error"])
    assert any(x["valid"] for x in lines)  # the warm-up writes some valid JSON
    cached = (out / "scorer_cache.rank0.jsonl").read_text().splitlines()
    assert cached and all(json.loads(c)["status"] == "ok" for c in cached)
    run = json.loads((out / "rubric_generator_run.json").read_text())
    assert run["global_step"] == 2 and run["generator"]["scorer"] == "server"


def test_paper_config_carries_the_papers_values():
    from train import rubric_trainer as g

    # on a machine without a GPU, TrainingArguments refuses bf16 unless told the run is on CPU
    script, training, model = g.parse(["--config", str(ROOT / "configs/grpo_rubric_generator/qwen3-14b_paper.yaml"),
                                       "--use_cpu", "true"])
    assert model.model_name_or_path == "Qwen/Qwen3-14B"
    assert (training.num_generations, training.beta, training.epsilon, training.weight_decay) == (8, 0.0, 0.2, 0.1)
    assert training.lr_scheduler_type == "constant" and training.temperature == 1.0
    assert training.per_device_train_batch_size * training.gradient_accumulation_steps * 8 == 256
    assert (script.weights.format, script.weights.judge) == (1.0, 1.0)
    assert (script.scorer_model, script.scorer_temperature, script.scorer_top_p) == ("Qwen/Qwen3-235B-A22B", 0.3, 0.95)


@pytest.mark.parametrize("flags,match", [
    (["--prompt_style", "long"], "prompt_style"),
    (["--format_penalty", "0.5"], "format_penalty"),
    (["--scorer", "server"], "scorer_server"),
    (["--scorer", "oracle"], "scorer must be"),
])
def test_bad_arguments_are_refused(flags, match):
    from train import rubric_trainer as g

    with pytest.raises(ValueError, match=match):
        g.parse(["--dataset", "x.jsonl", "--output_dir", "/tmp/unused", "--use_cpu", "true", *flags])
