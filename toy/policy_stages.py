"""The policy quickstart's stages (toy/policy_quickstart.py): its arguments, the toy policy task's files, the tiny
policy, the noisy SFT warm-up, GRPO on tournament rewards and the head-to-head against the step-0 policy, each
cached under the run folder. experiments/policy_learning_proof.py runs the same stages per topology and seed.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from toy.policy_task import FORMAT_PATTERN, PARTS, ToyPolicyTask
from toy.stages import built, trained, write_task_files
from toy.tiny import TinyConfig, built_from
from toy.tiny import build as build_tiny

logger = logging.getLogger(__name__)
ROOT = Path(__file__).resolve().parents[1]
CONFIG = ROOT / "configs/grpo_policy/tiny_cpu.yaml"
STAGES = 5


@dataclass
class PolicyQuickstartArguments:
    out: str = field(default="runs/policy", metadata={"help": "Folder for every artefact of the run."})
    seed: int = field(default=0, metadata={"help": "Seed of the toy world, the tiny policy and the warm-up."})
    n_questions: int = field(default=64, metadata={"help": "Distinct questions (half GRPO, half held out)."})
    samples_per_question: int = field(default=40, metadata={"help": "Warm-up answers per question."})
    hidden_size: int = field(default=64, metadata={"help": "Width of the tiny policy."})
    num_layers: int = field(default=2, metadata={"help": "Depth of the tiny policy."})
    sft_steps: int = field(default=500, metadata={"help": "Warm-up steps (batch 64)."})
    sft_learning_rate: float = field(default=1e-2, metadata={"help": "Peak warm-up learning rate (cosine)."})
    grpo_steps: int = field(default=100, metadata={"help": "GRPO steps (configs/grpo_policy/tiny_cpu.yaml)."})
    grpo_seed: int = field(default=0, metadata={"help": "Seed of the GRPO run (sampling and tournaments)."})
    grpo_args: str = field(default="", metadata={"help": "More train/grpo_policy.py flags, e.g. "
                                                         "'--topology anchor --greedy_anchor true'."})
    eval_samples: int = field(default=8, metadata={"help": "Answers per prompt and policy in the head-to-head."})

    def __post_init__(self) -> None:
        if min(self.n_questions, self.samples_per_question, self.sft_steps, self.grpo_steps, self.eval_samples) < 1:
            raise ValueError("n_questions, samples_per_question, sft_steps, grpo_steps and eval_samples must be >= 1")
        if self.n_questions < 16:  # tiny_cpu.yaml takes 8 prompts per step from the GRPO half
            raise ValueError(f"n_questions must be >= 16 (8 GRPO prompts per step), got {self.n_questions}")

    def tiny_config(self) -> TinyConfig:
        return TinyConfig.whole_word(self.seed, self.hidden_size, self.num_layers)


def stage(n: int, message: str, *args) -> None:
    logger.info(f"[{n}/{STAGES}] {message}", *args)


def write_task(task: ToyPolicyTask, out: Path, samples: int, seed: int) -> Path:
    return write_task_files(out, {**{part: task.rows(part) for part in PARTS},
                                  "sft": task.sft_records(samples, random.Random(f"policy:sft:{seed}"))})


def tiny_policy(out: Path, cfg: TinyConfig) -> Path:
    if built_from(out, cfg):
        stage(2, "reusing tiny policy at %s", out)
        return out
    stage(2, "building tiny policy at %s", out)
    return build_tiny(out, cfg)


def warm_up(base: Path, data: Path, out: Path, steps: int, learning_rate: float, seed: int) -> Path:
    from train.warmup_trainer import configs, train_warmup

    want = {"base": str(base), "data": str(data), "steps": steps, "learning_rate": learning_rate, "seed": seed}
    return built(out, want, lambda: train_warmup(*configs(
        dataset=data / "sft.jsonl", model_name_or_path=base, output_dir=out, max_steps=steps,
        per_device_train_batch_size=64, learning_rate=learning_rate, lr_scheduler_type="cosine",
        warmup_steps=max(steps // 20, 1), max_length=128, save_strategy="no", report_to="none", use_cpu=True,
        dtype="float32", logging_steps=max(steps // 10, 1), seed=seed, disable_tqdm=True)),
        f"the noisy SFT warm-up of the policy ({steps} steps)", log=lambda m, *a: stage(3, m, *a))


def grpo(model: Path, data: Path, out: Path, steps: int, seed: int, values: dict | None = None,
         flags: Sequence[str] = ()) -> Path:
    """GRPO of the policy from `model` with CONFIG; `values` set more of train/policy_trainer.py's fields by name,
    `flags` are command-line words a person passed through (`--grpo_args`)."""
    from train.policy_trainer import RUN_FILE, configs, train_policy

    values = values or {}
    return trained(out, {"model": str(model), "seed": seed, "values": values, "flags": list(flags)}, steps, RUN_FILE,
                   lambda resume: train_policy(*configs(
                       CONFIG, flags, model_name_or_path=model, dataset=data / "grpo.jsonl", output_dir=out,
                       max_steps=steps, seed=seed, resume_from_checkpoint=resume, **values)),
                   "GRPO of the policy on tournament rewards", log=lambda m, *a: stage(4, m, *a))


def answer_quality(task: ToyPolicyTask, rows: list[dict], answers: list[list[str]]) -> dict[str, float]:
    """Share of sampled answers that state the truth (the oracle's agreement) and that keep the format."""
    import re

    from toy.oracle import ToyOracle

    oracle, fmt = ToyOracle.from_rows(task.world, rows), re.compile(FORMAT_PATTERN)
    flat = [(r["question"], a) for r, group in zip(rows, answers, strict=True) for a in group]
    return {"truth": sum(oracle.agreements(q, a) == 1 for q, a in flat) / len(flat),
            "format": sum(fmt.fullmatch(a) is not None for _, a in flat) / len(flat)}


def evaluate(task: ToyPolicyTask, baseline: Path, policy: Path, samples: int, seed: int) -> dict:
    """The policy against `baseline` (its step-0 self) on both parts: toy-oracle win rate of T = 1 samples with a
    95 % bootstrap interval over prompts, and the share of answers that state the truth and keep the format."""
    from eval.win_rate import head_to_head, sample_answers
    from toy.oracle import ToyOracle

    table = {}
    for part in PARTS:
        rows = task.rows(part)
        prompts = [r["prompt"] for r in rows]
        before = sample_answers(baseline, prompts, samples, 1.0, 24, seed=1000 + seed)
        after = sample_answers(policy, prompts, samples, 1.0, 24, seed=2000 + seed)
        h2h = head_to_head(ToyOracle.from_rows(task.world, rows), [r["question"] for r in rows], after, before,
                           seed=seed)
        table[part] = {"win_rate": h2h.win_rate, "ci": [h2h.ci_low, h2h.ci_high],
                       "before": answer_quality(task, rows, before), "after": answer_quality(task, rows, after)}
    return table
