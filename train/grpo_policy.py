"""GRPO of a policy whose reward is a tournament among each prompt's completions, played by a match judge
(Tournament-GRPO, ArenaRL, Reasoning Arena), on TRL's GRPOTrainer.

    accelerate launch train/grpo_policy.py --config configs/grpo_policy/tournament_grpo.yaml
    python train/grpo_policy.py --config configs/grpo_policy/tiny_cpu.yaml      # the toy world, on a laptop CPU

Reads top to bottom: arguments → trainer (train/policy_trainer.py: data → match judge → topology and arena →
rewards) → train → save.
The reward is `openrm.tournament.TournamentReward`: it gathers every process's completions so that each group is
judged whole and exactly once, seeds group g of step s from (seed, s, g), logs `tournament/*` (judge calls, ties,
failures, judge seconds, reward spread) and appends every match to `<match_log>.rank<r>.jsonl`. A failed or
nonsensical verdict is a logged tie; a judge that crashes gives that step's groups equal rewards, never a crash.

Rubric rewards (query-specific rubrics, Sec. 3.4): `--rewards rubric` (or `tournament+rubric`) scores each completion
against its prompt's rubric (`openrm.rubrics.policy_reward.RubricScoreReward`, a rating model behind
`--rubric_scorer_server`); the rubrics come from the dataset's `rubric` column or from `--rubric_generator`, which
writes one per prompt before training and caches it (the column a rubric group judge is also shown).
"""

from __future__ import annotations

import logging
import os

from train.policy_trainer import parse, train_policy


def main(argv: list[str] | None = None):
    return train_policy(*parse(argv))


if __name__ == "__main__":
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")
    main()
