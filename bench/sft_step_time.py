"""CPU step time of the tiny judge's SFT stages with length-sorted micro-batches (sft_warmup --sort_within_steps).

    .venv/bin/python bench/sft_step_time.py --seed 0 --steps 500
    .venv/bin/python bench/sft_step_time.py --seed 0 --steps 300 --stage warmup

Runs `train/sft_warmup.py` exactly as the quickstart does (plain LM head, constant 3e-3), from a fresh tiny judge of
`--seed`, on the quickstart's first induction stage (64 drills of 128 words a step) or its warm-up mixture (32 gold
trajectories and drills a step), once per number of length-sorted micro-batches per step (1 = one padded batch, as
before session 26), one after another in this process (OMP_NUM_THREADS sets the threads). Prints seconds per step,
overall and over the last fifth of the steps, as a markdown table; numbers go in bench/RESULTS.md.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import logging
import os
import random
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def write_records(kind: str, tiny: Path, seed: int, world_seed: int, steps: int, out: Path) -> int:
    """The stage's records, in the quickstart's order; returns the records per step."""
    from transformers import AutoTokenizer

    from openrm.toyworld import ToyWorld, WorldSize
    from train.curriculum import INDUCTION_BATCH, WARMUP_BATCH, gold_records, induction_drill, induction_words

    world = ToyWorld(world_seed, WorldSize())
    tokenizer = AutoTokenizer.from_pretrained(tiny)
    if kind == "induction":
        words = induction_words(tokenizer, world, 128, seed)
        rng = random.Random(f"quickstart:induction:{seed}:128:(8, 24)")
        records, batch = [induction_drill(words, rng) for _ in range(steps * INDUCTION_BATCH)], INDUCTION_BATCH
    else:
        ids = induction_words(tokenizer, world, 0, seed)
        records = gold_records(world, steps * WARMUP_BATCH, 0.5, seed, copy_share=0.15, decision_share=0.2,
                               induction_share=0.2, induction_ids=ids)
        batch = WARMUP_BATCH
    out.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return batch


def run(data: Path, tiny: Path, out: Path, steps: int, batch: int, micro: int) -> dict:
    """One warm-up run; seconds per step from a clock read at the end of every step."""
    from transformers import TrainerCallback

    from train import sft_warmup

    stamps: list[float] = []

    class Clock(TrainerCallback):
        def on_step_end(self, args, state, control, **kwargs):
            stamps.append(time.perf_counter())

    sft_warmup.main(*sft_warmup.parse([
        "--dataset", str(data), "--lm_head", "plain", "--model_name_or_path", str(tiny), "--output_dir", str(out),
        "--max_steps", str(steps), "--per_device_train_batch_size", str(batch // micro),
        "--gradient_accumulation_steps", str(micro), "--sort_within_steps", str(micro > 1).lower(),
        "--learning_rate", "3e-3", "--lr_scheduler_type", "constant", "--max_length", "512", "--save_strategy", "no",
        "--report_to", "none", "--use_cpu", "true", "--dtype", "float32", "--gradient_checkpointing", "false",
        "--seed", "0", "--disable_tqdm", "true", "--logging_steps", str(steps)]), callbacks=[Clock()])
    tail = max(len(stamps) // 5, 1)
    return {"s_per_step": (stamps[-1] - stamps[0]) / (len(stamps) - 1),
            "last_fifth_s_per_step": (stamps[-1] - stamps[-1 - tail]) / tail}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=1, help="tiny judge and toy world seed")
    parser.add_argument("--steps", type=int, default=600, help="optimizer steps per setting")
    parser.add_argument("--world", type=int, default=None,
                        help="toy world of the tokenizer and records (default: --seed's, as the quickstart; "
                             "bench/learning_proof.py uses world 0 for every seed)")
    parser.add_argument("--stage", choices=("induction", "warmup"), default="induction")
    parser.add_argument("--micro-batches", type=int, nargs="+", default=[1, 2, 4],
                        help="micro-batch counts to time (each divides the step's records)")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING)
    import torch

    from openrm.tiny import TinyConfig, build

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        world = args.seed if args.world is None else args.world
        config = dataclasses.replace(TinyConfig.whole_word(args.seed, 64, 4, 32), world_seed=world)
        tiny = build(root / "tiny", config)
        batch = write_records(args.stage, tiny, args.seed, world, args.steps, root / "records.jsonl")
        rows = []
        for micro in args.micro_batches:
            t = time.perf_counter()
            result = run(root / "records.jsonl", tiny, root / f"micro-{micro}", args.steps, batch, micro)
            rows.append((micro, result, time.perf_counter() - t))
    print(f"{args.stage}, seed {args.seed}, world {world}, {args.steps} steps of {batch}, "
          f"{torch.get_num_threads()} threads\n")
    print("| micro-batches | s / step | s / step, last fifth | vs one batch | run wall s |\n|---|---|---|---|---|")
    for micro, r, wall in rows:
        ratio = r["s_per_step"] / rows[0][1]["s_per_step"]
        print(f"| {micro} | {r['s_per_step']:.3f} | {r['last_fifth_s_per_step']:.3f} | {ratio:.2f}x | {wall:.0f} |")


if __name__ == "__main__":
    main()
