"""A rubric generator trained by GRPO on the toy rubric task, end to end on a laptop CPU, offline: toy triplets
(toy/rubric_task.py) → a tiny generator (toy/tiny.py + rubric tokens) → a noisy SFT warm-up → GRPO with the
hybrid reward (configs/grpo_rubric_generator/tiny_cpu.yaml, toy scorer) → eval.rubrics on held-out triplets for the
warm-up and the trained generator, beside the general-rubric, pointwise and pairwise rows.

    python -m toy.rubric_quickstart --out runs/rubrics
    python -m toy.rubric_quickstart --out runs/rubrics --grpo_args '--scorer server --scorer_server URL/v1 ...'

A rerun reuses every finished stage.

It still builds a tiny from-scratch generator (toy/tiny.py), not the packaged SmolLM2 the judge's quickstart uses:
a from-scratch model learns the rubric's JSON format but cannot copy the query's entity from its prompt, so its gain
is in validity, not in query-specific rubrics (bench/RESULTS.md). SmolLM2, which copies from its context, is the
model on which query-specific rubrics can be learned.
"""

from __future__ import annotations

import json
import logging
import random
import shlex
from dataclasses import dataclass, field
from pathlib import Path

from toy.rubric_task import PARTS, ToyRubricTask, add_rubric_tokens
from toy.stages import built, trained
from toy.tiny import TinyConfig, built_from
from toy.tiny import build as build_tiny
from toy.world import ToyWorld

logger = logging.getLogger("openrm.rubric_quickstart")
ROOT = Path(__file__).resolve().parents[1]
CONFIG = ROOT / "configs/grpo_rubric_generator/tiny_cpu.yaml"


@dataclass
class RubricQuickstartArguments:
    out: str = field(default="runs/rubrics", metadata={"help": "Folder for every artefact of the run."})
    seed: int = field(default=0, metadata={"help": "Seed of the toy world, the tiny generator and the warm-up."})
    n_queries: int = field(default=32, metadata={"help": "Distinct queries (half GRPO, half held out)."})
    samples_per_query: int = field(default=40, metadata={"help": "Warm-up rubrics per query."})
    heldout_per_query: int = field(default=2, metadata={"help": "Held-out triplets per held-out query."})
    hidden_size: int = field(default=64, metadata={"help": "Width of the tiny generator."})
    num_layers: int = field(default=2, metadata={"help": "Depth of the tiny generator."})
    sft_steps: int = field(default=300, metadata={"help": "Warm-up steps (batch 32)."})
    sft_learning_rate: float = field(default=1e-2, metadata={"help": "Peak warm-up learning rate (cosine)."})
    grpo_steps: int = field(default=40, metadata={"help": "GRPO steps."})
    grpo_args: str = field(default="", metadata={"help": "More train/grpo_rubric_generator.py flags."})
    eval_samples: int = field(default=4, metadata={"help": "Rubrics sampled (T = 1) per held-out triplet."})

    def __post_init__(self) -> None:
        if self.n_queries < 16 or min(self.samples_per_query, self.sft_steps, self.grpo_steps, self.eval_samples) < 1:
            raise ValueError("n_queries must be >= 16 (8 GRPO queries per step); steps and samples >= 1")


def write_task(task: ToyRubricTask, out: Path, samples: int, heldout_per_query: int, seed: int) -> Path:
    out.mkdir(parents=True, exist_ok=True)
    for part, per in zip(PARTS, (1, heldout_per_query), strict=True):
        with (out / f"{part}.jsonl").open("w", encoding="utf-8") as f:
            for row in task.triplets(part, per):
                f.write(json.dumps(row) + "\n")
    with (out / "sft.jsonl").open("w", encoding="utf-8") as f:
        for record in task.sft_records(samples, random.Random(f"rubric:sft:{seed}")):
            f.write(json.dumps(record) + "\n")
    return out


def tiny_generator(out: Path, cfg: TinyConfig) -> Path:
    if built_from(out, cfg) and (out / "rubric_tokens.json").exists():
        return out
    build_tiny(out, cfg)
    (out / "rubric_tokens.json").write_text(json.dumps({"added": add_rubric_tokens(out)}) + "\n")
    return out


def warm_up(base: Path, data: Path, out: Path, steps: int, learning_rate: float, seed: int) -> Path:
    from train import sft_warmup

    want = {"base": str(base), "steps": steps, "lr": learning_rate, "seed": seed}
    return built(out, want, lambda: sft_warmup.main(*sft_warmup.parse([
        "--dataset", str(data / "sft.jsonl"), "--model_name_or_path", str(base), "--output_dir", str(out),
        "--max_steps", str(steps), "--per_device_train_batch_size", "32", "--learning_rate", str(learning_rate),
        "--lr_scheduler_type", "cosine", "--warmup_steps", str(max(steps // 20, 1)), "--max_length", "96",
        "--save_strategy", "no", "--report_to", "none", "--use_cpu", "true", "--dtype", "float32",
        "--logging_steps", str(max(steps // 10, 1)), "--seed", str(seed), "--disable_tqdm", "true"])),
        f"the noisy SFT warm-up of the generator ({steps} steps)")


def grpo(model: Path, data: Path, out: Path, steps: int, seed: int, extra: list[str]) -> Path:
    from train import grpo_rubric_generator as g

    return trained(out, {"model": str(model), "seed": seed, "extra": extra}, steps, g.RUN_FILE,
                   lambda resume: g.main(*g.parse([
                       "--config", str(CONFIG), "--model_name_or_path", str(model), "--dataset",
                       str(data / "grpo.jsonl"), "--output_dir", str(out), "--max_steps", str(steps), "--seed",
                       str(seed), *extra, *resume])),
                   "GRPO of the generator on the hybrid reward")


def evaluate(data: Path, generator: Path, out: Path, samples: int, seed: int, methods: str, scorer: list[str]) -> dict:
    from trl import TrlParser

    from eval import rubrics

    (args,) = TrlParser(rubrics.RubricEvalArguments).parse_args_into_dataclasses([
        "--triplets", str(data / "heldout.jsonl"), "--out", str(out), "--generator_path", str(generator),
        "--prompt_style", "compact", "--samples", str(samples), "--temperature", "1.0", "--max_new_tokens", "48",
        "--seed", str(seed), "--methods", methods, *scorer])
    return rubrics.main(args)


def main(args: RubricQuickstartArguments, scorer: list[str] | None = None) -> dict:
    """`scorer`: eval.rubrics scorer flags (default: the toy scorer in process)."""
    out, scorer = Path(args.out), scorer or ["--scorer", "toy", "--world_seed", str(args.seed)]
    task = ToyRubricTask(ToyWorld(args.seed), args.n_queries, seed=args.seed)
    data = write_task(task, out / "data", args.samples_per_query, args.heldout_per_query, args.seed)
    base = tiny_generator(out / "tiny", TinyConfig.whole_word(args.seed, args.hidden_size, args.num_layers))
    warm = warm_up(base, data, out / "warm", args.sft_steps, args.sft_learning_rate, args.seed)
    trained = grpo(warm, data, out / "grpo", args.grpo_steps, args.seed, shlex.split(args.grpo_args))
    before = evaluate(data, warm, out / "eval-warm", args.eval_samples, args.seed,
                      "generated,general,pointwise,pairwise", scorer)
    after = evaluate(data, trained, out / "eval-grpo", args.eval_samples, args.seed, "generated", scorer)
    table = {"before": before["methods"], "after": after["methods"]}
    (out / "results.json").write_text(json.dumps(table, indent=2) + "\n", encoding="utf-8")
    b, a = before["methods"]["generated"], after["methods"]["generated"]
    logger.info("held-out: valid JSON %.3f -> %.3f, preference accuracy %.3f -> %.3f", b["valid_rate"],
                a["valid_rate"], b["accuracy"], a["accuracy"])
    return table


if __name__ == "__main__":
    from trl import TrlParser

    logging.basicConfig(level=logging.INFO, format="%(message)s")
    (parsed_args,) = TrlParser(RubricQuickstartArguments).parse_args_and_config()
    main(parsed_args)
