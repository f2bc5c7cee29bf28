"""Supervised warm-up on gold judging trajectories (TRL's SFTTrainer), so that GRPO starts from a model that
already writes the protocol (<think>, <search>, <answer>) and group rewards differ. The quickstart uses it on the
tiny judge; a real run may skip it (Qwen2.5-7B-Instruct follows the prompt) or use it the same way.

    python train/sft_warmup.py --dataset runs/quickstart/data/sft_gold.jsonl \
        --model_name_or_path runs/quickstart/tiny-judge --output_dir runs/quickstart/tiny-judge-sft

The dataset is JSONL of {"prompt": [chat messages], "completion": [{"role": "assistant", "content": ...}]}; the
loss covers the completion only. Retrieved passages inside gold completions are trained on as text here: the
warm-up teaches the format, GRPO then trains with the environment's tokens masked.
"""

from __future__ import annotations

import logging
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

logger = logging.getLogger("openrm.sft_warmup")


@dataclass
class WarmupArguments:
    dataset: str = field(metadata={"help": "JSONL of prompt/completion chat records."})

    def __post_init__(self):
        if not Path(self.dataset).is_file():
            raise FileNotFoundError(f"{self.dataset}: no such JSONL file")


def main(script_args: WarmupArguments, training_args, model_args) -> None:
    from datasets import load_dataset
    from transformers import AutoTokenizer
    from trl import SFTTrainer, get_peft_config

    dataset = load_dataset("json", data_files=script_args.dataset, split="train")
    missing = {"prompt", "completion"} - set(dataset.column_names)
    if missing:
        raise ValueError(f"{script_args.dataset}: records lack {sorted(missing)}")
    tokenizer = AutoTokenizer.from_pretrained(model_args.model_name_or_path)
    training_args.model_init_kwargs = {**(training_args.model_init_kwargs or {}), "dtype": model_args.dtype or "auto"}
    trainer = SFTTrainer(model=model_args.model_name_or_path, args=training_args, train_dataset=dataset,
                         processing_class=tokenizer, peft_config=get_peft_config(model_args))
    trainer.train(resume_from_checkpoint=training_args.resume_from_checkpoint)
    trainer.save_model(training_args.output_dir)
    tokenizer.save_pretrained(training_args.output_dir)
    logger.info("warm-up done: %d steps, model in %s", trainer.state.global_step, training_args.output_dir)


def parse(argv: list[str] | None = None):
    from trl import ModelConfig, SFTConfig, TrlParser

    return TrlParser((WarmupArguments, SFTConfig, ModelConfig)).parse_args_and_config(args=argv)


if __name__ == "__main__":
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")
    main(*parse())
