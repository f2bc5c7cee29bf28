"""Direct preference optimisation on judge-curated pairs (the paper's section 6, Table 5), on TRL's DPOTrainer.

    accelerate launch --config_file configs/accelerate/deepspeed_zero3.yaml train/dpo.py \
        --config configs/dpo/qwen2.5-3b.yaml                       # full fine-tuning, 8 GPUs
    accelerate launch --num_processes 8 train/dpo.py --config configs/dpo/qwen2.5-7b.yaml      # LoRA (use_peft)
    python train/dpo.py --config configs/dpo/tiny_cpu.yaml        # the toy chain on a laptop CPU

The dataset is `train.select_preferences`' dataset/ folder or any TRL preference data (prompt, chosen, rejected; text
or chat messages; an HF save_to_disk folder or a JSON/JSONL/parquet file). LoRA is chosen in the YAML (ModelConfig's
use_peft, lora_r, ...). Reads top to bottom: arguments → data → trainer → (held-out DPO loss) → train → save.
"""

from __future__ import annotations

import logging
import os
from dataclasses import asdict, dataclass, field

from plumbing.records import run_record
from train.runs import resume_point, write_run_record

logger = logging.getLogger("openrm.dpo")
RUN_FILE = run_record("dpo")  # what this run trained on, beside the model
COLUMNS = ("prompt", "chosen", "rejected")


@dataclass
class DPOArguments:
    dataset: str = field(metadata={"help": "Preference pairs: an HF save_to_disk folder (train.select_preferences "
                                           "writes <out>/dataset) or a JSON/JSONL/parquet file with prompt, chosen, "
                                           "rejected (text or chat messages)."})
    dataset_split: str = field(default="train", metadata={"help": "Split to train on when `dataset` has splits."})
    max_examples: int = field(default=0, metadata={"help": "Train on the first N pairs only (0 = all)."})
    eval_fraction: float = field(default=0.0, metadata={
        "help": "Hold out this share of the pairs (a seeded split) and report their DPO loss (0 = none)."})

    def __post_init__(self):
        if self.max_examples < 0 or not 0.0 <= self.eval_fraction < 1.0:
            raise ValueError("max_examples must be >= 0 and eval_fraction in [0, 1)")


def load_pairs(path: str, split: str, limit: int):
    """The preference pairs at `path`, checked for the three TRL columns."""
    from plumbing.rows import open_rows

    data = open_rows(path, split, what="preference pairs")
    missing = [c for c in COLUMNS if c not in data.column_names]
    if missing:
        raise ValueError(f"{path}: preference pairs need {COLUMNS}; missing {missing} (has {data.column_names})")
    return data.select(range(min(limit, len(data)))) if limit else data


def build_trainer(script_args: DPOArguments, training_args, model_args):
    from transformers import AutoTokenizer
    from trl import DPOTrainer, get_peft_config

    pairs = load_pairs(script_args.dataset, script_args.dataset_split, script_args.max_examples)
    train, held_out = pairs, None
    if script_args.eval_fraction:
        split = pairs.train_test_split(test_size=script_args.eval_fraction, seed=training_args.seed)
        train, held_out = split["train"], split["test"]
    logger.info("DPO on %d pairs from %s (%d held out)", len(train), script_args.dataset,
                0 if held_out is None else len(held_out))
    from openrm.models import resolve

    model_path = resolve(model_args.model_name_or_path)  # a packaged model's short name or a folder
    tokenizer = AutoTokenizer.from_pretrained(model_path)
    if tokenizer.pad_token is None:  # Qwen's tokenizer has one; a base model's may not
        tokenizer.pad_token = tokenizer.eos_token
    training_args.model_init_kwargs = {**(training_args.model_init_kwargs or {}), "dtype": model_args.dtype or "auto"}
    return DPOTrainer(model=model_path, args=training_args, train_dataset=train,
                      eval_dataset=held_out, processing_class=tokenizer, peft_config=get_peft_config(model_args))


def main(script_args: DPOArguments, training_args, model_args):
    trainer = build_trainer(script_args, training_args, model_args)
    trainer.train(resume_from_checkpoint=resume_point(training_args))
    metrics = trainer.evaluate() if trainer.eval_dataset is not None else {}
    trainer.save_model(training_args.output_dir)
    trainer.save_state()  # trainer_state.json: the loss and reward-margin curves
    if trainer.accelerator.is_main_process:
        trainer.processing_class.save_pretrained(training_args.output_dir)
        run = {"base_model": model_args.model_name_or_path, "peft": model_args.use_peft,
               "global_step": trainer.state.global_step, "beta": training_args.beta,
               "learning_rate": training_args.learning_rate, "seed": training_args.seed, "held_out": metrics,
               "data": asdict(script_args)}
        write_run_record(trainer, training_args.output_dir, RUN_FILE, run)
        logger.info("saved the DPO model to %s after %d steps%s", training_args.output_dir,
                    trainer.state.global_step, f"; held-out DPO loss {metrics['eval_loss']:.4f}" if metrics else "")
    return trainer


def parse(argv: list[str] | None = None):
    from trl import DPOConfig, ModelConfig, TrlParser

    return TrlParser((DPOArguments, DPOConfig, ModelConfig)).parse_args_and_config(args=argv)


if __name__ == "__main__":
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")
    main(*parse())
