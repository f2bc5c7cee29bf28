"""GRPO on the tiny judge through `train/grpo_openrm.py`: parameters move, reward parts are logged within their
ranges, a resumed run continues step and optimizer state, two CPU processes keep groups intact, and the paper's
config builds its trainer arguments."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
N_GEN = 4


@pytest.fixture(scope="module")
def world_dir(tmp_path_factory):
    """Toy data, bm25 indexes and a tiny judge warmed up (TRL SFT, 80 steps) to end with `<answer>X</answer>`,
    so that sampled groups (at temperature 1.0) get different rewards from the start. Measured: after 40 steps
    the model answered in 4 of 32 samples (no group had two different rewards); after 80 steps, 29 of 32 at
    temperature 1.0 with A and B mixed in 6 of 8 groups."""
    from openrm import protocol
    from retrieval.build_index import build_index
    from toy.tiny import build
    from toy.world import ToyWorld, write_dataset
    from train.warmup_trainer import parse, train_warmup

    root = tmp_path_factory.mktemp("grpo")
    world = ToyWorld(0)
    write_dataset(world, root / "data", 48, 8)
    for name in ("wiki", "arxiv"):
        build_index(root / "data" / "corpora" / f"{name}.tsv", "bm25", root / "indexes" / name, progress=False)
    build(root / "tiny")
    rng = random.Random(0)
    with (root / "warm.jsonl").open("w") as f:
        for ex in world.examples(48, "train"):
            verdict = rng.choice("AB")
            f.write(json.dumps({"prompt": protocol.judge_messages(ex), "completion": [
                {"role": "assistant", "content": f"<think>I compare them.</think>\n<answer>{verdict}</answer>"}]})
                + "\n")
    train_warmup(*parse([
        "--dataset", str(root / "warm.jsonl"), "--model_name_or_path", str(root / "tiny"), "--output_dir",
        str(root / "warm"), "--max_steps", "80", "--per_device_train_batch_size", "8", "--learning_rate", "1e-2",
        "--lr_scheduler_type", "constant", "--disable_tqdm", "true",
        "--save_strategy", "no", "--report_to", "none", "--use_cpu", "true", "--dtype", "float32",
        "--gradient_checkpointing", "false", "--logging_steps", "100"]))
    return root


# This module's judge is warmed up on the full prompt and long pairs; these override tiny_cpu.yaml's compact recipe.
FULL_PROMPT = ["--prompt_style", "full", "--topk", "3", "--max_turns", "5", "--max_information_tokens", "192",
               "--max_prompt_length", "1024", "--require_well_formed", "false", "--beta", "0.001", "--epsilon", "0.5",
               "--learning_rate", "5e-4", "--save_steps", "4", "--save_total_limit", "2"]


def _args(root: Path, out: Path, *extra: str) -> list[str]:
    return ["--config", str(ROOT / "configs/grpo_openrm/tiny_cpu.yaml"), *FULL_PROMPT,
            "--model_name_or_path", str(root / "warm"), "--dataset", str(root / "data" / "dataset"),
            "--retrievers", f"wiki={root / 'indexes' / 'wiki'}", f"arxiv={root / 'indexes' / 'arxiv'}",
            "--output_dir", str(out), "--max_new_tokens", "48", "--max_completion_length", "96",
            "--per_device_train_batch_size", str(4 * N_GEN), "--num_generations", str(N_GEN),
            "--max_examples", "48", "--temperature", "1.0", *extra]


def _weights(path: Path) -> dict:
    from safetensors.torch import load_file

    return load_file(str(path / "model.safetensors"))


@pytest.mark.slow
@pytest.mark.parametrize("bf16", ["false", "true"])  # true on a CPU: bf16 autocast, float32 weights and optimizer
def test_two_steps_change_the_parameters_and_log_reward_parts(world_dir, tmp_path, bf16, monkeypatch):
    import torch

    from train import shared_prompt
    from train.judge_trainer import parse, train_judge

    shared = []  # whether each update pass read each distinct prompt once
    real = shared_prompt.shared_prompt_logps
    monkeypatch.setattr(shared_prompt, "shared_prompt_logps",
                        lambda *a, **k: shared.append(real(*a, **k)) or shared[-1])
    trainer = train_judge(*parse(_args(world_dir, tmp_path / "run", "--max_steps", "2",
                                       "--trajectory_log", str(tmp_path / "traj.jsonl"), "--bf16", bf16)))
    assert trainer.state.global_step == 2
    assert len(shared) >= 2 and all(got is not None for got in shared)  # every log-prob pass shared its prompts
    assert trainer.accelerator.mixed_precision == ("bf16" if bf16 == "true" else "no")
    before, after = _weights(world_dir / "warm"), _weights(tmp_path / "run")
    assert {t.dtype for t in after.values()} == {torch.float32}
    changed = [k for k in before if not (before[k] == after[k]).all()]
    assert len(changed) > len(before) // 2, changed
    logs = [h for h in trainer.state.log_history if "openrm/em" in h]
    assert len(logs) == 2
    for h in logs:
        for key in ("openrm/em", "openrm/tool", "openrm/malformed_rate", "openrm/wrong_tool_call_share"):
            assert 0.0 <= h[key] <= 1.0, (key, h[key])
        assert 0.0 <= h["reward"] <= 1.5 and h["openrm/calls_per_trajectory"] >= 0
        assert sum(h[f"openrm/finish_{r}"] for r in ("answer", "eos", "max_turns", "length")) == pytest.approx(1.0)
        assert "completions/mean_length" in h
    assert any(h["reward_std"] > 0 for h in logs)  # the warm start gives groups something to compare
    run = json.loads((tmp_path / "run" / "openrm_run.json").read_text())
    assert run["global_step"] == 2 and run["tools"] == {"WIKI": "wiki", "ARXIV": "arxiv"}
    records = [json.loads(line) for line in (tmp_path / "traj.rank0.jsonl").read_text().splitlines()]
    assert len(records) == 2 * 4 * N_GEN
    for r in records:
        assert r["em"] == float(r["answer"] == r["label"])  # well-formedness is relaxed in the tiny config


@pytest.mark.slow
def test_chunks_of_a_generation_batch_hold_whole_prompts_each_read_once(world_dir, tmp_path, monkeypatch):
    """The loss taken a prompt's completions at a time (4 chunks of one optimizer step): every chunk is one
    prompt's rows, so each update pass reads one prompt, once."""
    import torch

    from train import shared_prompt
    from train.judge_trainer import parse, train_judge

    prompts = []  # the distinct prompts of each update pass
    real = shared_prompt.shared_prompt_logps

    def counting(model, input_ids, attention_mask, logits_to_keep, *a, **k):
        head = input_ids.size(1) - logits_to_keep
        prompts.append(len(torch.unique(input_ids[:, :head] * attention_mask[:, :head], dim=0)))
        return real(model, input_ids, attention_mask, logits_to_keep, *a, **k)

    monkeypatch.setattr(shared_prompt, "shared_prompt_logps", counting)
    args = _args(world_dir, tmp_path / "run", "--max_steps", "1", "--save_strategy", "no")
    args[args.index("--per_device_train_batch_size") + 1] = str(N_GEN)
    trainer = train_judge(*parse([*args, "--gradient_accumulation_steps", "4"]))
    assert trainer.state.global_step == 1
    assert prompts == [1, 1, 1, 1]


@pytest.mark.slow
def test_resume_continues_the_step_and_the_optimizer(world_dir, tmp_path):
    import torch

    from train.judge_trainer import parse, train_judge

    out = tmp_path / "run"
    train_judge(*parse(_args(world_dir, out, "--max_steps", "2", "--save_steps", "1")))
    assert (out / "checkpoint-1").is_dir() and (out / "checkpoint-2").is_dir()
    trainer = train_judge(*parse(_args(world_dir, out, "--max_steps", "3", "--save_steps", "1",
                                       "--resume_from_checkpoint", str(out / "checkpoint-2"))))
    assert trainer.state.global_step == 3
    state = torch.load(out / "checkpoint-3" / "optimizer.pt", weights_only=False)["state"]
    # a fresh optimizer after the resume would have taken 1 step, not 3
    assert {int(s["step"]) for s in state.values()} == {3}


@pytest.mark.slow
def test_two_cpu_processes_keep_every_group_on_its_own_prompt(world_dir, tmp_path):
    from transformers import AutoTokenizer

    from openrm import protocol
    from openrm.dataset import load_judge_examples
    from openrm.rollout import prompt_sha, prompt_token_ids

    log = tmp_path / "traj.jsonl"
    env = {**os.environ, "ACCELERATE_USE_CPU": "true", "OMP_NUM_THREADS": "1", "TRL_EXPERIMENTAL_SILENCE": "1"}
    cmd = [sys.executable, "-m", "accelerate.commands.launch", "--config_file",
           str(ROOT / "configs/accelerate/multi_cpu.yaml"), "--main_process_port", str(29500 + os.getpid() % 500),
           str(ROOT / "train/grpo_openrm.py"),
           *_args(world_dir, tmp_path / "run", "--max_steps", "2", "--trajectory_log", str(log),
                  "--per_device_train_batch_size", str(N_GEN))]
    result = subprocess.run(cmd, capture_output=True, text=True, timeout=600, env=env, cwd=ROOT)
    assert result.returncode == 0, result.stderr[-3000:]
    tokenizer = AutoTokenizer.from_pretrained(world_dir / "warm")
    examples = {e["id"]: e for e in load_judge_examples(world_dir / "data" / "dataset")}
    ranks = [[json.loads(x) for x in (tmp_path / f"traj.rank{r}.jsonl").read_text().splitlines()] for r in (0, 1)]
    for records in ranks:  # two processes really ran, each scoring its own share of every step
        assert len(records) == 2 * N_GEN
        for start in range(0, len(records), N_GEN):
            group = records[start:start + N_GEN]
            assert len({r["id"] for r in group}) == 1 and len({r["prompt_sha"] for r in group}) == 1
        for r in records:
            example = examples[r["id"]]
            messages = protocol.judge_messages(example)
            assert r["prompt_sha"] == prompt_sha(prompt_token_ids(tokenizer, messages))
            assert r["label"] == example["label"] and r["em"] == float(r["answer"] == example["label"])
    assert {r["id"] for r in ranks[0]}.isdisjoint({r["id"] for r in ranks[1]})


def test_the_paper_config_builds_its_trainer_arguments():
    from train.judge_trainer import parse

    script_args, training_args, model_args = parse(
        ["--config", str(ROOT / "configs/grpo_openrm/qwen2.5-7b_paper.yaml"), "--use_cpu", "true", "--bf16",
         "false"])
    assert model_args.model_name_or_path == "Qwen/Qwen2.5-7B-Instruct"
    assert (training_args.num_generations, training_args.beta, training_args.epsilon) == (5, 1e-3, 0.5)
    assert training_args.max_completion_length == 2048 and script_args.max_prompt_length == 4096
    assert training_args.num_train_epochs == 2 and training_args.use_vllm
    # 512 prompts per step on 8 GPUs
    assert 8 * training_args.per_device_train_batch_size * training_args.gradient_accumulation_steps == 512 * 5
    assert script_args.reward_variant == "composite"
    assert {t.name: t.corpus for t in script_args.tool_specs} == {"WIKI": "wiki", "ARXIV": "arxiv"}


def test_bad_script_arguments_are_clear_errors():
    from train.judge_trainer import OpenRMArguments

    with pytest.raises(ValueError, match="no --retrievers entry"):
        OpenRMArguments(dataset="x", retrievers=["wiki=/x"])
    with pytest.raises(ValueError, match="KEY=VALUE"):
        OpenRMArguments(dataset="x", tools=["WIKI"])
    with pytest.raises(ValueError, match="unknown reward variant"):
        OpenRMArguments(dataset="x", reward_variant="nope", retrievers=["wiki=/x", "arxiv=/y"])


@pytest.mark.slow
def test_interleaved_domains_give_every_step_its_prompts_in_domain_turns(world_dir, tmp_path):
    """`--interleave_domains`: the prompts come in the seeded domain-by-domain order, not shuffled, so a step of few
    prompts never holds a run of one domain (which pushed one tool up for every question)."""
    from openrm.dataset import interleaved_by_domain, load_judge_examples
    from train.judge_trainer import parse, train_judge

    train_judge(*parse(_args(world_dir, tmp_path / "run", "--max_steps", "2", "--save_steps", "10",
                             "--interleave_domains", "true", "--seed", "3",
                             "--trajectory_log", str(tmp_path / "traj.jsonl"))))
    records = [json.loads(line) for line in (tmp_path / "traj.rank0.jsonl").read_text().splitlines()]
    seen = list(dict.fromkeys(r["id"] for r in records))  # each prompt once, in training order
    examples = load_judge_examples(world_dir / "data" / "dataset", "train").select(range(48))
    order = [examples[i]["id"] for i in interleaved_by_domain(examples["domain"], 3)]
    assert seen == order[:len(seen)] and len(seen) == 2 * 4
    domains = {e["id"]: e["domain"] for e in examples}
    assert all(len({domains[i] for i in seen[k:k + 3]}) == 3 for k in range(0, len(seen) - 2))


@pytest.mark.slow
def test_both_orders_puts_each_pair_in_one_batch_and_pays_only_what_the_other_order_confirms(world_dir, tmp_path):
    """`--both_orders`: every generation batch holds each of its pairs as given and swapped, and a completion's R_EM
    is its own verdict's times the share of the other order's completions that are right."""
    from train.judge_trainer import parse, train_judge

    trainer = train_judge(*parse(_args(world_dir, tmp_path / "run", "--max_steps", "2",
                                       "--save_steps", "10", "--both_orders", "true",
                                       "--trajectory_log", str(tmp_path / "traj.jsonl"))))
    records = [json.loads(line) for line in (tmp_path / "traj.rank0.jsonl").read_text().splitlines()]
    assert len(records) == 2 * 4 * N_GEN
    for step in (0, 1):
        batch = records[step * 4 * N_GEN:(step + 1) * 4 * N_GEN]
        pairs: dict[str, dict[str, list[float]]] = {}
        for r in batch:
            pair, order = (r["id"][:-3], "BA") if r["id"].endswith(":BA") else (r["id"], "AB")
            pairs.setdefault(pair, {}).setdefault(order, []).append(float(r["answer"] == r["label"]))
        assert len(pairs) == 2 and all(set(p) == {"AB", "BA"} for p in pairs.values())
        for r in batch:
            pair, order = (r["id"][:-3], "BA") if r["id"].endswith(":BA") else (r["id"], "AB")
            other = pairs[pair]["BA" if order == "AB" else "AB"]
            assert r["em"] == pytest.approx(float(r["answer"] == r["label"]) * sum(other) / len(other))
    assert all("openrm/em_one_order" in h for h in trainer.state.log_history if "openrm/em" in h)


@pytest.mark.slow
def test_order_groups_put_a_pair_in_both_orders_into_each_group_and_pay_plain_verdicts(world_dir, tmp_path):
    """`--order_groups`: each group of num_generations completions is one pair, its first half as given and its
    second half swapped, and R_EM is the verdict's own (no gate: the group's advantages compare the orders)."""
    from train.judge_trainer import parse, train_judge

    train_judge(*parse(_args(world_dir, tmp_path / "run", "--max_steps", "2", "--save_steps", "10",
                             "--order_groups", "true", "--trajectory_log", str(tmp_path / "traj.jsonl"))))
    records = [json.loads(line) for line in (tmp_path / "traj.rank0.jsonl").read_text().splitlines()]
    assert len(records) == 2 * 4 * N_GEN
    pairs = set()
    for k in range(0, len(records), N_GEN):
        group = [r["id"] for r in records[k:k + N_GEN]]
        given = group[0]
        assert not given.endswith(":BA") and group == [given] * (N_GEN // 2) + [f"{given}:BA"] * (N_GEN // 2)
        pairs.add(given)
    assert len(pairs) == 2 * 4  # every group a new pair
    assert all(r["em"] == float(r["answer"] == r["label"]) for r in records)


@pytest.mark.slow
def test_tool_balance_trains_with_the_tool_centred_trainer_and_logs_its_shift(world_dir, tmp_path):
    from train.judge_trainer import parse, train_judge
    from train.tool_balance import ToolBalancedTrainer

    trainer = train_judge(*parse(_args(world_dir, tmp_path / "run", "--max_steps", "1", "--save_steps", "10",
                                       "--tool_balance", "true")))
    assert isinstance(trainer, ToolBalancedTrainer) and trainer.state.global_step == 1
    logs = [h for h in trainer.state.log_history if "openrm/tool_centring" in h]
    assert len(logs) == 1 and logs[0]["openrm/tool_centring"] >= 0.0


def test_both_orders_refuses_a_layout_that_splits_pairs():
    from types import SimpleNamespace

    from train.judge_trainer import check_both_orders_layout

    ok = SimpleNamespace(per_device_train_batch_size=8, steps_per_generation=None, gradient_accumulation_steps=1,
                         num_generations=4, world_size=1)
    check_both_orders_layout(ok)
    with pytest.raises(ValueError, match="even number of prompts"):
        check_both_orders_layout(SimpleNamespace(**{**vars(ok), "per_device_train_batch_size": 4}))
    with pytest.raises(ValueError, match="one process"):
        check_both_orders_layout(SimpleNamespace(**{**vars(ok), "world_size": 2}))


def test_rival_share_sets_hostile_rivals_into_the_training_pairs_the_same_in_both_orders():
    """`--rival_share`: that share of the pairs hold a hostile rival in place of their wrong answer (the right answer
    and the label kept), named in a `rival` column, and both orders of a pair hold the same rival."""
    from datasets import Dataset

    from openrm.dataset import in_both_orders
    from train.judge_trainer import OpenRMArguments, with_rivals

    right, wrong = "Lima was founded in 1535.", "Lima was founded in 1541."
    rows = [{"id": f"p{k}", "question": f"When was city {k} founded?", "answer_a": right if k % 2 else wrong,
             "answer_b": wrong if k % 2 else right, "label": "A" if k % 2 else "B", "gold_tool": "WIKI",
             "domain": "wiki", "meta": {"kind": "date"}} for k in range(200)]
    out = with_rivals(Dataset.from_list(rows), 0.5, seed=0)
    assert len(out) == 200 and out["label"] == [r["label"] for r in rows] and out[0]["meta"] == {"kind": "date"}
    rivals = [r for r in out if r["rival"]]
    assert 70 <= len(rivals) <= 130 and {r["rival"] for r in rivals} == {"hedge", "evasion", "markup"}
    for before, after in zip(rows, out, strict=True):
        key = "answer_a" if before["label"] == "A" else "answer_b"
        assert after[key] == before[key]  # the right answer stays
        assert (after == {**before, "rival": ""}) == (not after["rival"])
    both = in_both_orders(out, seed=0)
    by_pair: dict[str, set] = {}
    for r in both:
        by_pair.setdefault(r["pair_id"], set()).add((r["rival"], frozenset((r["answer_a"], r["answer_b"]))))
    assert all(len(v) == 1 for v in by_pair.values())
    with pytest.raises(ValueError, match="choose one"):
        OpenRMArguments(dataset="x", retrievers=["wiki=/x", "arxiv=/y"], both_orders=True, order_groups=True)
    with pytest.raises(ValueError, match="rival_share"):
        OpenRMArguments(dataset="x", retrievers=["wiki=/x", "arxiv=/y"], rival_share=2.0)
    with pytest.raises(ValueError, match="rival_kinds"):
        OpenRMArguments(dataset="x", retrievers=["wiki=/x", "arxiv=/y"], rival_kinds=["hedge", "insult"])
    only = with_rivals(Dataset.from_list(rows), 0.5, seed=0, kinds=["hedge", "evasion"])
    assert {r["rival"] for r in only if r["rival"]} == {"hedge", "evasion"}
