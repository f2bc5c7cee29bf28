"""Learning proof of policy GRPO on tournament rewards (train/grpo_policy.py), on CPU: the toy policy task
(toy/policy_task.py), one shared noisy warm-up, then GRPO per topology and seed, each trained policy played
against its step-0 self by the toy oracle on the GRPO prompts and on held-out prompts.

    .venv/bin/python -m experiments.policy_learning_proof --seeds 0 1 2 \
        --topologies round_robin seeded_single_elimination
    .venv/bin/python -m experiments.policy_learning_proof --seeds 0 --topologies round_robin \
        --judge-path runs/quickstart/judge --retrievers wiki=runs/quickstart/indexes/wiki \
        arxiv=runs/quickstart/indexes/arxiv            # the quickstart's trained tiny judge as the match judge

Reported per topology: judge calls per step, wall seconds per GRPO step, win rate against step 0 (T = 1 samples;
0.5 = no change) and the share of answers stating the truth, before and after: mean ± sd over seeds. Every run is
cached under --out (delete a folder to redo it); results go to
`<out>/<judge>/results.json` (`oracle` or `openrm-judge`) and a markdown table on stdout.
"""

from __future__ import annotations

import argparse
import logging
import shlex
import time
from pathlib import Path

from experiments.cells import mean_sd, tournament_stats
from plumbing import atomic
from plumbing.records import RESULTS
from toy.policy_stages import (
    PolicyQuickstartArguments,
    evaluate,
    grpo,
    tiny_policy,
    warm_up,
    write_task,
)
from toy.policy_task import PARTS, ToyPolicyTask
from toy.world import ToyWorld


def topology_values(name: str) -> dict:
    values: dict = {"topology": name}
    if name in ("anchor", "seeded_single_elimination"):
        values["greedy_anchor"] = True  # ArenaRL: the anchor is the policy's greedy decode
    return values


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default="runs/policy-proof")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--topologies", nargs="+", default=["round_robin", "seeded_single_elimination"])
    parser.add_argument("--grpo-steps", type=int, default=60)
    parser.add_argument("--judge-path", default="", help="an exported openrm judge instead of the toy oracle")
    parser.add_argument("--retrievers", nargs="*", default=[])
    parser.add_argument("--extra", default="", help="more train/grpo_policy.py flags for every run")
    args, rest = parser.parse_known_args()
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    (qs,) = __import__("trl").TrlParser(PolicyQuickstartArguments).parse_args_into_dataclasses(
        ["--out", args.out, *rest])
    out = Path(args.out)
    task = ToyPolicyTask(ToyWorld(qs.seed), qs.n_questions)
    data = write_task(task, out / "data", qs.samples_per_question, qs.seed)
    warm = warm_up(tiny_policy(out / "tiny-policy", qs.tiny_config()), data, out / "warm", qs.sft_steps,
                   qs.sft_learning_rate, qs.seed)
    judge = ({"judge": args.judge_path, **({"retrievers": args.retrievers} if args.retrievers else {"no_tools": True})}
             if args.judge_path else {})
    tag = "openrm-judge" if args.judge_path else "oracle"
    results: dict[str, list[dict]] = {}
    for topology in args.topologies:
        for seed in args.seeds:
            run_dir = out / f"grpo-{tag}-{topology}-s{seed}"
            started = time.perf_counter()
            grpo(warm, data, run_dir, args.grpo_steps, seed, {**topology_values(topology), **judge},
                 shlex.split(args.extra))
            table = evaluate(task, warm, run_dir, qs.eval_samples, seed)
            results.setdefault(topology, []).append({"seed": seed, **tournament_stats(run_dir), **table,
                                                     "wall_seconds": time.perf_counter() - started})
    atomic.write_json(out / tag / RESULTS, results)

    def ms(values) -> str:
        return mean_sd(values, 3)

    print(f"| judge | topology | judge calls / step | s / step | {' | '.join(f'win rate ({p})' for p in PARTS)} | "
          f"{' | '.join(f'truth ({p}) before → after' for p in PARTS)} |")
    print("|---" * (4 + 2 * len(PARTS)) + "|")
    for topology, runs in results.items():
        wins = " | ".join(ms(r[p]["win_rate"] for r in runs) for p in PARTS)
        truth = " | ".join(f"{ms(r[p]['before']['truth'] for r in runs)} → {ms(r[p]['after']['truth'] for r in runs)}"
                           for p in PARTS)
        print(f"| {tag} | {topology} | {ms(r['judge_calls_per_step'] for r in runs)} | "
              f"{ms(r['seconds_per_step'] for r in runs)} | {wins} | {truth} |")


if __name__ == "__main__":
    main()
