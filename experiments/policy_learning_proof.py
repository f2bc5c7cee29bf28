"""Learning proof of policy GRPO on tournament rewards (train/grpo_policy.py), on CPU: the toy policy task
(toy/policy_task.py), one shared noisy warm-up, then GRPO per topology and seed, each trained policy played
against its step-0 self by the toy oracle on the GRPO prompts and on held-out prompts.

    .venv/bin/python bench/policy_learning_proof.py --seeds 0 1 2 --topologies round_robin seeded_single_elimination
    .venv/bin/python bench/policy_learning_proof.py --seeds 0 --topologies round_robin \
        --judge-path runs/quickstart/judge --retrievers wiki=runs/quickstart/indexes/wiki \
        arxiv=runs/quickstart/indexes/arxiv            # the quickstart's trained tiny judge as the match judge

Reported per topology: judge calls per step, wall seconds per GRPO step, win rate against step 0 (T = 1 samples;
0.5 = no change) and the share of answers stating the truth, before and after: mean ± sd over seeds. Every run is
cached under --out (delete a folder to redo it); results go to `<out>/results.json` and a markdown table on stdout.
"""

from __future__ import annotations

import argparse
import json
import logging
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from toy.policy_stages import (  # noqa: E402
    PolicyQuickstartArguments,
    evaluate,
    grpo,
    tiny_policy,
    warm_up,
    write_task,
)
from toy.policy_task import PARTS, ToyPolicyTask  # noqa: E402
from toy.world import ToyWorld  # noqa: E402


def topology_flags(name: str) -> list[str]:
    flags = ["--topology", name]
    if name in ("anchor", "seeded_single_elimination"):
        flags += ["--greedy_anchor", "true"]  # ArenaRL: the anchor is the policy's greedy decode
    return flags


def run_stats(run: Path) -> dict[str, float]:
    state = json.loads((run / "trainer_state.json").read_text())
    logs = [h for h in state["log_history"] if "tournament/judge_calls" in h]
    runtime = next(h["train_runtime"] for h in state["log_history"] if "train_runtime" in h)
    steps = state["global_step"]
    return {"judge_calls_per_step": statistics.mean(h["tournament/judge_calls"] for h in logs),
            "tie_rate": statistics.mean(h["tournament/tie_rate"] for h in logs),
            "seconds_per_step": runtime / steps, "steps": steps}


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
    judge = ["--judge", args.judge_path, "--retrievers", *args.retrievers] \
        if args.judge_path else []
    tag = "openrm-judge" if args.judge_path else "oracle"
    results: dict[str, list[dict]] = {}
    for topology in args.topologies:
        for seed in args.seeds:
            run_dir = out / f"grpo-{tag}-{topology}-s{seed}"
            started = time.perf_counter()
            grpo(warm, data, run_dir, args.grpo_steps, seed, [*topology_flags(topology), *judge, *args.extra.split()])
            table = evaluate(task, warm, run_dir, qs.eval_samples, seed)
            results.setdefault(topology, []).append({"seed": seed, **run_stats(run_dir), **table,
                                                     "wall_seconds": time.perf_counter() - started})
    (out / f"results-{tag}.json").write_text(json.dumps(results, indent=2) + "\n")

    def ms(values) -> str:
        values = list(values)
        return f"{statistics.mean(values):.3f} ± {statistics.stdev(values):.3f}" if len(values) > 1 \
            else f"{values[0]:.3f}"

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
