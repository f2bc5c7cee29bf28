"""The rubric quickstart's pipeline (toy/rubric_quickstart.py): its arguments, the toy rubric task's files, the
generator (tiny or pretrained), the noisy SFT warm-up, GRPO on the hybrid reward and eval.rubrics on held-out
triplets, each stage cached under the run folder. `run(args)` runs them all; experiments/rubric_learning_proof.py
calls it with a served scorer.
"""

from __future__ import annotations

import json
import logging
import random
import shlex
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from toy.rubric_task import PARTS, ToyRubricTask, add_rubric_tokens
from toy.stages import built, trained, write_task_files
from toy.tiny import TinyConfig, built_from
from toy.tiny import build as build_tiny
from toy.world import ToyWorld

logger = logging.getLogger(__name__)
ROOT = Path(__file__).resolve().parents[1]
CONFIG = ROOT / "configs/grpo_rubric_generator/tiny_cpu.yaml"
PRETRAINED_CONFIG = ROOT / "configs/grpo_rubric_generator/smollm2_cpu.yaml"


@dataclass
class RubricQuickstartArguments:
    out: str = field(default="runs/rubrics", metadata={"help": "Folder for every artefact of the run."})
    seed: int = field(default=0, metadata={"help": "Seed of the toy world, the tiny generator and the warm-up."})
    model: str = field(default="tiny", metadata={
        "help": "tiny: a from-scratch generator; or a pretrained base (a packaged model's short name such as "
                "smollm2-135m-instruct, or a folder), trained with configs/grpo_rubric_generator/smollm2_cpu.yaml."})
    n_queries: int = field(default=32, metadata={"help": "Distinct queries (half GRPO, half held out)."})
    samples_per_query: int = field(default=40, metadata={"help": "Warm-up rubrics per query."})
    heldout_per_query: int = field(default=2, metadata={"help": "Held-out triplets per held-out query."})
    hidden_size: int = field(default=64, metadata={"help": "Width of the tiny generator."})
    num_layers: int = field(default=2, metadata={"help": "Depth of the tiny generator."})
    sft_steps: int = field(default=300, metadata={"help": "Warm-up steps."})
    sft_batch: int = field(default=32, metadata={"help": "Warm-up records per step."})
    sft_learning_rate: float = field(default=1e-2, metadata={"help": "Peak warm-up learning rate (cosine)."})
    grpo_steps: int = field(default=40, metadata={"help": "GRPO steps."})
    grpo_args: str = field(default="", metadata={"help": "More train/grpo_rubric_generator.py flags."})
    eval_samples: int = field(default=4, metadata={"help": "Rubrics sampled (T = 1) per held-out triplet."})
    max_new_tokens: int = field(default=0, metadata={
        "help": "Rubric length cap in evaluation (0: 48 tokens for the tiny whole-word generator, 160 otherwise)."})

    def __post_init__(self) -> None:
        if self.n_queries < 16 or min(self.samples_per_query, self.sft_steps, self.sft_batch, self.grpo_steps,
                                      self.eval_samples) < 1:
            raise ValueError("n_queries must be >= 16 (8 GRPO queries per step); steps, batch and samples >= 1")
        if self.max_new_tokens < 0:
            raise ValueError(f"max_new_tokens must be >= 0, got {self.max_new_tokens}")

    @property
    def tiny(self) -> bool:
        return self.model == "tiny"

    @property
    def config(self) -> Path:
        return CONFIG if self.tiny else PRETRAINED_CONFIG

    @property
    def eval_tokens(self) -> int:
        return self.max_new_tokens or (48 if self.tiny else 160)


def write_task(task: ToyRubricTask, out: Path, samples: int, heldout_per_query: int, seed: int) -> Path:
    return write_task_files(out, {**{part: task.triplets(part, per)
                                     for part, per in zip(PARTS, (1, heldout_per_query), strict=True)},
                                  "sft": task.sft_records(samples, random.Random(f"rubric:sft:{seed}"))})


def tiny_generator(out: Path, cfg: TinyConfig) -> Path:
    if built_from(out, cfg) and (out / "rubric_tokens.json").exists():
        return out
    build_tiny(out, cfg)
    (out / "rubric_tokens.json").write_text(json.dumps({"added": add_rubric_tokens(out)}) + "\n")
    return out


def warm_up(base: Path, data: Path, out: Path, steps: int, learning_rate: float, seed: int, batch: int = 32,
            tiny: bool = True) -> Path:
    from train.warmup_trainer import configs, train_warmup

    want = {"base": str(base), "steps": steps, "lr": learning_rate, "seed": seed,
            **({} if batch == 32 else {"batch": batch})}
    if not tiny:
        from toy.warmup import run_sft

        return built(out, want, lambda: run_sft(data / "sft.jsonl", str(base), out, steps, batch, learning_rate, seed,
                                                max_length=256),
                     f"the noisy SFT warm-up of the generator ({steps} steps)")
    return built(out, want, lambda: train_warmup(*configs(
        dataset=data / "sft.jsonl", model_name_or_path=base, output_dir=out, max_steps=steps,
        per_device_train_batch_size=batch, learning_rate=learning_rate, lr_scheduler_type="cosine",
        warmup_steps=max(steps // 20, 1), max_length=96, save_strategy="no", report_to="none", use_cpu=True,
        dtype="float32", logging_steps=max(steps // 10, 1), seed=seed, disable_tqdm=True)),
        f"the noisy SFT warm-up of the generator ({steps} steps)")


def grpo(model: Path, data: Path, out: Path, steps: int, seed: int, flags: Sequence[str] = (),
         config: Path = CONFIG, values: dict | None = None) -> Path:
    """GRPO of the generator from `model` with `config`; `values` set more of train/rubric_trainer.py's fields by
    name, `flags` are command-line words a person passed through (`--grpo_args`)."""
    from train import rubric_trainer as g

    values = values or {}
    return trained(out, {"model": str(model), "seed": seed, "values": values, "flags": list(flags)}, steps,
                   g.RUN_FILE, lambda resume: g.train_rubric_generator(*g.configs(
                       config, flags, model_name_or_path=model, dataset=data / "grpo.jsonl", output_dir=out,
                       max_steps=steps, seed=seed, resume_from_checkpoint=resume, **values)),
                   "GRPO of the generator on the hybrid reward")


def evaluate(data: Path, generator: Path, out: Path, samples: int, seed: int, methods: str, scorer: dict,
             max_new_tokens: int = 48) -> dict:
    """eval.rubrics on the held-out triplets with `generator`; `scorer`: the scorer's fields of
    eval.rubric_methods.RubricEvalArguments by name."""
    from eval import rubric_methods
    from plumbing.arguments import from_values

    (args,) = from_values((rubric_methods.RubricEvalArguments,), triplets=data / "heldout.jsonl", out=out,
                          generator_path=generator, prompt_style="compact", samples=samples, temperature=1.0,
                          max_new_tokens=max_new_tokens, seed=seed, methods=methods, **scorer)
    return rubric_methods.run(args)


def run(args: RubricQuickstartArguments, scorer: dict | None = None) -> dict:
    """Every stage of the quickstart in turn, and the before/after table; `scorer`: the scorer's fields by name,
    which eval.rubrics and the GRPO trainer share (default: the toy scorer in process, the config's for GRPO)."""
    out, served = Path(args.out), scorer
    scorer = scorer or {"scorer": "toy", "world_seed": args.seed}
    task = ToyRubricTask(ToyWorld(args.seed), args.n_queries, seed=args.seed)
    data = write_task(task, out / "data", args.samples_per_query, args.heldout_per_query, args.seed)
    if args.tiny:
        base = tiny_generator(out / "tiny", TinyConfig.whole_word(args.seed, args.hidden_size, args.num_layers))
    else:
        from openrm.models import resolve

        base = Path(resolve(args.model))
    warm = warm_up(base, data, out / "warm", args.sft_steps, args.sft_learning_rate, args.seed, args.sft_batch,
                   args.tiny)
    trained = grpo(warm, data, out / "grpo", args.grpo_steps, args.seed, shlex.split(args.grpo_args), args.config,
                   values=served)
    before = evaluate(data, warm, out / "eval-warm", args.eval_samples, args.seed,
                      "generated,general,pointwise,pairwise", scorer, args.eval_tokens)
    after = evaluate(data, trained, out / "eval-grpo", args.eval_samples, args.seed, "generated", scorer,
                     args.eval_tokens)
    table = {"before": before["methods"], "after": after["methods"]}
    (out / "results.json").write_text(json.dumps(table, indent=2) + "\n", encoding="utf-8")
    b, a = before["methods"]["generated"], after["methods"]["generated"]
    logger.info("held-out: valid JSON %.3f -> %.3f, preference accuracy %.3f -> %.3f", b["valid_rate"],
                a["valid_rate"], b["accuracy"], a["accuracy"])
    return table
