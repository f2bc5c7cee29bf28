"""The judge's GRPO, as `train/grpo_openrm.py` runs it: its arguments, the trainer (tools and retrievers → data →
rollout → reward → TRL's GRPOTrainer) and the saved run (model, trainer state, the run's JudgeCard).

    trainer = train_judge(*parse(["--config", "configs/grpo_openrm/tiny_cpu.yaml", "--model_name_or_path", ...]))
    trainer = train_judge(*configs("configs/grpo_openrm/tiny_cpu.yaml", model_name_or_path=model, max_steps=30))
"""

from __future__ import annotations

import logging
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

from data_synthesis.hostile_rivals import KINDS as RIVAL_KINDS
from openrm import protocol
from openrm.card import RUN_CARD_NAME, JudgeCard, RunSettings
from openrm.reward import TOOL_TERMS, VARIANTS, RewardConfig, make_openrm_reward
from openrm.rollout import make_trl_rollout_func
from plumbing.arguments import Collect, parse_pairs
from retrieval.retriever import parse_locations
from train.runs import resume_point, write_run_record

logger = logging.getLogger("openrm.grpo")
RUN_FILE = RUN_CARD_NAME  # the run's JudgeCard, beside the model

_SETTINGS = RunSettings()  # each setting's one default


@dataclass
class OpenRMArguments:
    dataset: str = field(metadata={"help": "Judge examples: an HF dataset folder (save_to_disk) or a JSONL file."})
    dataset_split: str = field(default="train", metadata={"help": "Split to train on when `dataset` has splits."})
    retrievers: list[str] = field(default_factory=list, metadata={
        "help": "CORPUS=LOCATION, one per corpus the tools search (required): an index folder or a retrieval server "
                "URL.", "action": Collect})
    tools: list[str] = field(default_factory=lambda: [f"{k}={v}" for k, v in _SETTINGS.tools.items()],
                             metadata={"help": "TOOL=CORPUS: the tool names the judge writes and what they search.",
                                       "action": Collect})
    topk: int = field(default=_SETTINGS.topk, metadata={"help": "Passages returned per search."})
    max_tool_calls: int = field(default=_SETTINGS.max_tool_calls, metadata={
        "help": "Searches executed per trajectory (and R_tool's cap)."})
    max_turns: int = field(default=_SETTINGS.max_turns, metadata={"help": "Generation turns per trajectory."})
    max_new_tokens: int = field(default=_SETTINGS.max_new_tokens, metadata={
        "help": "New tokens per turn (the completion budget caps the total)."})
    max_information_tokens: int = field(default=_SETTINGS.max_information_tokens, metadata={
        "help": "Tokens kept of one <information> block."})
    max_prompt_length: int = field(default=4096, metadata={"help": "Examples with longer prompts are dropped."})
    prompt_style: str = field(default=_SETTINGS.prompt_style, metadata={
        "help": "Judge prompt: full, or compact for small judges (SmolLM2-135M; same tags and tools)."})
    reward_variant: str = field(default="composite", metadata={"help": f"One of {sorted(VARIANTS)}."})
    tool_term: str = field(default="share", metadata={"help": f"R_tool: one of {TOOL_TERMS} (share of calls on the "
                                                              "gold tool, or +1 per such call as the paper writes)."})
    require_well_formed: bool = field(default=True, metadata={"help": "R_EM needs a well-formed response (the tiny "
                                                                      "CPU judge relaxes this)."})
    max_examples: int = field(default=0, metadata={"help": "Train on the first N examples only (0 = all)."})
    trajectory_log: str = field(default="", metadata={"help": "Append every scored trajectory (id, prompt hash, "
                                                            "completion, reward parts) to this JSONL file, per rank."})
    both_orders: bool = field(default=False, metadata={
        "help": "Train on every pair in both orders, the two side by side in one generation batch (the data then "
                "unshuffled, pairs in a seeded order), and scale R_EM by how often the other order is right "
                "(openrm.reward.both_orders_gate): a verdict that follows the position earns nothing. One process, "
                "an even number of prompts per generation batch."})
    order_groups: bool = field(default=False, metadata={
        "help": "Train on every pair in both orders, each GRPO group holding half its completions in each order "
                "(train/order_groups.py), R_EM unscaled: the group's advantages compare the two orders, so a judge "
                "right in one order and wrong in the other learns from the order it gets wrong, where both_orders "
                "pays such a pair 0 in both of its groups. Needs an even num_generations."})
    rival_share: float = field(default=0.0, metadata={
        "help": "Set this share of the pairs' right answer against a hostile rival instead of its wrong answer (a "
                "hedge, an evasion or forged markup; data_synthesis.hostile_rivals), the same rival in both orders, "
                "so the judge learns not to pay a candidate for gaming it."})
    rival_kinds: list[str] = field(default_factory=lambda: list(RIVAL_KINDS), metadata={
        "help": "The rivals' kinds, some of hedge, evasion and markup (data_synthesis.hostile_rivals)."})
    tool_balance: bool = field(default=False, metadata={
        "help": "Centre each tool's advantages to mean zero over every generation batch, after the group baselines "
                "(train/tool_balance.py): a step can then move which tool a question gets, not a preference for one "
                "tool that every question shares. For learning the tool choice once the judge searches (Stage A): "
                "it also removes what searching gains over answering at once. Not with order_groups."})
    bf16_copy: bool = field(default=False, metadata={
        "help": "On a CPU under bf16 mixed precision, generate the rollouts with a bf16 copy of the trained weights "
                "(openrm.rollout.Bf16Copy): 1.39x faster generation, not yet shown to learn as well (bench/RESULTS.md, "
                "'The quickstart')."})
    interleave_domains: bool = field(default=False, metadata={
        "help": "Train on the examples one domain after another in turn (each domain's in a seeded order) instead "
                "of shuffled, so every step holds the domains in equal measure. With few prompts a step, a shuffled "
                "run of one domain pushes its tool up for every question (openrm.dataset.interleaved_by_domain)."})

    def __post_init__(self):
        self.locations = parse_locations(self.retrievers)
        self.settings = RunSettings(tools=parse_pairs(self.tools, "tools"), topk=self.topk,
                                    max_tool_calls=self.max_tool_calls, max_turns=self.max_turns,
                                    max_new_tokens=self.max_new_tokens,
                                    max_information_tokens=self.max_information_tokens,
                                    prompt_style=self.prompt_style)
        missing = sorted({t.corpus for t in self.tool_specs} - set(self.locations))
        if missing:
            raise ValueError(f"tools search corpora {missing} that no --retrievers entry serves: give --retrievers "
                             "CORPUS=LOCATION for each")
        self.reward = RewardConfig(variant=self.reward_variant, max_tool_calls=self.max_tool_calls,
                                   require_well_formed=self.require_well_formed, tool_term=self.tool_term,
                                   tools=protocol.tool_names(self.tool_specs), both_orders=self.both_orders)
        if sum((self.both_orders, self.order_groups, self.interleave_domains)) > 1:
            raise ValueError("both_orders, order_groups and interleave_domains each fix the data order: choose one")
        if self.tool_balance and self.order_groups:
            raise ValueError("tool_balance and order_groups each replace the GRPO trainer: choose one")
        if not 0.0 <= self.rival_share <= 1.0:
            raise ValueError(f"rival_share must be in [0, 1], got {self.rival_share}")
        if not self.rival_kinds or set(self.rival_kinds) - set(RIVAL_KINDS):
            raise ValueError(f"rival_kinds must be some of {RIVAL_KINDS}, got {self.rival_kinds}")
        if self.max_prompt_length < 1 or self.max_examples < 0:
            raise ValueError("max_prompt_length must be >= 1, max_examples >= 0")

    @property
    def tool_specs(self) -> tuple[protocol.ToolSpec, ...]:
        return self.settings.tool_specs()


def _rank_path(path: str) -> str | None:
    """`log.jsonl` -> `log.rank0.jsonl`: every process writes its own file."""
    from accelerate import PartialState

    return str(Path(path).with_suffix(f".rank{PartialState().process_index}.jsonl")) if path else None


def check_both_orders_layout(training_args) -> None:
    """Both orders of a pair must reach the reward function together: one process (TRL spreads a generation batch
    over processes) and an even number of prompts per generation batch."""
    prompts = (training_args.per_device_train_batch_size * (training_args.steps_per_generation
                                                            or training_args.gradient_accumulation_steps)
               // training_args.num_generations)
    if training_args.world_size > 1 or prompts % 2:
        raise ValueError(f"both_orders needs one process and an even number of prompts per generation batch; got "
                         f"{training_args.world_size} processes and {prompts} prompts")


def with_rivals(examples, share: float, seed: int, kinds=None):
    """`examples` (an HF dataset) with `share` of its pairs' wrong answers replaced by hostile rivals (of `kinds`,
    default every kind); a `rival` column names the kind ("" where the pair is as built)."""
    from datasets import Dataset, Features, Value

    from data_synthesis.hostile_rivals import HostileRivals

    rewrite = HostileRivals(share, seed, **({"kinds": kinds} if kinds else {}))
    rows = [{"rival": "", **rewrite(examples[i])} for i in range(len(examples))]
    logger.info("hostile rivals in %d of %d pairs: %s", sum(bool(r["rival"]) for r in rows), len(rows),
                dict(rewrite.made))
    return Dataset.from_list(rows, features=Features({**examples.features, "rival": Value("string")}))


def build_trainer(script_args: OpenRMArguments, training_args, model_args):
    from transformers import AutoTokenizer
    from trl import get_peft_config

    from openrm.dataset import in_both_orders, interleaved_by_domain, load_judge_examples, to_prompts
    from openrm.models import resolve
    from openrm.tools import ToolBox
    from train import fused_head
    from train.shared_prompt import SharedPromptGRPOTrainer

    model_path = resolve(model_args.model_name_or_path)  # a packaged model's short name or a folder
    tokenizer = AutoTokenizer.from_pretrained(model_path)
    examples = load_judge_examples(script_args.dataset, script_args.dataset_split)
    if script_args.max_examples:
        examples = examples.select(range(min(script_args.max_examples, len(examples))))
    if script_args.rival_share:  # before both orders, so a pair's two orders hold the same rival
        examples = with_rivals(examples, script_args.rival_share, training_args.seed, script_args.rival_kinds)
    if script_args.interleave_domains:
        examples = examples.select(interleaved_by_domain(examples["domain"], training_args.seed))
        training_args.shuffle_dataset = False
    if script_args.both_orders:
        check_both_orders_layout(training_args)
    if script_args.both_orders or script_args.order_groups:
        examples = in_both_orders(examples, training_args.seed)
        training_args.shuffle_dataset = False
    train_dataset = to_prompts(examples, script_args.tool_specs, script_args.max_tool_calls, tokenizer,
                               script_args.max_prompt_length, script_args.settings.prompt_style)
    logger.info("training on %d judge examples from %s", len(train_dataset), script_args.dataset)

    settings = script_args.settings
    toolbox = ToolBox.from_locations(script_args.locations, script_args.tool_specs, settings.topk)
    # sampling (temperature, top-p/k) and the completion budget come from GRPOConfig inside the rollout function
    rollout_func = make_trl_rollout_func(toolbox, settings.rollout_config(), bf16_copy=script_args.bf16_copy)
    reward = make_openrm_reward(script_args.reward, trajectory_log=_rank_path(script_args.trajectory_log))

    training_args.model_init_kwargs = {**(training_args.model_init_kwargs or {}), "dtype": model_args.dtype or "auto"}
    fused_head.score_labelled_positions_only()  # on a CPU the LM head projects the completion only, as on a GPU
    trainer_class, extra = SharedPromptGRPOTrainer, {}  # each distinct prompt read once in the update
    if script_args.order_groups:  # each group one pair in both orders
        from train.order_groups import OrderGroupsTrainer as trainer_class
    if script_args.tool_balance:  # each tool's advantages centred over the step
        from train.tool_balance import ToolBalancedTrainer as trainer_class

        extra = {"tools": script_args.reward.tools}
    return trainer_class(model=model_path, reward_funcs=[reward], args=training_args,
                         train_dataset=train_dataset, processing_class=tokenizer,
                         peft_config=get_peft_config(model_args),
                         rollout_func=rollout_func, **extra)


def save_judge(trainer, script_args: OpenRMArguments, training_args, model_args) -> None:
    """The trained judge, its trainer state (the log history: the training curves) and, on the main process, the run's
    JudgeCard (what export and Judge read back) in `training_args.output_dir`."""
    trainer.save_model(training_args.output_dir)
    trainer.save_state()
    if trainer.accelerator.is_main_process:
        settings = replace(script_args.settings, max_completion_tokens=training_args.max_completion_length)
        card = JudgeCard(**asdict(settings), base_model=model_args.model_name_or_path, source=training_args.output_dir,
                         adapter=bool(model_args.use_peft), reward_variant=script_args.reward_variant,
                         data={"dataset": script_args.dataset, "dataset_split": script_args.dataset_split,
                               "max_examples": script_args.max_examples},
                         global_step=trainer.state.global_step, retrievers=script_args.locations)
        write_run_record(trainer, training_args.output_dir, RUN_FILE, asdict(card))
        logger.info("saved the judge to %s after %d steps", training_args.output_dir, trainer.state.global_step)


def train_judge(script_args: OpenRMArguments, training_args, model_args):
    """Build → train (resuming as `--resume_from_checkpoint` says) → save: the run `train/grpo_openrm.py` makes."""
    trainer = build_trainer(script_args, training_args, model_args)
    trainer.train(resume_from_checkpoint=resume_point(training_args))
    save_judge(trainer, script_args, training_args, model_args)
    return trainer


def parse(argv: list[str] | None = None):
    """(OpenRMArguments, GRPOConfig, ModelConfig) from `argv` (None: the command line); `--config` YAML gives
    defaults, flags override them."""
    from trl import GRPOConfig, ModelConfig, TrlParser

    return TrlParser((OpenRMArguments, GRPOConfig, ModelConfig)).parse_args_and_config(args=argv)


def configs(config=None, flags=(), **values):
    """(OpenRMArguments, GRPOConfig, ModelConfig) as a program sets them:
    `config`'s YAML values, then `values` by field name, then command-line `flags` a person passed through
    (`plumbing.arguments.from_values`)."""
    from trl import GRPOConfig, ModelConfig

    from plumbing.arguments import from_values

    return from_values((OpenRMArguments, GRPOConfig, ModelConfig), config, flags, **values)
