"""Policy GRPO on tournament rewards through `train/grpo_policy.py`, on a tiny policy and the toy oracle: parameters
move and every group's matches are logged, the greedy anchor is the policy's greedy decode, a resumed run continues
its steps, a garbage or position-biased judge gives equal rewards and a completed step, two CPU processes judge
every group whole exactly once, and the paper configs carry the papers' values."""

from __future__ import annotations

import hashlib
import json
import math
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
N_GEN = 4


@pytest.fixture(scope="module")
def policy_dir(tmp_path_factory):
    """Toy policy prompts and a tiny policy warmed up (TRL SFT, 40 steps) on the noisy answer mix, so sampled groups
    differ from the start."""
    from toy.policy_task import ToyPolicyTask
    from toy.tiny import TinyConfig, build
    from toy.world import ToyWorld
    from train.warmup_trainer import parse, train_warmup

    root = tmp_path_factory.mktemp("policy")
    task = ToyPolicyTask(ToyWorld(0), 16)
    with (root / "prompts.jsonl").open("w") as f:
        for row in task.rows("grpo"):
            f.write(json.dumps(row) + "\n")
    with (root / "sft.jsonl").open("w") as f:
        for record in task.sft_records(8, random.Random(0)):
            f.write(json.dumps(record) + "\n")
    build(root / "tiny", TinyConfig(tokenizer="words", hidden_size=32, intermediate_size=64, num_heads=2,
                                    num_kv_heads=1, vocab_size=1024))
    train_warmup(*parse([
        "--dataset", str(root / "sft.jsonl"), "--model_name_or_path", str(root / "tiny"), "--output_dir",
        str(root / "warm"), "--max_steps", "40", "--per_device_train_batch_size", "16", "--learning_rate", "1e-2",
        "--lr_scheduler_type", "constant", "--disable_tqdm", "true", "--save_strategy", "no", "--report_to", "none",
        "--use_cpu", "true", "--dtype", "float32", "--logging_steps", "100"]))
    return root


def _args(root: Path, out: Path, *extra: str) -> list[str]:
    return ["--config", str(ROOT / "configs/grpo_policy/tiny_cpu.yaml"), "--model_name_or_path", str(root / "warm"),
            "--dataset", str(root / "prompts.jsonl"), "--output_dir", str(out),
            "--per_device_train_batch_size", str(4 * N_GEN), "--num_generations", str(N_GEN),
            "--max_completion_length", "12", "--logging_steps", "1", *extra]


def _run(root: Path, out: Path, *extra: str):
    from train.policy_trainer import parse, train_policy

    return train_policy(*parse(_args(root, out, *extra)))


def _matches(out: Path) -> list[dict]:
    return [json.loads(x) for x in (out / "matches.rank0.jsonl").read_text().splitlines()]


def _logs(trainer) -> list[dict]:
    return [h for h in trainer.state.log_history if "tournament/judge_calls" in h]


@pytest.mark.slow
def test_round_robin_steps_change_the_policy_and_log_every_group(policy_dir, tmp_path):
    from safetensors.torch import load_file

    out = tmp_path / "run"
    trainer = _run(policy_dir, out, "--max_steps", "2")
    before, after = load_file(str(policy_dir / "warm/model.safetensors")), load_file(str(out / "model.safetensors"))
    assert any(not (before[k] == after[k]).all() for k in before)
    logs = _logs(trainer)
    assert [h["tournament/judge_calls"] for h in logs] == [4 * 6, 4 * 6]  # 4 groups x C(4, 2); the oracle: one order
    assert all(h["tournament/failures"] == 0 and h["tournament/crashed_groups"] == 0 for h in logs)
    records = _matches(out)
    assert [(r["step"], r["group"]) for r in records] == [(s, g) for s in (0, 1) for g in range(4)]
    for r in records:
        assert r["topology"] == "round_robin" and len(r["candidates"]) == N_GEN and len(r["matches"]) == 6
        assert math.isclose(sum(r["rewards"]), 0.0, abs_tol=1e-6)  # rank_z is centred in every group
    run = json.loads((out / "policy_run.json").read_text())
    assert run["global_step"] == 2 and run["policy"]["topology"] == "round_robin"


@pytest.mark.slow
def test_the_greedy_anchor_is_the_policys_greedy_decode(policy_dir, tmp_path):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from openrm.generation import HFGenerator, SamplingParams
    from openrm.rollout import prompt_token_ids

    out = tmp_path / "anchor"
    _run(policy_dir, out, "--max_steps", "1", "--topology", "anchor", "--greedy_anchor", "true")
    tokenizer = AutoTokenizer.from_pretrained(policy_dir / "warm")
    model = AutoModelForCausalLM.from_pretrained(policy_dir / "warm")
    rows = {r["question"]: r for r in map(json.loads, (policy_dir / "prompts.jsonl").read_text().splitlines())}
    by_sha = {hashlib.sha256(q.encode()).hexdigest()[:16]: r for q, r in rows.items()}
    records = _matches(out)
    assert len(records) == 4
    for record in records:
        prompt = by_sha[record["question_sha"]]["prompt"]
        gen = HFGenerator(model, tokenizer).generate([prompt_token_ids(tokenizer, prompt)],
                                                      SamplingParams(max_new_tokens=12, temperature=0.0))[0]
        text = tokenizer.decode(gen.token_ids, skip_special_tokens=True)
        assert record["candidates"][0] == hashlib.sha256(text.encode()).hexdigest()[:16]
        assert len(record["matches"]) == N_GEN - 1 and all(m["j"] == 0 for m in record["matches"])


@pytest.mark.slow
def test_resume_continues_the_steps(policy_dir, tmp_path):
    out = tmp_path / "resume"
    _run(policy_dir, out, "--max_steps", "2", "--save_steps", "1", "--save_total_limit", "3")
    assert (out / "checkpoint-2").is_dir()
    trainer = _run(policy_dir, out, "--max_steps", "3", "--save_steps", "1", "--resume_from_checkpoint", "last")
    assert trainer.state.global_step == 3
    assert [r["step"] for r in _matches(out)] == [0] * 4 + [1] * 4 + [2] * 4  # step 2 ran once, after the resume


class _Garbage:
    orders = 1

    def compare_many(self, items):
        bad = ["A", float("nan"), 2.0, float("inf"), None, -1.0]
        return [bad[i % len(bad)] for i in range(len(items))]


class _FirstShown:
    orders = 1

    def compare_many(self, items):
        return [1.0] * len(items)


@pytest.mark.parametrize("judge, status", [(_Garbage(), "failures"), (_FirstShown(), "ties")])
@pytest.mark.slow
def test_a_garbage_or_position_biased_judge_gives_equal_rewards(policy_dir, tmp_path, monkeypatch, judge, status):
    from openrm.judge_spec import JudgeSpec

    monkeypatch.setattr(JudgeSpec, "open_match", lambda spec, rows=(), orders=2: (judge, None))
    trainer = _run(policy_dir, tmp_path / "bad", "--max_steps", "1", "--format_pattern", "")
    (log,) = _logs(trainer)
    assert trainer.state.global_step == 1
    assert log[f"tournament/{status}"] == 4 * 6 and log["rewards/tournament_round_robin/std"] == 0.0
    assert all(set(r["rewards"]) == {0.0} for r in _matches(tmp_path / "bad"))


@pytest.mark.slow
def test_two_cpu_processes_judge_every_group_whole_once(policy_dir, tmp_path):
    """6 completions per process and groups of 4: group 1 straddles the two processes, and its greedy anchor
    is decoded on process 0."""
    out = tmp_path / "ddp"
    env = {**os.environ, "ACCELERATE_USE_CPU": "true", "OMP_NUM_THREADS": "1", "TRL_EXPERIMENTAL_SILENCE": "1"}
    cmd = [sys.executable, "-m", "accelerate.commands.launch", "--config_file",
           str(ROOT / "configs/accelerate/multi_cpu.yaml"), "--main_process_port", str(29500 + os.getpid() % 500),
           str(ROOT / "train/grpo_policy.py"),
           *_args(policy_dir, out, "--max_steps", "2", "--per_device_train_batch_size", "6", "--topology",
                  "anchor", "--greedy_anchor", "true")]
    result = subprocess.run(cmd, capture_output=True, text=True, timeout=600, env=env, cwd=ROOT)
    assert result.returncode == 0, result.stderr[-3000:]
    played = {r: [json.loads(x) for x in (out / f"matches.rank{r}.jsonl").read_text().splitlines()] for r in (0, 1)}
    for rank, records in played.items():  # group g is played on process g % 2
        assert {rec["group"] % 2 for rec in records} == {rank}
    keys = sorted((rec["step"], rec["group"]) for records in played.values() for rec in records)
    assert keys == [(s, g) for s in (0, 1) for g in range(3)]
    assert all(len(rec["candidates"]) == N_GEN for records in played.values() for rec in records)


def test_the_paper_configs_carry_the_papers_values():
    from train.policy_trainer import parse

    def load(name):
        return parse(["--config", str(ROOT / f"configs/grpo_policy/{name}.yaml"), "--use_cpu", "true",
                      "--bf16", "false"])

    s, t, m = load("tournament_grpo")
    assert (s.topology, s.shaping, s.group_judge, s.judge) == ("multi_round", "min_max", "rubric", "none")
    topo = s.topology_obj
    assert (topo.group_size, topo.k_win, topo.k_final, topo.repeats, topo.fresh_repeats) == (2, 1, 1, 3, True)
    assert (s.group_temperature, s.group_top_p) == (0.0, 0.95)
    assert (t.num_generations, t.learning_rate, t.temperature, t.top_p) == (8, 1e-6, 1.0, 1.0)
    assert 8 * t.per_device_train_batch_size * t.gradient_accumulation_steps == 16 * 8 and s.format_pattern
    for name, scoring, weights in (("tournament_grpo_explicit", "explicit", [0.5, 0.5]),
                                   ("tournament_grpo_implicit", "implicit", [1.0, 1.0])):
        s, t, m = load(name)  # Tournament-GRPO's absolute-scoring baselines: rubric reward, then format reward
        assert (s.rewards, s.rubric_scoring, t.reward_weights, s.format_pattern != "") == ("rubric", scoring,
                                                                                           weights, True)
        assert (s.scorer_spec.temperature, s.scorer_spec.top_p, t.num_generations) == (0.0, 0.95, 8)
    s, t, m = load("tournament_grpo_pairwise")  # every pair once, judged by the rubric judge two at a time
    assert (s.topology, s.orders, s.shaping, s.judge, s.group_judge) == ("round_robin", "random", "win_rate",
                                                                          "none", "rubric")
    assert t.reward_weights == [1.0, 1.0] and s.format_pattern
    s, t, m = load("arenarl")
    assert s.greedy_anchor and s.topology_obj.rank_by == "depth" and s.topology_obj.anchor == 0
    assert (s.shaping, t.temperature, t.num_generations) == ("rank_z", 0.8, 16)
    s, t, m = load("reasoning_arena")
    assert (s.topology, s.verifier, s.orders, s.shaping) == ("live", "answer_match", "random", "min_max")
    assert (t.learning_rate, t.warmup_steps, t.max_steps, t.num_generations) == (4e-7, 50, 1500, 8)
    assert (t.loss_type, t.epsilon_high) == ("cispo", 3.0)
    assert 8 * t.per_device_train_batch_size == t.generation_batch_size == 480
    s, t, m = load("round_robin")
    assert s.topology == "round_robin" and m.model_name_or_path == "Qwen/Qwen2.5-7B-Instruct"
    s, t, m = load("tiny_cpu")
    assert (s.judge, s.topology, t.use_cpu) == ("toy-oracle", "round_robin", True)


def test_bad_policy_arguments_are_clear_errors():
    from train.policy_trainer import PolicyArguments

    with pytest.raises(ValueError, match="--judge is required"):  # no toy default behind a forgotten flag
        PolicyArguments(dataset="x")
    with pytest.raises(ValueError, match="no judge folder there, no packaged model of that name.*toy-oracle"):
        PolicyArguments(dataset="x", judge="oracle", no_tools=True).open_match()
    with pytest.raises(ValueError, match="unknown topology"):
        PolicyArguments(dataset="x", judge="toy-oracle", world_seed=0, topology="knockout")
    with pytest.raises(ValueError, match="takes"):
        PolicyArguments(dataset="x", judge="toy-oracle", world_seed=0, topology="round_robin",
                        topology_options='{"k_win": 2}')
    with pytest.raises(ValueError, match="JSON object"):
        PolicyArguments(dataset="x", judge="toy-oracle", world_seed=0, topology_options="{k_win")
    with pytest.raises(ValueError, match="--judge_model"):  # a served judge needs its model name too
        PolicyArguments(dataset="x", judge="runs/judge", no_tools=True, judge_server="http://127.0.0.1:8001/v1")
    with pytest.raises(ValueError, match="backend"):
        PolicyArguments(dataset="x", judge="runs/judge", no_tools=True, judge_backend="llama.cpp")
    with pytest.raises(ValueError, match="anchor to 0"):
        PolicyArguments(dataset="x", judge="toy-oracle", world_seed=0, topology="anchor",
                        topology_options='{"anchor": 2}', greedy_anchor=True)
    with pytest.raises(ValueError, match="rewards must be one of"):
        PolicyArguments(dataset="x", judge="toy-oracle", world_seed=0, rewards="rubrics")
    with pytest.raises(ValueError, match="scorer_server"):
        PolicyArguments(dataset="x", judge="toy-oracle", world_seed=0, rewards="rubric", rubric_scorer="server")


@pytest.mark.slow
def test_rubric_rewards_generate_each_prompts_rubric_once_and_score_every_completion(policy_dir, tmp_path):
    """The untrained tiny model as rubric generator writes no valid rubric, so every prompt gets the general rubric
    (logged, cached once per prompt); the toy scorer rates 5 on items that name no entity, so every completion's
    Eq. 2 score is (5 - 1) / 9 whatever it says, beside the tournament's reward."""
    out = tmp_path / "rubric"
    trainer = _run(policy_dir, out, "--max_steps", "2", "--rewards", "tournament+rubric", "--rubric_scorer", "toy",
                   "--rubric_generator", str(policy_dir / "tiny"), "--rubric_style", "compact",
                   "--rubric_max_new_tokens", "8", "--format_pattern", "")
    questions = {json.loads(x)["question"] for x in (policy_dir / "prompts.jsonl").read_text().splitlines()}
    cached = [json.loads(x) for x in (out / "rubrics.jsonl").read_text().splitlines()]
    assert sorted(c["query"] for c in cached) == sorted(questions)  # one generation per prompt, no more
    logs = [h for h in trainer.state.log_history if "rewards/rubric_score/mean" in h]
    assert len(logs) == 2 and all(math.isclose(h["rewards/rubric_score/mean"], 4 / 9, rel_tol=1e-5) for h in logs)
    assert all(h["rewards/rubric_score/std"] == 0.0 and "tournament/judge_calls" in h for h in logs)


@pytest.mark.slow
def test_a_bad_rubric_column_or_none_at_all_stops_before_training(policy_dir, tmp_path):
    rows = [json.loads(x) for x in (policy_dir / "prompts.jsonl").read_text().splitlines()]
    good = '[{"title": "Names it", "description": "Names the river.", "weight": 1}]'
    bad = tmp_path / "bad.jsonl"
    bad.write_text("".join(json.dumps({**r, "rubric": good if i != 3 else '[{"title": "x"}]'}) + "\n"
                           for i, r in enumerate(rows)))
    with pytest.raises(ValueError, match="row 3's rubric column does not parse"):
        _run(policy_dir, tmp_path / "a", "--rewards", "rubric", "--rubric_scorer", "toy", "--dataset", str(bad))
    with pytest.raises(ValueError, match="needs a rubric column"):
        _run(policy_dir, tmp_path / "b", "--rewards", "rubric", "--rubric_scorer", "toy")


@pytest.fixture(scope="module")
def agent_dir(tmp_path_factory):
    """The toy agent task, bm25 indexes of world 0's fact passages and a tiny policy warmed up (60 steps) on gold
    agent trajectories that always search."""
    from retrieval.build_index import build_index
    from toy.agent_task import ToyAgentTask
    from toy.tiny import build
    from toy.world import ToyWorld
    from train.warmup_trainer import parse, train_warmup

    root = tmp_path_factory.mktemp("agent")
    world = ToyWorld(0)
    task = ToyAgentTask(world)
    with (root / "prompts.jsonl").open("w") as f:
        for row in task.rows("grpo")[:16]:
            f.write(json.dumps(row) + "\n")
    with (root / "sft.jsonl").open("w") as f:
        for record in task.sft_records(240, 1.0, random.Random(0)):
            f.write(json.dumps(record) + "\n")
    world.write_corpora(root / "corpora", "fact")
    for name in ("wiki", "arxiv"):
        build_index(root / "corpora" / f"{name}.tsv", "bm25", root / "indexes" / name, progress=False)
    build(root / "tiny")
    train_warmup(*parse([
        "--dataset", str(root / "sft.jsonl"), "--model_name_or_path", str(root / "tiny"), "--output_dir",
        str(root / "warm"), "--max_steps", "60", "--per_device_train_batch_size", "8", "--learning_rate", "1e-2",
        "--lr_scheduler_type", "constant", "--disable_tqdm", "true", "--save_strategy", "no", "--report_to", "none",
        "--use_cpu", "true", "--dtype", "float32", "--gradient_checkpointing", "false", "--logging_steps", "100"]))
    return root, task


@pytest.mark.slow
def test_a_search_agent_searches_with_masked_evidence_and_its_judge_sees_only_the_final_answer(agent_dir, tmp_path,
                                                                                              monkeypatch):
    from openrm.agent import sample_agent_answers
    from toy.oracle import ToyOracle
    from train.policy_trainer import parse, train_policy

    seen = []
    compare = ToyOracle.compare_many
    monkeypatch.setattr(ToyOracle, "compare_many", lambda self, items: (seen.extend(items), compare(self, items))[1])
    root, task = agent_dir
    locations = {name: str(root / "indexes" / name) for name in ("wiki", "arxiv")}
    rows = task.rows("grpo")[:4]
    samples = sample_agent_answers(root / "warm", [r["prompt"] for r in rows], 2, 1.0, locations, seed=0)
    assert [len(g) for g in samples] == [2] * 4
    assert sum(s["searches"] for g in samples for s in g) >= 4  # the warm-up always searches
    for s in (s for g in samples for s in g):
        assert "<information>" not in s["answer"] and s["tokens"] <= len(s["text"])
    out = tmp_path / "run"
    trainer = train_policy(*parse([
        "--config", str(ROOT / "configs/grpo_policy/tiny_cpu.yaml"), "--model_name_or_path", str(root / "warm"),
        "--dataset", str(root / "prompts.jsonl"), "--output_dir", str(out), "--per_device_train_batch_size", "16",
        "--num_generations", str(N_GEN), "--max_completion_length", "160", "--logging_steps", "1", "--max_steps", "1",
        "--format_pattern", "", "--policy_retrievers", *[f"{k}={v}" for k, v in locations.items()],
        "--policy_max_new_tokens", "40"]))
    assert trainer.state.global_step == 1
    records = _matches(out)
    assert len(records) == 4 and all(len(r["matches"]) == 6 for r in records)
    assert len(seen) == 4 * 6  # the oracle plays one order of each of C(4, 2) matches per group
    shown = [text for _, x, y in seen for text in (x, y)]
    bad = [text for text in shown for tag in ("<information>", "<search>", "<answer>", "Doc 1") if tag in text]
    assert not bad, bad[:3]
    grpo_rows = {r["question"]: r for r in task.rows("grpo")}
    assert all(q in grpo_rows for q, _, _ in seen)


def test_a_search_agents_arguments_are_checked():
    from train.policy_trainer import PolicyArguments

    with pytest.raises(ValueError, match="no --policy_retrievers entry serves"):
        PolicyArguments(dataset="x", judge="toy-oracle", world_seed=0, policy_retrievers=["wiki=runs/wiki"])
    with pytest.raises(ValueError, match="greedy anchor"):
        PolicyArguments(dataset="x", judge="toy-oracle", world_seed=0, greedy_anchor=True,
                        policy_retrievers=["wiki=w", "arxiv=a"])
    with pytest.raises(ValueError, match="policy_max_information_tokens"):
        PolicyArguments(dataset="x", judge="toy-oracle", world_seed=0, policy_retrievers=["wiki=w", "arxiv=a"],
                        policy_max_information_tokens=8)
    args = PolicyArguments(dataset="x", judge="toy-oracle", world_seed=0, policy_retrievers=["wiki=w", "arxiv=a"],
                           policy_tools=["WIKI=wiki"])
    assert [t.name for t in args.agent_tools] == ["WIKI"] and args.agent_locations == {"wiki": "w", "arxiv": "a"}


def test_a_packaged_model_name_is_a_match_judge(monkeypatch, tmp_path):
    """`--judge smollm2-135m-instruct` (the zero-shot judge) is resolved to the packaged folder, as in every other
    command, and opened there; `--judge_options` and the budget flags reach its card."""
    from openrm import judge as judge_module
    from openrm import models
    from train.policy_trainer import PolicyArguments

    seen, resolved = [], []

    class Loaded:
        def close(self):
            pass

    monkeypatch.setattr(models, "resolve", lambda name: resolved.append(name) or tmp_path)
    monkeypatch.setattr(judge_module.Judge, "open", classmethod(
        lambda cls, folder, card, batch_size, retrievers=None, *a, **kw: seen.append(
            (folder, card, batch_size, retrievers)) or Loaded()))
    args = PolicyArguments(dataset="x", judge="smollm2-135m-instruct", topology="round_robin",
                           retrievers=["wiki=idx/wiki"], judge_max_new_tokens=40, judge_options='{"max_turns": 3}')
    pairwise, _ = args.open_match([], orders=1)
    (folder, card, batch_size, retrievers), = seen
    assert resolved == ["smollm2-135m-instruct"] and folder == tmp_path
    assert retrievers == {"wiki": "idx/wiki"} and pairwise.orders == 1
    assert (card.max_new_tokens, card.max_turns, batch_size) == (40, 3, 32)
    with pytest.raises(ValueError, match="judge_options must be a JSON object"):
        PolicyArguments(dataset="x", judge="runs/judge", no_tools=True, judge_options="{max_turns")
    with pytest.raises(ValueError, match=r"unknown --judge_options \['max_new_token'\]"):
        PolicyArguments(dataset="x", judge="runs/judge", no_tools=True, judge_options='{"max_new_token": 40}')
    with pytest.raises(ValueError, match="--judge_max_new_tokens"):  # a budget has its own flag
        PolicyArguments(dataset="x", judge="runs/judge", no_tools=True, judge_options='{"max_new_tokens": 40}')
    with pytest.raises(ValueError, match="is not a model"):
        PolicyArguments(dataset="x", judge="toy-oracle", world_seed=0, judge_options='{"max_turns": 3}')
