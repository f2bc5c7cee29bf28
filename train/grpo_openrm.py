"""GRPO training of the tool-augmented judge on TRL's GRPOTrainer, with multi-turn search rollouts.

    accelerate launch train/grpo_openrm.py --config configs/grpo_openrm/qwen2.5-7b_paper.yaml
    python train/grpo_openrm.py --config configs/grpo_openrm/tiny_cpu.yaml --model_name_or_path runs/tiny-judge

Reads top to bottom: arguments → trainer (train/judge_trainer.py: tools and retrievers → data → rollout →
reward) → train → save.
The trainer logs the reward total, `openrm/em`, `openrm/tool`, searches per trajectory, the wrong-corpus call share,
the malformed rate, finish reasons and completion length every `logging_steps`.

Where this departs from the paper's method (papers/openrm_openreward.txt, its training section):
- Loss aggregation: the paper writes the GRPO objective of Shao et al. (each trajectory's token losses averaged, then
  trajectories averaged); we keep TRL's default `loss_type` ("dapo": token losses summed over the whole batch and
  divided by its token count, so long trajectories weigh by their length). Set `loss_type: grpo` to follow the paper.
- Advantage smoothing: the paper divides by the group std plus 1e-6; TRL adds its own fixed constant, 1e-4. With
  rewards in [0, 1.5] the two differ only for groups whose rewards are (almost) all equal.
- Evidence tokens: the `<information>` blocks the environment appends are masked out of the loss (`env_mask`); the
  paper does not say how it treats them.
- The paper config (configs/grpo_openrm/qwen2.5-7b_paper.yaml) fine-tunes every weight, as the paper does (it names
  no adapter); `--use_peft` trains a LoRA instead, and `train/export_judge.py` merges it on export.
"""

from __future__ import annotations

import logging
import os

from train.judge_trainer import parse, train_judge


def main(argv: list[str] | None = None):
    return train_judge(*parse(argv))


if __name__ == "__main__":
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")
    main()
