"""Learning proof on CPU: the judge's RL loop (multi-turn rollout, env mask, composite reward, TRL GRPO) on the
packaged SmolLM2-135M-Instruct learns what its reward asks, measured on held-out toy pairs over several seeds.

    .venv/bin/python -m experiments.learning_proof --stage a --seeds 0 1 2     # the reward shapes the tool choice
    .venv/bin/python -m experiments.learning_proof --stage b --seeds 0 1 2     # the judge learns to use evidence
    .venv/bin/python -m experiments.learning_proof --stage c --seeds 0 1 2 --variants composite   # ... to search
    .venv/bin/python -m experiments.learning_proof --stage c --variants decoupled --tool-term per_call  # over-search

Every stage uses the quickstart's pieces (toy/judge_stages.py): single-fact pairs of the toy world (fictional
facts: without search a judge can only guess), top-1 evidence, the compact prompt, an SFT warm-up on gold
trajectories (toy/warmup.py), GRPO with configs/grpo_openrm/smollm2_cpu.yaml, held-out pairs judged in both orders.

Stage A. The warm-up's trajectories carry a tool that says nothing (each tool equally often per kind of fact), on
wiki and science pairs (each tool is the right one for half of them), so the tool choice starts uninformed; then
GRPO with each reward variant from that start, each tool's advantages centred over the step (`--tool-balance false`:
the plain layout). Reported: the share of searches on the right corpus (greedy, and sampled at T=1), searches and
tokens per order, accuracy, parse failures; mean ± sd over seeds.
Stage B. The warm-up uses the right tool; then GRPO (composite); accuracy with search and without it.
Stage C. The warm-up uses the right tool but searches in only `--search-share` of its trajectories and guesses in the
rest; then GRPO with each reward variant; searches per order, accuracy, right corpus (the quickstart is seed 0).
Every stage also judges each final checkpoint on another toy world (`--other-world`: names it never saw).

Every stage is cached under --out (a rerun trains and judges only what is missing; delete a folder to redo it);
results go to `<out>/stage_<x>/results.json`, a table on stdout and `<out>/stage_<x>/curves.png` (each variant's R_EM,
searches and
R_tool over the GRPO steps, mean over seeds: the paper's Fig. 3 axes). `--bf16` (default: where the processor has
native bf16) trains under bf16 autocast and judges with bf16 weights; its folders and files carry `-bf16`.
"""

from __future__ import annotations

import argparse
import logging
import os
import time
from pathlib import Path

from experiments.cells import grpo_curve, mean_sd, plot_over_steps
from openrm.models import resolve
from plumbing import atomic
from plumbing.hardware import native_bf16
from plumbing.records import RESULTS
from toy.judge_stages import grpo, judged, measured, toy_indexes
from toy.warmup import WarmupPlan, warm_up
from toy.world import ToyWorld, write_dataset

logger = logging.getLogger("learning_proof")
WORLD_SEED = 0  # every seed judges the same toy world; seeds vary the warm-up's draws and GRPO
METRICS = ("correct_tool_share", "sampled_tool_share", "searches_per_order", "model_tokens_per_order", "accuracy",
           "parse_failures", "other_world_accuracy")


STAGE_METRICS = {
    "a": METRICS,
    "b": (*METRICS[2:], "no_search_accuracy"),
    "c": ("searches_per_order", "sampled_searches_per_order", "correct_tool_share", "model_tokens_per_order",
          "accuracy", "parse_failures", "other_world_accuracy", "no_search_accuracy"),
}


# the paper's Fig. 3 plots accuracy and tool calls over training: the plot's panels
PANELS = (("openrm/em", "training accuracy (R_EM)"), ("openrm/calls_per_trajectory", "searches / trajectory"),
          ("openrm/tool", "R_tool"))


def run_suffix(args) -> str:
    """What a GRPO run's folder and table row add to the variant's name: steps, rate, and the settings that differ
    from the config's."""
    return (("" if args.tool_term == "share" else f"-{args.tool_term}") + f"-{args.grpo_steps}x{args.grpo_lr:g}"
            + ("" if args.grpo_generations is None else f"-g{args.grpo_generations}")
            + ("" if args.grpo_beta is None else f"-kl{args.grpo_beta:g}")
            + ("" if args.grpo_batch is None else f"-b{args.grpo_batch}")
            + ("" if not args.hedge_share else f"-hedge{args.hedge_share:g}")
            + ("-toolbal" if args.tool_balance else "") + ("-bf16" if args.bf16 else ""))


def grpo_overrides(args, variant: str, seed: int, run: Path) -> dict:
    """The GRPO trainer's fields this run sets over its config, by name."""
    values = {"reward_variant": variant, "tool_term": args.tool_term, "seed": seed, "learning_rate": args.grpo_lr,
              "trajectory_log": run / "trajectories.jsonl"}
    for name, value in (("bf16", args.bf16 or None), ("tool_balance", args.tool_balance or None),
                        ("num_generations", args.grpo_generations), ("beta", args.grpo_beta),
                        ("per_device_train_batch_size", args.grpo_batch)):
        if value is not None:
            values[name] = value
    return values


def run_stage(args, world: ToyWorld, data: Path, indexes, test: list[dict], other: tuple | None) -> dict:
    stage_a = args.stage == "a"
    sampled = args.stage in ("a", "c")
    share = args.search_share if args.stage == "c" else 1.0
    base = resolve(args.model)
    bf16 = args.bf16
    judging = {"dtype": "bfloat16"} if bf16 else {}  # a float32 run's cached numbers keep their key
    runs: dict[str, dict] = {}
    for seed in args.seeds:
        plan = WarmupPlan(steps=args.sft_steps, batch=args.sft_batch, learning_rate=args.sft_lr,
                          random_tool=stage_a, search_share=share, hedge_share=args.hedge_share,
                          domains=tuple(args.domains), seed=seed, bf16=bf16)
        start = warm_up(world, base, args.out / (f"{args.stage}-sft-s{seed}-{args.sft_steps}x{args.sft_batch}"
                                                 + ("" if share == 1 else f"-search{share:g}")
                                                 + ("" if not args.hedge_share else f"-hedge{args.hedge_share:g}")
                                                 + ("-bf16" if bf16 else "")),
                        plan)
        runs[f"sft/s{seed}"] = judged(start, indexes, test, None, sampled=sampled, **judging)  # other world: trained
        if not stage_a:
            runs[f"sft/s{seed}"]["no_search_accuracy"] = measured(start, None, test, **judging)["accuracy"]
        logger.info("stage %s seed %d SFT start: %s", args.stage, seed, runs[f"sft/s{seed}"])
        for variant in (["composite"] if args.stage == "b" else args.variants) if args.grpo_steps else ():
            t = time.perf_counter()
            name = variant + run_suffix(args)
            folder = args.out / f"{args.stage}-{name}-s{seed}"
            run = grpo(start, data, indexes, folder, args.grpo_steps, **grpo_overrides(args, variant, seed, folder))
            metrics = judged(run, indexes, test, other, sampled=sampled, **judging)
            if not stage_a:
                metrics["no_search_accuracy"] = measured(run, None, test, **judging)["accuracy"]
            metrics.update(seconds=time.perf_counter() - t, curve=grpo_curve(run))
            runs[f"{name}/s{seed}"] = metrics
            logger.info("stage %s seed %d %s: %s", args.stage, seed, name,
                        {k: v for k, v in metrics.items() if k != "curve"})
    return runs


def row_names(args) -> list[str]:
    """The table's rows: the warm-up, then each variant with its run suffix."""
    names = ["sft", *(["composite"] if args.stage == "b" else args.variants)]
    return [n if n == "sft" else n + run_suffix(args) for n in names]


def table(runs: dict, args) -> str:
    names = row_names(args)
    metrics = STAGE_METRICS[args.stage]
    lines = ["| start → GRPO variant | seeds | " + " | ".join(metrics) + " |", "|---" * (len(metrics) + 2) + "|"]
    for name in names:
        rows = [runs[f"{name}/s{s}"] for s in args.seeds if f"{name}/s{s}" in runs]
        label = "SFT start" if name == "sft" else f"GRPO {name}"
        lines.append(f"| {label} | {len(rows)} | " + " | ".join(mean_sd(r.get(k) for r in rows) for k in metrics)
                     + " |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stage", choices=("a", "b", "c"), required=True,
                        help="a: tool choice; b: use of evidence; c: whether to search")
    parser.add_argument("--out", type=Path, default=Path("runs/learning-proof"), help="cache and results folder")
    parser.add_argument("--model", default="smollm2-135m-instruct", help="base model: packaged short name or folder")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2], help="warm-up and GRPO seeds")
    parser.add_argument("--variants", nargs="+", default=["composite", "unit_weight", "em_only", "decoupled"],
                        help="stage A reward variants")
    parser.add_argument("--domains", nargs="+", default=None,
                        help="toy domains of the pairs; default: wiki and science in stage A (WIKI and ARXIV are the "
                             "right tool equally often, so no single tool scores above a coin), all three in B")
    parser.add_argument("--search-share", type=float, default=0.3,
                        help="stage C: the share of warm-up trajectories that search (the rest answer at once)")
    parser.add_argument("--hedge-share", type=float, default=0.0,
                        help="share of the training pairs (warm-up and GRPO) whose wrong answer is a hedge naming "
                             "both values (toy.world.ToyWorld.hedged); experiments/hacking_audit.py measures the "
                             "result")
    parser.add_argument("--tool-term", default="share", choices=("share", "per_call"), help="R_tool's definition")
    parser.add_argument("--n-train", type=int, default=2000, help="short training pairs (GRPO prompts)")
    parser.add_argument("--n-eval", type=int, default=100, help="held-out pairs judged in both orders")
    parser.add_argument("--other-world", type=int, default=1,
                        help="seed of a second toy world whose pairs the final checkpoints are judged on too "
                             "(-1: none)")
    parser.add_argument("--sft-steps", type=int, default=40, help="warm-up steps")
    parser.add_argument("--sft-batch", type=int, default=8, help="gold trajectories per warm-up step")
    parser.add_argument("--sft-lr", type=float, default=1e-4, help="warm-up peak learning rate (cosine)")
    parser.add_argument("--grpo-steps", type=int, default=30, help="GRPO steps")
    parser.add_argument("--grpo-lr", type=float, default=1e-5, help="GRPO learning rate (constant)")
    parser.add_argument("--grpo-generations", type=int, default=None,
                        help="completions per prompt (default: the config's 4)")
    parser.add_argument("--grpo-beta", type=float, default=None,
                        help="KL coefficient against the warm-up (default: the config's 0.0)")
    parser.add_argument("--grpo-batch", type=int, default=None,
                        help="completions a step, a multiple of the group size (default: the config's 16)")
    parser.add_argument("--tool-balance", nargs="?", const="true", choices=("true", "false"), default=None,
                        help="centre each tool's advantages over a step (train/tool_balance.py; default: true for "
                             "stage a, where the plain layout learns the tool choice on 1 seed of 3, else false)")
    parser.add_argument("--bf16", choices=("true", "false"), default=None,
                        help="warm-up and GRPO under bf16 autocast, judging with bf16 weights (default: true where "
                             "the processor has native bf16, plumbing/hardware.py)")
    args = parser.parse_args()
    args.bf16 = native_bf16() if args.bf16 is None else args.bf16 == "true"
    args.tool_balance = args.stage == "a" if args.tool_balance is None else args.tool_balance == "true"
    if args.domains is None:  # with medical, WIKI is the right tool 2 times in 3
        args.domains = ["wiki", "science"] if args.stage == "a" else ["wiki", "science", "medical"]
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")
    args.out.mkdir(parents=True, exist_ok=True)
    world = ToyWorld(WORLD_SEED)
    data = args.out / (f"data-{args.n_train}-{'-'.join(args.domains)}"
                       + ("" if not args.hedge_share else f"-hedge{args.hedge_share:g}"))
    if not (data / "dataset").exists():
        write_dataset(world, data, args.n_train, max(args.n_eval, 200), style="short", granularity="fact",
                      domains=args.domains, hedge_share=args.hedge_share)
    indexes = toy_indexes(data / "corpora", args.out / f"indexes-{data.name}")
    test = world.examples(args.n_eval, "test", args.domains, style="short")
    other = None
    if args.other_world >= 0:
        if args.other_world == WORLD_SEED:
            raise SystemExit(f"--other-world must differ from the training world's seed {WORLD_SEED}")
        far = ToyWorld(args.other_world)
        far_data = args.out / f"world{args.other_world}-{'-'.join(args.domains)}"
        if not (far_data / "dataset").exists():
            write_dataset(far, far_data, 2, args.n_eval, style="short", granularity="fact", domains=args.domains)
        other = (toy_indexes(far_data / "corpora", args.out / f"indexes-{far_data.name}"),
                 far.examples(args.n_eval, "test", args.domains, style="short"))
    t = time.perf_counter()
    runs = run_stage(args, world, data, indexes, test, other)
    seconds = time.perf_counter() - t
    out = args.out / (f"stage_{args.stage}{'' if args.tool_term == 'share' else '_' + args.tool_term}"
                      + ("" if not args.hedge_share else f"_hedge{args.hedge_share:g}")
                      + ("" if args.tool_balance == (args.stage == "a") else ("_plain", "_toolbal")[args.tool_balance])
                      + ("_bf16" if args.bf16 else "")) / RESULTS
    atomic.write_json(out, {"args": {k: str(v) for k, v in vars(args).items()}, "seconds": seconds, "runs": runs},
                      indent=1)
    curves = {name: [r["curve"] for key, r in runs.items() if key.split("/")[0] == name and r.get("curve")]
              for name in row_names(args)[1:]}
    plot = plot_over_steps(curves, PANELS, out.with_name("curves.png"), window=5)
    print(table(runs, args))
    print(f"({seconds:.0f} s; {out}{f'; curves {plot}' if plot else ''})")


if __name__ == "__main__":
    main()
