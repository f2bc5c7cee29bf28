"""A policy's GRPO on tournament (and rubric) rewards, as `train/grpo_policy.py` runs it: its arguments, the trainer
(data → match judge → topology and arena → rewards → TRL's GRPOTrainer) and the saved run (model, trainer state,
`policy_run.json`).

    trainer = train_policy(*parse(["--config", "configs/grpo_policy/tiny_cpu.yaml", "--model_name_or_path", ...]))
    trainer = train_policy(*configs("configs/grpo_policy/tiny_cpu.yaml", model_name_or_path=model, topology="swiss"))
"""

from __future__ import annotations

import json
import logging
from dataclasses import asdict, dataclass, field
from pathlib import Path

from openrm.judge_spec import JudgeSpec, judge_kinds
from openrm.rubrics.scorer_spec import ScorerSpec, scorer_kinds
from openrm.tournament import SHAPINGS, TOPOLOGIES
from plumbing.arguments import Collect, parse_pairs
from plumbing.records import run_record
from retrieval.retriever import parse_locations
from train.runs import resume_point, write_run_record

logger = logging.getLogger("openrm.grpo_policy")
RUN_FILE = run_record("policy")  # what this run trained with, beside the model
VERIFIERS = ("", "answer_match")
REWARDS = ("tournament", "rubric", "tournament+rubric")


@dataclass
class PolicyArguments(JudgeSpec):
    dataset: str = field(metadata={"help": "Prompt rows (JSONL or an HF save_to_disk folder): prompt (string or "
                                           "chat messages), question (what the judge is asked about; else the "
                                           "prompt), id, and answer for a verifier; a plugin judge may read meta."})
    dataset_split: str = field(default="train", metadata={"help": "Split to train on when `dataset` has splits."})
    max_examples: int = field(default=0, metadata={"help": "Train on the first N prompts only (0 = all)."})
    policy_retrievers: list[str] = field(default_factory=list, metadata={
        "help": "CORPUS=LOCATION for the policy's own search tools: the policy is then a search agent that may "
                "search before it answers (openrm.agent; the judge's call syntax, <information> masked out of the "
                "loss) and the match judge sees only its final answer. None: the policy answers at once.",
        "action": Collect})
    policy_tools: list[str] = field(default_factory=lambda: ["WIKI=wiki", "ARXIV=arxiv"], metadata={
        "help": "TOOL=CORPUS: the tool names the search agent writes and what they search.", "action": Collect})
    policy_topk: int = field(default=1, metadata={"help": "Passages a search agent's search returns."})
    policy_max_tool_calls: int = field(default=2, metadata={"help": "Searches executed per agent trajectory."})
    policy_max_new_tokens: int = field(default=64, metadata={"help": "New tokens per agent turn."})
    policy_max_information_tokens: int = field(default=128, metadata={"help": "Tokens kept of one <information>."})
    topology: str = field(default="round_robin", metadata={"help": f"One of {sorted(TOPOLOGIES)}."})
    # dict | str | None, as TRL's model_init_kwargs: HfArgumentParser then parses the command line as a str (JSON);
    # with `dict | str` it would call dict() on the JSON text and refuse it
    topology_options: dict | str | None = field(default_factory=dict, metadata={
        "help": "Keyword arguments of the topology (JSON on the command line), e.g. multi_round's group_size, "
                "k_win, k_final, repeats; active's budget."})
    greedy_anchor: bool = field(default=False, metadata={
        "help": "Decode each group's first completion greedily (ArenaRL's quality anchor, at index 0)."})
    orders: str = field(default="both", metadata={"help": "Presentation orders per match: both, random (one, "
                                                          "seeded) or given. An openrm judge plays both orders "
                                                          "itself under 'both' and one rollout per match "
                                                          "otherwise (Reasoning Arena's budget)."})
    shaping: str = field(default="rank_z", metadata={"help": f"Standings -> rewards: one of {sorted(SHAPINGS)}."})
    verifier: str = field(default="", metadata={
        "help": "Adaptive routing (Reasoning Arena): 'answer_match' scores each completion against the answer "
                "column and only groups where it cannot separate go to the tournament; '' = tournament always."})
    format_pattern: str = field(default="", metadata={
        "help": "Regex a completion must match whole for the format reward (Tournament-GRPO's r_fmt; '' = none)."})
    match_log: str = field(default="", metadata={"help": "JSONL match log; each process appends "
                                                         "<stem>.rank<r>.jsonl ('' = <output_dir>/matches.jsonl)."})
    rewards: str = field(default="tournament", metadata={
        "help": f"One of {REWARDS}: the tournament's standings, each completion's rubric score (Eq. 2 of the "
                "query-specific rubrics paper, pointwise, in [0, 1]) or both (weigh them with reward_weights)."})
    rubric_generator: str = field(default="", metadata={
        "help": "Query-specific rubrics, one per prompt, generated before training and cached: a local generator "
                "checkpoint (train/grpo_rubric_generator.py) or the URL of a served one (with "
                "rubric_generator_model). '' = the dataset's own rubric column, if any."})
    rubric_generator_model: str = field(default="", metadata={"help": "Model name the generator server serves."})
    rubric_style: str = field(default="full", metadata={"help": "Generator prompt: full or compact (tiny)."})
    rubric_max_new_tokens: int = field(default=2048, metadata={"help": "Generator budget per rubric."})
    rubric_cache: str = field(default="", metadata={
        "help": "JSONL of the generated rubrics (a rerun generates none twice; '' = <output_dir>/rubrics.jsonl)."})
    rubric_scorer: str = field(default="server", metadata={"help": f"Rubric reward's scorer: one of {scorer_kinds()}."})
    rubric_scorer_server: str = field(default="", metadata={"help": "OpenAI-compatible URL of the rating model."})
    rubric_scorer_model: str = field(default="", metadata={"help": "Model name the scorer server serves."})
    rubric_scorer_concurrency: int = field(default=32, metadata={"help": "Rating requests in flight."})
    rubric_scorer_temperature: float = field(default=0.0, metadata={"help": "Rating model's temperature."})
    rubric_scorer_top_p: float | None = field(default=None, metadata={
        "help": "Rating model's top-p (Tournament-GRPO's judge: 0.95); unset: not sent."})
    rubric_scoring: str = field(default="explicit", metadata={
        "help": "Rubric reward: explicit (every item rated alone, weighted: Eq. 2) or implicit (one rating against "
                "the whole rubric, Tournament-GRPO's implicit baseline)."})

    def __post_init__(self):
        super().__post_init__()
        if self.topology_options is None:
            self.topology_options = {}
        if isinstance(self.topology_options, str):
            try:
                self.topology_options = json.loads(self.topology_options or "{}")
            except json.JSONDecodeError as exc:
                raise ValueError(f"topology_options must be a JSON object: {exc}") from exc
        if not isinstance(self.topology_options, dict):
            raise ValueError(f"topology_options must be a mapping, got {self.topology_options!r}")
        if self.topology not in TOPOLOGIES:
            raise ValueError(f"unknown topology {self.topology!r}; choose one of {sorted(TOPOLOGIES)}")
        if self.shaping not in SHAPINGS or self.verifier not in VERIFIERS or self.max_examples < 0:
            raise ValueError(f"shaping must be one of {sorted(SHAPINGS)}, verifier one of {VERIFIERS}, "
                             f"max_examples >= 0")
        if self.rewards not in REWARDS:
            raise ValueError(f"rewards must be one of {REWARDS}, got {self.rewards!r}")
        if "tournament" in self.rewards and not self.judge:
            raise ValueError(f"--judge is required: an exported judge folder or one of {judge_kinds()}")
        if self.orders not in ("both", "random", "given"):
            raise ValueError(f"orders must be both, random or given, got {self.orders!r}")
        self.topology_obj = make_topology(self.topology, self.topology_options)
        if self.rubric_scoring not in ("explicit", "implicit"):
            raise ValueError(f"rubric_scoring must be explicit or implicit, got {self.rubric_scoring!r}")
        self.scorer_spec = None
        if "rubric" in self.rewards:
            self.scorer_spec = ScorerSpec(kind=self.rubric_scorer, server=self.rubric_scorer_server,
                                          model=self.rubric_scorer_model, concurrency=self.rubric_scorer_concurrency,
                                          temperature=self.rubric_scorer_temperature,
                                          top_p=self.rubric_scorer_top_p,
                                          world_seed=0 if self.world_seed is None else self.world_seed)
        self.agent_locations = parse_locations(self.policy_retrievers) if self.policy_retrievers else {}
        if self.agent_locations:
            from openrm import protocol

            self.agent_tools = protocol.tools_from_mapping(parse_pairs(self.policy_tools, "policy_tools"))
            missing = sorted({t.corpus for t in self.agent_tools} - set(self.agent_locations))
            if missing:
                raise ValueError(f"policy_tools search corpora {missing} that no --policy_retrievers entry serves")
            if self.greedy_anchor:
                raise ValueError("a search agent's rollout has no greedy anchor: drop --greedy_anchor or "
                                 "--policy_retrievers")
            if min(self.policy_topk, self.policy_max_tool_calls, self.policy_max_new_tokens) < 1 \
                    or self.policy_max_information_tokens < 16:
                raise ValueError("policy_topk, policy_max_tool_calls and policy_max_new_tokens must be >= 1, "
                                 "policy_max_information_tokens >= 16")
        if self.greedy_anchor and getattr(self.topology_obj, "anchor", 0) != 0:
            raise ValueError("the greedy anchor is each group's first completion: set the topology's anchor to 0")


def make_topology(name: str, options: dict):
    cls = TOPOLOGIES[name]
    unknown = sorted(set(options) - set(cls.__dataclass_fields__) - {"name"})
    if unknown or "name" in options:
        raise ValueError(f"{name} takes {sorted(set(cls.__dataclass_fields__) - {'name'})}, not {unknown or ['name']}")
    return cls(**{k: tuple(v) if isinstance(v, list) else v for k, v in options.items()})


def load_rows(path: str, split: str, limit: int):
    from plumbing.rows import open_rows

    data = open_rows(path, split, what="prompt rows")
    if "prompt" not in data.column_names:
        raise ValueError(f"{path}: prompt rows need a 'prompt' column (has {data.column_names})")
    return data.select(range(min(limit, len(data)))) if limit else data


def with_rubrics(train_dataset, script_args: PolicyArguments, output_dir: str):
    """The prompts with a `rubric` column (JSON): each prompt's query-specific rubric from the generator, generated
    once by the main process and appended to the cache, which every other process then reads. A rubric that does not
    parse becomes the general rubric (logged); the TournamentReward shows the column to a rubric group judge."""
    from accelerate import PartialState

    from openrm.dataset import question_of
    from openrm.rubrics.generator import open_generator
    from openrm.rubrics.policy_reward import RubricBook, add_rubric_column

    target = script_args.rubric_generator
    served = target.startswith(("http://", "https://"))
    cache = Path(script_args.rubric_cache or Path(output_dir) / "rubrics.jsonl")
    rows = [{**r, "question": r.get("question") or question_of(r["prompt"])} for r in train_dataset.to_list()]
    with PartialState().main_process_first():
        generator = open_generator("" if served else target, target if served else "",
                                   script_args.rubric_generator_model, script_args.rubric_style,
                                   script_args.rubric_max_new_tokens, cache.with_suffix(".requests.jsonl"))
        book = RubricBook(generator, cache)
        rows = add_rubric_column(rows, book)
        if hasattr(generator, "close"):
            generator.close()
    logger.info("rubrics for %d prompts (%s; %d fell back to the general rubric)", len(rows), cache, book.fallbacks)
    from datasets import Dataset

    return Dataset.from_list(rows)


def build_trainer(script_args: PolicyArguments, training_args, model_args):
    from accelerate import PartialState
    from transformers import AutoTokenizer
    from trl import get_peft_config

    from eval.hostile import trait_shares
    from openrm.agent import final_answer
    from openrm.generation import SamplingParams
    from openrm.models import resolve
    from openrm.rollout import RolloutConfig, make_trl_rollout_func
    from openrm.rubrics.policy_reward import RubricScoreReward, check_rubric_column
    from openrm.rubrics.scorer_spec import build_scorer
    from openrm.tools import ToolBox
    from openrm.tournament import Arena, TournamentReward
    from openrm.tournament.greedy_anchor import make_greedy_anchor_rollout
    from openrm.tournament.verifiers import AnswerMatch, FormatReward
    from train import fused_head
    from train.shared_prompt import SharedPromptGRPOTrainer

    model_path = resolve(model_args.model_name_or_path)  # a packaged model's short name or a folder
    tokenizer = AutoTokenizer.from_pretrained(model_path)
    train_dataset = load_rows(script_args.dataset, script_args.dataset_split, script_args.max_examples)
    logger.info("training on %d prompts from %s", len(train_dataset), script_args.dataset)
    if script_args.agent_locations:  # a bare question becomes the agent's chat prompt, with its tools listed
        from openrm.agent import agent_messages

        train_dataset = train_dataset.map(lambda row: {"prompt": agent_messages(row["prompt"], script_args.agent_tools)
                                                       if isinstance(row["prompt"], str) else row["prompt"]})

    if script_args.rubric_generator:
        train_dataset = with_rubrics(train_dataset, script_args, training_args.output_dir)
    if script_args.scorer_spec is not None and "rubric" not in train_dataset.column_names:
        raise ValueError("the rubric reward needs a rubric column in the dataset or a rubric_generator")
    if "rubric" in train_dataset.column_names:
        check_rubric_column(train_dataset["rubric"], script_args.dataset)

    reward_funcs = []
    if "tournament" in script_args.rewards:
        topology = script_args.topology_obj
        group_rounds = topology.name == "multi_round"
        pairwise = None  # a multi-round tournament with the rubric group judge needs no pairwise judge
        if not group_rounds and script_args.judge == "none":  # pairwise matches by the rubric group judge
            from openrm.tournament.judges import GroupPairwise

            pairwise = GroupPairwise(script_args.open_group(None))
        elif not group_rounds or script_args.group_judge == "pairwise":
            pairwise, _ = script_args.open_match(train_dataset.to_list(),
                                                 orders=2 if script_args.orders == "both" else 1)
        group = script_args.open_group(pairwise) if group_rounds else None
        arena = Arena(pairwise=pairwise, group=group, orders=script_args.orders, seed=training_args.seed)
        reward_funcs.append(TournamentReward(
            topology, arena, group_size=training_args.num_generations, shaping=script_args.shaping,
            match_log=script_args.match_log or str(Path(training_args.output_dir) / "matches.jsonl"),
            verifier=AnswerMatch() if script_args.verifier == "answer_match" else None,
            anchor_position=0 if script_args.greedy_anchor else None,
            candidate=final_answer if script_args.agent_locations else None, observe=trait_shares))
    if script_args.scorer_spec is not None:
        rank = PartialState().process_index
        cache = Path(training_args.output_dir) / f"rubric_ratings.rank{rank}.jsonl"
        reward_funcs.append(RubricScoreReward(build_scorer(script_args.scorer_spec, cache=cache),
                                              scoring=script_args.rubric_scoring))
    if script_args.format_pattern:
        reward_funcs.append(FormatReward(script_args.format_pattern))
    rollout_func = make_greedy_anchor_rollout(training_args.num_generations) if script_args.greedy_anchor else None
    if script_args.agent_locations:  # a search agent: the judge's multi-turn rollout with the policy's own tools
        toolbox = ToolBox.from_locations(script_args.agent_locations, script_args.agent_tools, script_args.policy_topk)
        rollout_func = make_trl_rollout_func(toolbox, RolloutConfig(
            max_tool_calls=script_args.policy_max_tool_calls, max_turns=script_args.policy_max_tool_calls + 2,
            max_information_tokens=script_args.policy_max_information_tokens,
            sampling=SamplingParams(max_new_tokens=script_args.policy_max_new_tokens)))

    training_args.model_init_kwargs = {**(training_args.model_init_kwargs or {}), "dtype": model_args.dtype or "auto"}
    fused_head.score_labelled_positions_only()  # on a CPU the LM head projects the completion only, as on a GPU
    return SharedPromptGRPOTrainer(model=model_path, reward_funcs=reward_funcs, args=training_args,
                                   train_dataset=train_dataset, processing_class=tokenizer,
                                   peft_config=get_peft_config(model_args), rollout_func=rollout_func)



def save_policy(trainer, script_args: PolicyArguments, training_args, model_args) -> None:
    """The trained policy, its trainer state (the curves, tournament/* included) and, on the main process,
    `policy_run.json` (what this run trained with) in `training_args.output_dir`."""
    trainer.save_model(training_args.output_dir)
    trainer.save_state()
    if trainer.accelerator.is_main_process:
        run = {"base_model": model_args.model_name_or_path, "global_step": trainer.state.global_step,
               "num_generations": training_args.num_generations, "seed": training_args.seed,
               "policy": asdict(script_args)}
        write_run_record(trainer, training_args.output_dir, RUN_FILE, run)
        logger.info("saved the policy to %s after %d steps", training_args.output_dir, trainer.state.global_step)


def train_policy(script_args: PolicyArguments, training_args, model_args):
    """Build → train (resuming as `--resume_from_checkpoint` says) → save: the run `train/grpo_policy.py` makes."""
    trainer = build_trainer(script_args, training_args, model_args)
    trainer.train(resume_from_checkpoint=resume_point(training_args))
    save_policy(trainer, script_args, training_args, model_args)
    return trainer


def parse(argv: list[str] | None = None):
    """(PolicyArguments, GRPOConfig, ModelConfig) from `argv` (None: the command line); `--config` YAML gives
    defaults, flags override them."""
    from trl import GRPOConfig, ModelConfig, TrlParser

    return TrlParser((PolicyArguments, GRPOConfig, ModelConfig)).parse_args_and_config(args=argv)


def configs(config=None, flags=(), **values):
    """(PolicyArguments, GRPOConfig, ModelConfig) as a program sets them:
    `config`'s YAML values, then `values` by field name, then command-line `flags` a person passed through
    (`plumbing.arguments.from_values`)."""
    from trl import GRPOConfig, ModelConfig

    from plumbing.arguments import from_values

    return from_values((PolicyArguments, GRPOConfig, ModelConfig), config, flags, **values)
