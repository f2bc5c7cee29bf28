"""A policy trained on judge tournaments, end to end on a laptop CPU in minutes, offline: the toy policy task
(toy/policy_task.py) → a tiny policy → a noisy SFT warm-up → GRPO on tournament rewards with
configs/grpo_policy/tiny_cpu.yaml (toy-oracle match judge) → the trained policy against its step-0 self on the
GRPO prompts and on held-out prompts → a table.

    python -m toy.policy_quickstart --out runs/policy
    python -m toy.policy_quickstart --out runs/policy-ssel --grpo_args '--topology seeded_single_elimination'

A rerun reuses every finished stage and resumes an interrupted GRPO run.

It still builds a tiny from-scratch policy (toy/tiny.py), not the packaged SmolLM2 the judge's quickstart uses:
its task is closed-book recall of toy facts, which a from-scratch model can only memorise, so it shows the tournament
plumbing rather than a skill that generalises to held-out prompts (bench/RESULTS.md). A search-agent policy on
SmolLM2, judged by the trained SmolLM2 judge, is the form that can generalise.
"""

from __future__ import annotations

import json
import logging
import shlex
from pathlib import Path

from toy.policy_stages import PolicyQuickstartArguments, evaluate, grpo, stage, tiny_policy, warm_up, write_task
from toy.policy_task import ToyPolicyTask
from toy.world import ToyWorld

logger = logging.getLogger("openrm.policy_quickstart")


def main(args: PolicyQuickstartArguments) -> dict:
    out = Path(args.out)
    task = ToyPolicyTask(ToyWorld(args.seed), args.n_questions)
    stage(1, "toy policy task: %d GRPO / %d held-out questions, %d warm-up answers each, in %s",
          len(task.rows("grpo")), len(task.rows("heldout")), args.samples_per_question, out / "data")
    data = write_task(task, out / "data", args.samples_per_question, args.seed)
    base = tiny_policy(out / "tiny-policy", args.tiny_config())
    warm = warm_up(base, data, out / "warm", args.sft_steps, args.sft_learning_rate, args.seed)
    run = grpo(warm, data, out / "grpo", args.grpo_steps, args.grpo_seed, flags=shlex.split(args.grpo_args))
    stage(5, "the trained policy against its step-0 self, %d sampled answers per prompt (T = 1)", args.eval_samples)
    table = evaluate(task, warm, run, args.eval_samples, args.grpo_seed)
    lines = ["| prompts | win rate vs step 0 [95% CI] | truth before → after | format before → after |",
             "|---|---|---|---|"]
    for part, m in table.items():
        lines.append(f"| {part} | {m['win_rate']:.3f} [{m['ci'][0]:.3f}, {m['ci'][1]:.3f}] | "
                     f"{m['before']['truth']:.3f} → {m['after']['truth']:.3f} | "
                     f"{m['before']['format']:.3f} → {m['after']['format']:.3f} |")
    (out / "results.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    (out / "results.json").write_text(json.dumps(table, indent=2) + "\n", encoding="utf-8")
    logger.info("toy-oracle head-to-head (0.5 = no change):\n%s\n%s", "\n".join(lines), summary(table))
    return table


def summary(table: dict) -> str:
    """What the table shows, in words that follow from its numbers (goal: win rate >= 0.65, i.e. +15 points)."""
    parts = []
    for part, m in table.items():
        low, rate = m["ci"][0], m["win_rate"]
        verdict = ("better than its step-0 self" if low > 0.5 else "worse than its step-0 self" if m["ci"][1] < 0.5
                   else "not distinguishable from its step-0 self")
        parts.append(f"on {part} prompts the policy is {verdict} (win rate {rate:.2f}; +15-point goal "
                     f"{'met' if rate >= 0.65 else 'NOT met'})")
    return "; ".join(parts) + "."


if __name__ == "__main__":
    from trl import TrlParser

    logging.basicConfig(level=logging.INFO, format="%(message)s")
    (parsed_args,) = TrlParser(PolicyQuickstartArguments).parse_args_and_config()
    main(parsed_args)
