"""Supervised warm-up on gold judging trajectories (TRL's SFTTrainer), so that GRPO starts from a model that
already writes the protocol (<think>, <search>, <answer>) and group rewards differ. The quickstart uses it on the
packaged SmolLM2 (which cannot write the protocol zero-shot); a real run may skip it (Qwen2.5-7B-Instruct follows
the prompt) or use it the same way.

    python train/sft_warmup.py --dataset runs/quickstart/data/sft_gold.jsonl \
        --model_name_or_path runs/quickstart/tiny-judge --output_dir runs/quickstart/tiny-judge-sft

The dataset is JSONL of {"prompt": [chat messages], "completion": [{"role": "assistant", "content": ...}]}. The
records are tokenized (`openrm.rollout.tokenize_record`) the way a rollout builds them: the prompt through the chat
template with the generation prompt, then the completion, with every `<information>` block encoded on its own as the
environment appends it and masked out of the loss (as GRPO's env_mask does), and the end-of-turn token last. So the
loss covers only what the judge writes itself: trained on the passages too, a small model learns to write
`<information>` blocks of its own. A record may instead come tokenized, {"input_ids": [...], "completion_mask":
[...]} (1 = trained on), for text that has no chat form.
"""

from __future__ import annotations

import logging
import os

from train.warmup_trainer import parse, train_warmup


def main(argv: list[str] | None = None):
    return train_warmup(*parse(argv))


if __name__ == "__main__":
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")
    main()
