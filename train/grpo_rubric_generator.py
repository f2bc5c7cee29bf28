"""GRPO of a query-specific rubric generator on preference triplets (query, preferred report, rejected report), on
TRL's GRPOTrainer, with the hybrid reward of the query-specific rubrics paper (Eq. 1-3).

    accelerate launch train/grpo_rubric_generator.py --config configs/grpo_rubric_generator/qwen3-14b_paper.yaml
    python train/grpo_rubric_generator.py --config configs/grpo_rubric_generator/tiny_cpu.yaml   # toy, laptop CPU

Reads top to bottom: arguments → data → scorer → reward → trainer → train → save. Each completion is parsed as a
rubric (openrm/rubrics/record.py); a valid one is scored by the scorer on both reports (Eq. 2) and judged for quality;
the reward logs rubric/preference, rubric/format, rubric/judge, rubric/valid_rate and the scorer's failures, and
appends every completion's breakdown to `<output_dir>/rubric_rewards.rank<r>.jsonl`. A server scorer caches every
request in `<output_dir>/scorer_cache.rank<r>.jsonl` (or `scorer_cache`), so a resumed run re-sends nothing.
"""

from __future__ import annotations

import logging
import os
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path

if __package__ in (None, ""):  # `accelerate launch train/grpo_rubric_generator.py` runs this file as a script
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from openrm.rubrics.reward import HybridWeights  # noqa: E402
from openrm.rubrics.scorer_spec import ScorerSpec, scorer_kinds  # noqa: E402
from openrm.rubrics.triplets import TripletFields  # noqa: E402
from train.runs import resume_point, write_run_record  # noqa: E402

logger = logging.getLogger("openrm.grpo_rubric_generator")
RUN_FILE = "rubric_generator_run.json"
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
    from trl import GRPOTrainer, get_peft_config

    from openrm.rubrics.reward import RubricGeneratorReward
    from openrm.rubrics.scorer_spec import build_scorer

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
    trainer = GRPOTrainer(model=model_path, reward_funcs=[reward], args=training_args,
                          train_dataset=train_dataset, processing_class=tokenizer,
                          peft_config=get_peft_config(model_args))
    trainer.rubric_scorer = scorer  # closed by main()
    return trainer


def main(script_args: RubricGeneratorArguments, training_args, model_args):
    trainer = build_trainer(script_args, training_args, model_args)
    try:
        trainer.train(resume_from_checkpoint=resume_point(training_args))
    finally:
        getattr(trainer.rubric_scorer, "close", lambda: None)()
    trainer.save_model(training_args.output_dir)
    trainer.save_state()  # trainer_state.json: the curves, rubric/* included
    if trainer.accelerator.is_main_process:
        run = {"base_model": model_args.model_name_or_path, "global_step": trainer.state.global_step,
               "num_generations": training_args.num_generations, "seed": training_args.seed,
               "generator": {k: v for k, v in asdict(script_args).items() if k != "scorer_api_key"}}
        write_run_record(trainer, training_args.output_dir, RUN_FILE, run)
        logger.info("saved the rubric generator to %s after %d steps", training_args.output_dir,
                    trainer.state.global_step)
    return trainer


def parse(argv: list[str] | None = None):
    from trl import GRPOConfig, ModelConfig, TrlParser

    return TrlParser((RubricGeneratorArguments, GRPOConfig, ModelConfig)).parse_args_and_config(args=argv)


if __name__ == "__main__":
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")
    main(*parse())
