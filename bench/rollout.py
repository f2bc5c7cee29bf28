"""Rollout overhead, judging throughput and the parts of a GRPO step, on the quickstart's SmolLM2 judge on CPU.

    make quickstart                                   # builds runs/quickstart (SmolLM2 after its SFT warm-up)
    .venv/bin/python -m bench.rollout --quickstart runs/quickstart [--part overhead|pairs|grpo] [--out F.json]

1. Overhead: `openrm.rollout.rollout` (multi-turn, searches against the bm25 toy indexes, temperature 1, seed 0) on
   R prompts, in both session modes: "resend" (`HFGenerator(reuse_cache=False)`: every turn prefills each row's
   whole context again, the older rollout) and "kv" (`HFGenerator()`: each row keeps its KV cache and a
   turn prefills only its new tokens). Each mode's wall time is divided by two plain batched `model.generate`
   calls built from that mode's own trajectories (S sampled tokens in all, row i with information tokens I_i):
   - plain: the R prompts, every row forced to sample exactly S / R tokens (min = max new tokens);
   - plain + information: row i's prompt followed by its I_i, left-padded, so the same information
     tokens are prefilled once, every row forced to sample exactly S / R tokens;
   - plain + information, own lengths (the yardstick of the <= 1.10 goal): the same inputs, row i forced to sample
     exactly its own n_i sampled tokens (EOS suppressed, a stopping criterion per row). One batched `generate` then
     runs max n_i steps, as any batched generation of those rows must: the same sampled and prefilled tokens per
     row as the rollout, in one turn. The S / R yardsticks run mean n_i steps instead, so on a model whose step
     cost does not depend on the batch (this tiny one on CPU) no rollout can come near them when lengths differ.
   Workloads are interleaved over --reps repetitions and medians are reported; a forward hook counts model calls.
   A greedy pass of both modes checks that they give the same ids and log-probs on the trained judge.
2. Pairs: `Judge.compare_batch` (both orders, greedy, with search) on held-out pairs at batch 1, 8 and 32 rollouts:
   judged pairs per second; `--vs-plain` times the generator with its work-sharing off too (`HFGenerator`'s
   `share_prefill` and `grouped_attention`), interleaved over --reps runs, and checks the verdicts are the same.
3. GRPO step: `train/grpo_openrm.py` with configs/grpo_openrm/smollm2_cpu.yaml for a few steps, timing the
   generator, the ToolBox, the reward function and the rollout's own bookkeeping; the update is the rest of the step
   (the trainer's forward/backward and optimizer). `--vs-plain`: the steps with the generator's work-sharing off and
   the update reading each row's prompt with it (TRL's pass, `SharedPromptGRPOTrainer.share_prompts = False`).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import time
from functools import partialmethod
from pathlib import Path
from unittest import mock

from bench import overhead
from bench.pairs import CONFIG, MODEL, pairs_per_second, render_pairs
from bench.stopwatch import Stopwatch

ROOT = Path(__file__).resolve().parents[1]

SECTION = "## Training: GRPO step time, SmolLM2 judge"


def grpo_share(qs: Path, steps: int, watch: Stopwatch, bf16: bool = False, plain: bool = False,
               trl_update: bool = False, autocast_decoding: bool = False, shuffled_chunks: bool = False,
               config: Path = CONFIG, model: Path | None = None, dataset: Path | None = None,
               retrievers: list[str] | None = None, bf16_copy: bool = False,
               score_environment: bool = False) -> dict:
    """A few GRPO steps of the quickstart's judge, timing the reward function and the rollout next to what `watch`
    already times ("generate", "toolbox"); the rollout's bookkeeping is its time outside those two. `plain`: the
    rollouts' generators with their work-sharing off (`share_prefill`, `grouped_attention`) and the update reading
    each row's prompt (`share_prompts`); `trl_update`: only the latter; `autocast_decoding`: the one-token decoding
    steps under the trainer's bf16 autocast too (`HFGenerator(float32_decoding=False)`); `shuffled_chunks`: a
    batch whose loss is taken in chunks cut from TRL's shuffled rows (`SharedPromptGRPOTrainer.group_prompts`);
    `bf16_copy`: under bf16 the rollouts generate with an `openrm.rollout.Bf16Copy` of the trained model;
    `score_environment`: the update's LM head scores the environment's tokens too
    (`SharedPromptGRPOTrainer.skip_environment`).
    `config`, `model`, `dataset` and `retrievers` replace the quickstart's (e.g. the real-text recipe)."""
    import openrm.rollout as rollout_module
    from openrm import reward as reward_module
    from openrm.generation import HFGenerator
    from train import judge_trainer
    from train.shared_prompt import SharedPromptGRPOTrainer

    make_reward = reward_module.make_openrm_reward
    judge_trainer.make_openrm_reward = lambda *a, **k: watch.timed(make_reward(*a, **k), "reward")
    watch.wrap(rollout_module, "rollout", "rollout")
    watch.clear()
    out = qs / "bench-grpo"
    # the trainer's rollouts build their own generators: with `plain`, built with the work-sharing off
    off = dict(share_prefill=False, grouped_attention=False, growing_cache=False) if plain else {}
    if autocast_decoding:
        off["float32_decoding"] = False
    sharing = (mock.patch.object(HFGenerator, "__init__", partialmethod(HFGenerator.__init__, **off)) if off
               else contextlib.nullcontext())
    prompts = (mock.patch.object(SharedPromptGRPOTrainer, "share_prompts", False) if plain or trl_update
               else contextlib.nullcontext())
    chunks = (mock.patch.object(SharedPromptGRPOTrainer, "group_prompts", False) if shuffled_chunks
              else contextlib.nullcontext())
    t = time.perf_counter()
    retrievers = retrievers or [f"wiki={qs / 'indexes' / 'wiki'}", f"arxiv={qs / 'indexes' / 'arxiv'}"]
    environment = (mock.patch.object(SharedPromptGRPOTrainer, "skip_environment", False) if score_environment
                   else contextlib.nullcontext())
    with sharing, prompts, chunks, environment:
        trainer = judge_trainer.train_judge(*judge_trainer.configs(
            config, model_name_or_path=model or qs / MODEL, dataset=dataset or qs / "data" / "dataset",
            output_dir=out, max_steps=steps, save_strategy="no", retrievers=retrievers, bf16=bf16,
            **({"bf16_copy": True} if bf16_copy else {})))
    wall = time.perf_counter() - t
    step_time = sum(h["step_time"] for h in trainer.state.log_history if "step_time" in h)
    bookkeeping = watch["rollout"] - watch["generate"] - watch["toolbox"]
    outside = watch["toolbox"] + bookkeeping + watch["reward"]
    return {"steps": steps, "bf16": bf16, "plain": plain, "trl_update": trl_update,
            "autocast_decoding": autocast_decoding, "shuffled_chunks": shuffled_chunks, "bf16_copy": bf16_copy,
            "score_environment": score_environment,
            "config": str(config),
            "step_time_s": round(step_time, 2), "wall_s": round(wall, 2),
            "generate_s": round(watch["generate"], 2), "toolbox_s": round(watch["toolbox"], 3),
            "bookkeeping_s": round(bookkeeping, 3), "reward_s": round(watch["reward"], 3),
            "outside_share": round(outside / step_time, 4)}


def render(g: dict, qs: Path) -> str:
    import yaml

    update = g["step_time_s"] - g["generate_s"] - g["toolbox_s"] - g["bookkeeping_s"] - g["reward_s"]
    config = Path(g.get("config", CONFIG))
    cfg = yaml.safe_load(config.read_text(encoding="utf-8"))
    per_step = cfg["per_device_train_batch_size"] * cfg.get("gradient_accumulation_steps", 1)
    shape = f"{per_step // cfg['num_generations']} prompts x {cfg['num_generations']} completions a step"
    return "\n".join([
        SECTION, "",
        f"`.venv/bin/python -m bench.rollout --quickstart {qs} --part grpo --steps {g['steps']}"
        f"{' --bf16' if g['bf16'] else ''}` (SmolLM2 after the quickstart's SFT warm-up, "
        f"{config.relative_to(ROOT) if config.is_relative_to(ROOT) else config}: {shape}"
        f"{', under bf16 autocast' if g['bf16'] else ', float32'}; torch "
        "2.13.0 CPU, 2 cores, bm25 toy indexes in process). Seconds summed over the steps.", "",
        "| part of the step | seconds | share |", "|---|---|---|",
        *(f"| {name} | {value:.2f} | {100 * value / g['step_time_s']:.1f} % |" for name, value in (
            ("generation (model)", g["generate_s"]), ("retrieval (ToolBox)", g["toolbox_s"]),
            ("rollout bookkeeping", g["bookkeeping_s"]), ("scoring (reward)", g["reward_s"]),
            ("the update (forward/backward, optimizer, TRL's own work)", update))),
        f"| **one step** | **{g['step_time_s'] / g['steps']:.2f}** | |", ""])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quickstart", type=Path, default=ROOT / "runs/quickstart")
    ap.add_argument("--rows", type=int, default=32)
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--reps", type=int, default=5, help="interleaved runs of every overhead workload (medians)")
    ap.add_argument("--part", choices=("all", "overhead", "pairs", "grpo"), default="all")
    ap.add_argument("--pairs", type=int, default=32, help="held-out pairs judged at each batch size")
    ap.add_argument("--batches", type=int, nargs="+", default=[1, 8, 32], help="rollouts per batch (--part pairs)")
    ap.add_argument("--vs-plain", action="store_true",
                    help="--part pairs: also judge with the generator's work-sharing off, interleaved (--reps runs); "
                         "--part grpo: the steps with it off and the update reading every row's prompt")
    ap.add_argument("--vs-float32-plain", action="store_true",
                    help="--part pairs: also judge with float32 weights and the generator's work-sharing off, "
                         "interleaved (--reps runs): the default (with --bf16) against neither lever, one processor")
    ap.add_argument("--trl-update", action="store_true",
                    help="--part grpo: the steps with TRL's row-by-row update, the generator's sharing kept (alternate "
                         "runs with and without it: one process a run)")
    ap.add_argument("--autocast-decoding", action="store_true",
                    help="--part grpo with --bf16: the rollouts' one-token decoding steps under the trainer's autocast "
                         "too, not in float32 (alternate runs with and without it: one process a run)")
    ap.add_argument("--bf16-copy", action="store_true",
                    help="--part grpo with --bf16: the rollouts generate with a bf16 copy of the trained model "
                         "instead of the model itself (alternate runs with and without it)")
    ap.add_argument("--score-environment", action="store_true",
                    help="--part grpo: the update's LM head scores the environment's <information> tokens too, "
                         "which the loss masks (alternate runs with and without it)")
    ap.add_argument("--shuffled-chunks", action="store_true",
                    help="--part grpo: a batch whose loss is taken in chunks (the real-text config) cut from TRL's "
                         "shuffled rows, not whole prompts (alternate runs with and without it)")
    ap.add_argument("--config", type=Path, default=CONFIG, help="--part grpo: the GRPO config")
    ap.add_argument("--model", type=Path, default=None, help="--part grpo: the judge (default: QUICKSTART/judge-sft)")
    ap.add_argument("--dataset", type=Path, default=None, help="--part grpo: (default: QUICKSTART/data/dataset)")
    ap.add_argument("--retrievers", nargs="+", default=None,
                    help="--part grpo: CORPUS=LOCATION (default: the quickstart's toy indexes)")
    ap.add_argument("--bf16", action="store_true",
                    help="GRPO under bf16 autocast (float32 weights), judging with bf16 weights; default float32")
    ap.add_argument("--out", type=Path, default=None,
                    help="write the measurements here as JSON; the printed tables go into bench/RESULTS.md's "
                         "fragments by hand, beside the parts written there that no run prints")
    args = ap.parse_args()
    if not (args.model or args.quickstart / MODEL).is_dir():
        sys.exit(f"{args.quickstart}/{MODEL} missing: run `make quickstart` first")
    from openrm.generation import HFGenerator
    from openrm.kv_session import KVSession
    from openrm.tools import ToolBox

    watch = Stopwatch()
    watch.wrap(HFGenerator, "generate", "generate")  # the resend mode's generation
    watch.wrap(KVSession, "generate", "generate")  # the kv mode's (it never calls HFGenerator.generate)
    watch.wrap(ToolBox, "run", "toolbox")
    measured = {}
    if args.part in ("all", "overhead"):
        o = overhead.measure(args.quickstart / MODEL, args.quickstart / "indexes", args.rows, args.reps, watch)
        print(json.dumps(o), flush=True)
        print(overhead.render(o, args.quickstart))
        measured["overhead"] = o
    if args.part in ("all", "pairs"):
        p = pairs_per_second(args.quickstart, args.pairs, tuple(args.batches), args.bf16,
                             args.reps if args.vs_plain or args.vs_float32_plain else 1, args.vs_plain,
                             args.vs_float32_plain)
        print(json.dumps(p), flush=True)
        print(render_pairs(p, args.quickstart))
        measured["pairs"] = p
    if args.part in ("all", "grpo"):
        g = grpo_share(args.quickstart, args.steps, watch, args.bf16, args.vs_plain, args.trl_update,
                       args.autocast_decoding, args.shuffled_chunks, args.config, args.model, args.dataset,
                       args.retrievers, args.bf16_copy, args.score_environment)
        print(json.dumps(g), flush=True)
        print(render(g, args.quickstart))
        measured["grpo"] = g
    if args.out:
        from plumbing import atomic

        atomic.write_json(args.out, measured, indent=1)


if __name__ == "__main__":
    main()
