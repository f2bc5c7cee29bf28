"""A query-specific rubric generator's GRPO on preference triplets, as `train/grpo_rubric_generator.py` runs it: its
arguments, the trainer (triplets → scorer → hybrid reward → TRL's GRPOTrainer) and the saved run (model, trainer
state, `rubric_generator_run.json`).

    trainer = train_rubric_generator(*parse(["--config", "configs/grpo_rubric_generator/tiny_cpu.yaml", ...]))
    trainer = train_rubric_generator(*configs("configs/grpo_rubric_generator/tiny_cpu.yaml", max_steps=30))
"""

from __future__ import annotations

import logging
from dataclasses import asdict, dataclass, field
from pathlib import Path

from openrm.rubrics.reward import HybridWeights
from openrm.rubrics.scorer_spec import ScorerSpec, scorer_kinds
from openrm.rubrics.triplets import TripletFields
from plumbing.records import run_record
from train.runs import resume_point, write_run_record

logger = logging.getLogger("openrm.grpo_rubric_generator")
RUN_FILE = run_record("rubric_generator")
STYLES = ("full", "compact")


@dataclass
class RubricGeneratorArguments:
    dataset: str = field(metadata={"help": "Preference triplets: JSONL/JSON/parquet file or HF save_to_disk folder."})
    dataset_split: str = field(default="train", metadata={"help": "Split to train on when `dataset` has splits."})
    max_examples: int = field(default=0, metadata={"help": "Train on the first N triplets only (0 = all)."})
    query_field: str = field(default="query", metadata={"help": "Column holding the user's request."})
    preferred_field: str = field(default="preferred", metadata={"help": "Column holding the preferred report."})
    rejected_field: str = field(default="rejected", metadata={"help": "Column holding the rejected report."})
    prompt_style: str = field(default="full", metadata={
        "help": "Generator prompt: full (our instructions) or compact (one line, for tiny from-scratch models)."})
    scorer: str = field(default="server", metadata={"help": f"Who rates reports: one of {scorer_kinds()}."})
    scorer_server: str = field(default="", metadata={"help": "OpenAI-compatible URL of the scorer (…/v1)."})
    scorer_model: str = field(default="", metadata={"help": "Model name the scorer server serves."})
    scorer_api_key: str = field(default="", metadata={"help": "Bearer token of the scorer server, if it needs one."})
    scorer_concurrency: int = field(default=32, metadata={"help": "Scorer requests in flight per process."})
    scorer_timeout: float = field(default=300.0, metadata={"help": "Seconds per scorer request."})
    scorer_retries: int = field(default=5, metadata={"help": "Retries of a scorer request (429, 5xx, timeouts)."})
    scorer_temperature: float = field(default=0.0, metadata={"help": "Scorer sampling temperature."})
    scorer_top_p: float = field(default=1.0, metadata={"help": "Scorer nucleus sampling."})
    scorer_max_tokens: int = field(default=64, metadata={"help": "Scorer reply budget (a JSON rating)."})
    scorer_cache: str = field(default="", metadata={
        "help": "Scorer request cache, one file per process: <stem>.rank<r>.jsonl ('' = in output_dir)."})
    world_seed: int = field(default=0, metadata={"help": "Toy scorer: the toy world whose entities it knows."})
    weight_preference: float = field(default=1.0, metadata={"help": "Weight of R_pref (Eq. 1)."})
    weight_format: float = field(default=1.0, metadata={"help": "Weight of R_fmt (lambda_1; paper: 1)."})
    weight_judge: float = field(default=1.0, metadata={"help": "Weight of R_judge (lambda_2; paper: 1)."})
    format_penalty: float = field(default=-1.0, metadata={"help": "R_fmt of a rubric that does not parse (< 0)."})

    def __post_init__(self):
        if self.prompt_style not in STYLES or self.max_examples < 0:
            raise ValueError(f"prompt_style must be one of {STYLES} and max_examples >= 0")
        self.weights = HybridWeights(self.weight_preference, self.weight_format, self.weight_judge,
                                     self.format_penalty)
        self.scorer_spec = ScorerSpec(
            kind=self.scorer, server=self.scorer_server, model=self.scorer_model, api_key=self.scorer_api_key,
            concurrency=self.scorer_concurrency, timeout_s=self.scorer_timeout, retries=self.scorer_retries,
            temperature=self.scorer_temperature, top_p=self.scorer_top_p, max_tokens=self.scorer_max_tokens,
            world_seed=self.world_seed)
        self.fields = TripletFields(self.query_field, self.preferred_field, self.rejected_field)


def training_rows(args: RubricGeneratorArguments):
    """The triplets as GRPO rows: the generator's chat prompt plus query / preferred / rejected columns."""
    from datasets import Dataset

    from openrm.rubrics.prompts import generation_messages
    from openrm.rubrics.triplets import load_triplets

    triplets = load_triplets(args.dataset, args.dataset_split, args.max_examples, args.fields)
    return Dataset.from_list([{"id": t.id, "prompt": generation_messages(t.query, args.prompt_style),
                               "query": t.query, "preferred": t.preferred, "rejected": t.rejected}
                              for t in triplets])


def per_rank(path: Path, rank: int) -> Path:
    return path.with_name(f"{path.stem}.rank{rank}{path.suffix or '.jsonl'}")


def build_trainer(script_args: RubricGeneratorArguments, training_args, model_args):
    from accelerate import PartialState
    from transformers import AutoTokenizer
    from trl import get_peft_config

    from openrm.rubrics.reward import RubricGeneratorReward
    from openrm.rubrics.scorer_spec import build_scorer
    from train import fused_head
    from train.shared_prompt import SharedPromptGRPOTrainer

    rank, out = PartialState().process_index, Path(training_args.output_dir)
    from openrm.models import resolve

    model_path = resolve(model_args.model_name_or_path)  # a packaged model's short name or a folder
    tokenizer = AutoTokenizer.from_pretrained(model_path)
    train_dataset = training_rows(script_args)
    logger.info("training on %d triplets from %s", len(train_dataset), script_args.dataset)

    cache = per_rank(Path(script_args.scorer_cache or out / "scorer_cache.jsonl"), rank)
    scorer = build_scorer(script_args.scorer_spec, cache)
    reward = RubricGeneratorReward(scorer, script_args.weights,
                                   log_path=str(per_rank(out / "rubric_rewards.jsonl", rank)))

    training_args.model_init_kwargs = {**(training_args.model_init_kwargs or {}), "dtype": model_args.dtype or "auto"}
    fused_head.score_labelled_positions_only()  # on a CPU the LM head projects the completion only, as on a GPU
    trainer = SharedPromptGRPOTrainer(model=model_path, reward_funcs=[reward], args=training_args,
                                      train_dataset=train_dataset, processing_class=tokenizer,
                                      peft_config=get_peft_config(model_args))
    trainer.rubric_scorer = scorer  # closed by close_scorer()
    return trainer


def close_scorer(trainer) -> None:
    """Close the scorer `build_trainer` gave the trainer (a server scorer's connections and request cache)."""
    getattr(trainer.rubric_scorer, "close", lambda: None)()


def save_rubric_generator(trainer, script_args: RubricGeneratorArguments, training_args, model_args) -> None:
    """The trained generator, its trainer state (the curves, rubric/* included) and, on the main process,
    `rubric_generator_run.json` (its settings, the scorer's API key left out) in `training_args.output_dir`."""
    trainer.save_model(training_args.output_dir)
    trainer.save_state()
    if trainer.accelerator.is_main_process:
        run = {"base_model": model_args.model_name_or_path, "global_step": trainer.state.global_step,
               "num_generations": training_args.num_generations, "seed": training_args.seed,
               "generator": {k: v for k, v in asdict(script_args).items() if k != "scorer_api_key"}}
        write_run_record(trainer, training_args.output_dir, RUN_FILE, run)
        logger.info("saved the rubric generator to %s after %d steps", training_args.output_dir,
                    trainer.state.global_step)


def train_rubric_generator(script_args: RubricGeneratorArguments, training_args, model_args):
    """Build → train (resuming as `--resume_from_checkpoint` says; the scorer closed after) → save: the run
    `train/grpo_rubric_generator.py` makes."""
    trainer = build_trainer(script_args, training_args, model_args)
    try:
        trainer.train(resume_from_checkpoint=resume_point(training_args))
    finally:
        close_scorer(trainer)
    save_rubric_generator(trainer, script_args, training_args, model_args)
    return trainer


def parse(argv: list[str] | None = None):
    """(RubricGeneratorArguments, GRPOConfig, ModelConfig) from `argv` (None: the command line); `--config` YAML
    gives defaults, flags override them."""
    from trl import GRPOConfig, ModelConfig, TrlParser

    return TrlParser((RubricGeneratorArguments, GRPOConfig, ModelConfig)).parse_args_and_config(args=argv)


def configs(config=None, flags=(), **values):
    """(RubricGeneratorArguments, GRPOConfig, ModelConfig) as a program sets them:
    `config`'s YAML values, then `values` by field name, then command-line `flags` a person passed through
    (`plumbing.arguments.from_values`)."""
    from trl import GRPOConfig, ModelConfig

    from plumbing.arguments import from_values

    return from_values((RubricGeneratorArguments, GRPOConfig, ModelConfig), config, flags, **values)
