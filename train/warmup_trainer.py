"""The supervised warm-up on gold judging trajectories, as `train/sft_warmup.py` runs it: its arguments, the
records tokenized as a rollout builds them, the trainer (TRL's SFTTrainer or train/plain_head.py's) and the saved
model and tokenizer.

    trainer = train_warmup(*parse(["--dataset", "sft_gold.jsonl", "--model_name_or_path", ..., "--output_dir", ...]))
    trainer = train_warmup(*configs(dataset="sft_gold.jsonl", model_name_or_path=model, output_dir=out))
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path

from train.runs import resume_point

logger = logging.getLogger("openrm.sft_warmup")


def _tokenized(tokenizer, n_vocab: int, record: dict) -> dict:
    """A record's input_ids and completion_mask: given (a pre-tokenized record, ids below `n_vocab`) or built by
    `tokenize_record`."""
    from openrm.rollout import tokenize_record

    ids = record.get("input_ids")
    if ids is None:
        if record.get("prompt") is None or record.get("completion") is None:
            raise ValueError("each record needs prompt and completion, or input_ids and completion_mask")
        return tokenize_record(tokenizer, record["prompt"], _completion_text(record))
    mask = record.get("completion_mask")
    if (not isinstance(ids, list) or not ids or mask is None or len(mask) != len(ids)
            or not all(isinstance(t, int) and 0 <= t < n_vocab for t in ids) or set(mask) - {0, 1}):
        raise ValueError("a tokenized record needs input_ids (token ids of this tokenizer) and a completion_mask "
                         "of 0/1 of the same length")
    return {"input_ids": ids, "completion_mask": mask}


def _completion_text(record: dict) -> str:
    completion = record["completion"]
    if isinstance(completion, str):
        return completion
    if (not isinstance(completion, list) or len(completion) != 1 or not isinstance(completion[0], dict)
            or completion[0].get("role") != "assistant" or not isinstance(completion[0].get("content"), str)):
        raise ValueError("each completion must be one assistant message (or a string)")
    return completion[0]["content"]


@dataclass
class WarmupArguments:
    dataset: str = field(metadata={"help": "JSONL of prompt/completion chat records."})
    lm_head: str = field(default="fused", metadata={
        "help": "'fused': TRL's tiled LM-head loss (large vocabularies, GPUs); 'plain': one projection of the "
                "trained positions (train/plain_head.py)."})

    stop_at_accuracy: float = field(default=0.0, metadata={
        "help": "Stop once a logged mean token accuracy reaches this (0 = run every step), e.g. a stage "
                "that is done when its copy is right."})

    sort_within_steps: bool = field(default=False, metadata={
        "help": "Train the records in the file's order (which must already be random), each optimizer step's "
                "records (per_device_train_batch_size x gradient_accumulation_steps) sorted by length: with "
                "gradient accumulation each micro-batch then pads only to its own longest record, while a step "
                "still averages the loss over the same records' tokens as one batch would (the quickstart's mixed "
                "lengths: about a fifth less compute per step, bench/RESULTS.md). One process only."})

    verdict_weight: float = field(default=1.0, metadata={
        "help": "With --lm_head plain: weigh the verdict letters' loss (the A/B of <think>A</think> and "
                "<answer>A</answer>) this many times; the one token that decides is otherwise a small share of a "
                "gold trajectory's loss."})

    def __post_init__(self):
        if self.verdict_weight <= 0 or (self.verdict_weight != 1.0 and self.lm_head != "plain"):
            raise ValueError("verdict_weight must be > 0, and other than 1 only with --lm_head plain")
        if not 0.0 <= self.stop_at_accuracy <= 1.0:
            raise ValueError(f"stop_at_accuracy must be in [0, 1], got {self.stop_at_accuracy}")
        if not Path(self.dataset).is_file():
            raise FileNotFoundError(f"{self.dataset}: no such JSONL file")
        if self.lm_head not in ("fused", "plain"):
            raise ValueError(f"lm_head must be 'fused' or 'plain', got {self.lm_head!r}")


def build_trainer(script_args: WarmupArguments, training_args, model_args, callbacks=()):
    """The SFT trainer on the tokenized records (TRL's SFTTrainer, or train/plain_head.py's with --lm_head plain);
    `callbacks` are more TrainerCallbacks."""
    from transformers import AutoTokenizer
    from trl import SFTTrainer, get_peft_config

    from plumbing.rows import open_rows

    dataset = open_rows(script_args.dataset, what="SFT records")
    missing = {"prompt", "completion"} - set(dataset.column_names)
    if missing and "input_ids" not in dataset.column_names:
        raise ValueError(f"{script_args.dataset}: records lack {sorted(missing)}")
    from openrm.models import resolve

    model_path = resolve(model_args.model_name_or_path)  # a packaged model's short name or a folder
    tokenizer = AutoTokenizer.from_pretrained(model_path)
    if tokenizer.eos_token_id is None:
        raise ValueError(f"{model_args.model_name_or_path}: the tokenizer names no end-of-turn (eos) token")
    try:
        n_vocab = len(tokenizer)  # len() of a tokenizer with added tokens is slow: once, not per record
        dataset = dataset.map(lambda r: _tokenized(tokenizer, n_vocab, r), remove_columns=dataset.column_names,
                              desc="Tokenizing gold trajectories")
    except ValueError as exc:
        raise ValueError(f"{script_args.dataset}: {exc}") from exc
    if script_args.sort_within_steps:
        if training_args.world_size > 1:
            raise ValueError("sort_within_steps runs in one process (each step's records are laid out in order)")
        # TRL drops records with nothing to train on; dropped here first, they cannot shift the steps' boundaries
        dataset = dataset.filter(lambda r: any(r["completion_mask"]), desc="Dropping records with no trained token")
        dataset = sorted_within_steps(dataset, training_args.per_device_train_batch_size
                                      * training_args.gradient_accumulation_steps)
        training_args.train_sampling_strategy = "sequential"
    masked = sum(len(m) - sum(m) for m in dataset["completion_mask"])
    logger.info("%d records, %d tokens (%d masked: prompts and <information> blocks)", len(dataset),
                sum(map(len, dataset["completion_mask"])), masked)
    if training_args.use_cpu and training_args.bf16 and script_args.lm_head == "fused":
        # TRL's SFTConfig defaults bf16 to True; on a CPU accelerate then wraps the model's forward in bf16 autocast
        # (--lm_head plain enters the same autocast itself: train/plain_head.py)
        logger.warning("bf16 on CPU runs the model's forward under bf16 autocast; pass --bf16 false for float32")
    training_args.completion_only_loss = True
    training_args.model_init_kwargs = {**(training_args.model_init_kwargs or {}), "dtype": model_args.dtype or "auto"}
    trainer_class = SFTTrainer
    if script_args.lm_head == "plain":
        from functools import partial

        from train.plain_head import plain_head_sft_trainer

        trainer_class = partial(plain_head_sft_trainer, script_args.verdict_weight)
    trainer = trainer_class(model=model_path, args=training_args, train_dataset=dataset,
                            processing_class=tokenizer, peft_config=get_peft_config(model_args),
                            callbacks=list(callbacks))
    if script_args.stop_at_accuracy:
        trainer.add_callback(stop_at_accuracy(script_args.stop_at_accuracy))
    return trainer


def save_warmup(trainer, training_args) -> None:
    """The warmed-up model and its tokenizer in `training_args.output_dir`."""
    trainer.save_model(training_args.output_dir)
    trainer.processing_class.save_pretrained(training_args.output_dir)
    logger.info("warm-up done: %d steps, model in %s", trainer.state.global_step, training_args.output_dir)


def train_warmup(script_args: WarmupArguments, training_args, model_args, callbacks=()):
    """Build → train (resuming as `--resume_from_checkpoint` says) → save: the run `train/sft_warmup.py` makes;
    `callbacks` are more TrainerCallbacks (e.g. a benchmark's step clock)."""
    trainer = build_trainer(script_args, training_args, model_args, callbacks)
    trainer.train(resume_from_checkpoint=resume_point(training_args))
    save_warmup(trainer, training_args)
    return trainer


def sorted_within_steps(dataset, per_step: int):
    """`dataset` in its own order, each consecutive run of `per_step` records (one optimizer step's) sorted by
    length, shortest first."""
    lengths = [len(mask) for mask in dataset["completion_mask"]]
    order = [i for start in range(0, len(lengths), per_step)
             for i in sorted(range(start, min(start + per_step, len(lengths))), key=lengths.__getitem__)]
    return dataset.select(order)


def stop_at_accuracy(threshold: float):
    """A TrainerCallback that stops training at the first log whose mean_token_accuracy reaches `threshold`."""
    from transformers import TrainerCallback

    class StopAtAccuracy(TrainerCallback):
        def on_log(self, args, state, control, logs=None, **kwargs):
            accuracy = (logs or {}).get("mean_token_accuracy")
            if accuracy is not None and accuracy >= threshold:
                logger.info("mean token accuracy %.3f >= %.3f at step %d: stopping", accuracy, threshold,
                            state.global_step)
                control.should_training_stop = True

    return StopAtAccuracy()


def parse(argv: list[str] | None = None):
    """(WarmupArguments, SFTConfig, ModelConfig) from `argv` (None: the command line); `--config` YAML gives
    defaults, flags override them."""
    from trl import ModelConfig, SFTConfig, TrlParser

    return TrlParser((WarmupArguments, SFTConfig, ModelConfig)).parse_args_and_config(args=argv)


def configs(config=None, flags=(), **values):
    """(WarmupArguments, SFTConfig, ModelConfig) as a program sets them:
    `config`'s YAML values, then `values` by field name, then command-line `flags` a person passed through
    (`plumbing.arguments.from_values`)."""
    from trl import ModelConfig, SFTConfig

    from plumbing.arguments import from_values

    return from_values((WarmupArguments, SFTConfig, ModelConfig), config, flags, **values)
