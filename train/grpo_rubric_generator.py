"""GRPO of a query-specific rubric generator on preference triplets (query, preferred report, rejected report), on
TRL's GRPOTrainer, with the hybrid reward of the query-specific rubrics paper (Eq. 1-3).

    accelerate launch train/grpo_rubric_generator.py --config configs/grpo_rubric_generator/qwen3-14b_paper.yaml
    python train/grpo_rubric_generator.py --config configs/grpo_rubric_generator/tiny_cpu.yaml   # toy, laptop CPU

Reads top to bottom: arguments → trainer (train/rubric_trainer.py: data → scorer → reward) → train → save.
Each completion is parsed as a rubric (openrm/rubrics/record.py); a valid one is scored by the scorer on both
reports (Eq. 2) and judged for quality; the reward logs rubric/preference, rubric/format, rubric/judge,
rubric/valid_rate and the scorer's failures, and appends every completion's breakdown to
`<output_dir>/rubric_rewards.rank<r>.jsonl`. A server scorer caches every request in
`<output_dir>/scorer_cache.rank<r>.jsonl` (or `scorer_cache`), so a resumed run re-sends nothing.
"""

from __future__ import annotations

import logging
import os

from train.rubric_trainer import parse, train_rubric_generator


def main(argv: list[str] | None = None):
    return train_rubric_generator(*parse(argv))


if __name__ == "__main__":
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")
    main()
