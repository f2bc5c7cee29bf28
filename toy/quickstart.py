"""The main job on the embedded default, end to end on a laptop CPU, offline: toy world → bm25 indexes → the
packaged SmolLM2-135M-Instruct → zero-shot judging → SFT warm-up on gold trajectories, most of which answer without
searching → GRPO with live search → export → both-order judging of held-out pairs → a table and the training curves.

    make quickstart                       # = python -m toy.quickstart --out runs/quickstart
    python -m toy.quickstart --config configs/quickstart/smollm2.yaml

The toy world's facts are fictional, so a judge can only decide its pairs by searching. The warm-up teaches the
protocol, the right corpus and the copy, but searches in only 30 % of its trajectories and answers at once, a guess,
in the rest, so its greedy judge does not search; GRPO (configs/grpo_openrm/smollm2_cpu.yaml, reward `composite`)
pays for the right verdict and for searching the right corpus, and the table shows what it moved. A quarter of the
training pairs (warm-up and GRPO) set the right answer against a hedge naming both values, so the judge does not
pay a policy for hedging. A rerun reuses every finished stage and resumes an interrupted GRPO run.
"""

from __future__ import annotations

import json
import logging
import os
from dataclasses import dataclass, field
from pathlib import Path

from plumbing.hardware import native_bf16
from toy.judge_stages import grpo, measured, plot_curves, results_table, summary, toy_indexes
from toy.warmup import WarmupPlan, warm_up
from toy.world import DOMAINS, ToyWorld, WorldSize, write_dataset

logger = logging.getLogger("openrm.quickstart")
STAGES = 8


def stage(n: int, message: str, *args) -> None:
    logger.info(f"[{n}/{STAGES}] {message}", *args)


@dataclass
class QuickstartArguments:
    out: str = field(default="runs/quickstart", metadata={"help": "Folder for every artefact of the run."})
    seed: int = field(default=0, metadata={"help": "Seed of the toy world, the warm-up and GRPO."})
    model: str = field(default="smollm2-135m-instruct", metadata={
        "help": "The judge's base model: a packaged model's short name (python -m openrm.models list) or a folder."})
    domains: list[str] = field(default_factory=lambda: list(DOMAINS), metadata={
        "help": "Toy domains of the pairs (WIKI is the right tool for wiki and medical, ARXIV for science)."})
    n_train: int = field(default=2000, metadata={"help": "Training judge pairs (short style) to synthesise."})
    n_test: int = field(default=200, metadata={"help": "Test judge pairs (about documents no train pair uses)."})
    n_eval: int = field(default=100, metadata={"help": "Test pairs judged in both orders for the table."})
    sft_steps: int = field(default=40, metadata={"help": "SFT warm-up steps."})
    sft_batch: int = field(default=8, metadata={"help": "Gold trajectories per warm-up step (each drawn afresh)."})
    sft_learning_rate: float = field(default=1e-4, metadata={"help": "Peak warm-up learning rate (cosine)."})
    search_share: float = field(default=0.3, metadata={
        "help": "Share of the warm-up's trajectories that search (exactly, per kind of fact); the rest answer at "
                "once. Below 0.5 the warmed-up judge's greedy choice is not to search, which GRPO's reward is left "
                "to teach; 1: always search (a warm-up that already searches leaves GRPO little to do)."})
    random_tool: bool = field(default=False, metadata={
        "help": "Warm up on trajectories whose tool carries no information (each tool equally often per kind of "
                "fact), leaving the tool choice to GRPO; false: the gold tool. (On SmolLM2, 30 GRPO steps teach "
                "the tool choice on one seed in three, with --tool_balance on 3 seeds of 3: bench/RESULTS.md, "
                "Stage A.)"})
    tool_balance: bool = field(default=False, metadata={
        "help": "GRPO with each tool's advantages centred over the step (train/tool_balance.py), for teaching the "
                "tool choice (--random_tool true); needs --search_share 1, since centring also removes what "
                "searching gains over answering at once."})
    bf16_copy: bool = field(default=False, metadata={
        "help": "GRPO's rollouts generated with a bf16 copy of the judge (train/judge_trainer.py's bf16_copy; with "
                "bf16 on a CPU): faster, not yet shown to learn as well (bench/RESULTS.md, 'The quickstart')."})
    hedge_share: float = field(default=0.25, metadata={
        "help": "Share of the training pairs (warm-up and GRPO) whose wrong answer is a hedge naming both values, "
                "so the judge learns that naming every value does not win (experiments/hacking_audit.py measures it; "
                "0: none)."})
    hedge_wordings: str = field(default="wide", metadata={
        "help": "Which hedges the training pairs draw from (toy.world.HEDGE_WORDINGS): 'wide' (18 wordings, the "
                "whole wrong answer beside the whole right one among them) or 'six' (bare values and short "
                "asides only; its judge ties against a hedge worded otherwise: bench/RESULTS.md).",
        "choices": ["six", "wide"]})
    grpo_steps: int = field(default=30, metadata={"help": "GRPO steps (4 prompts x 4 completions each)."})
    grpo_learning_rate: float = field(default=1e-5, metadata={"help": "GRPO learning rate (constant)."})
    bf16: bool | None = field(default=None, metadata={
        "help": "The warm-up's and GRPO's forward under bf16 autocast (float32 weights and optimizer), judging with "
                "bf16 weights; false: float32 throughout. Default: true where the processor has native bf16 (a CPU "
                "with avx512_bf16 or amx_bf16, a GPU that supports it; plumbing/hardware.py), else false."})
    threads: int = field(default=0, metadata={
        "help": "torch threads (0: one per core). Two torch jobs on the same cores slow each other 10x: run one."})

    def __post_init__(self) -> None:
        if min(self.n_train, self.n_test, self.sft_steps, self.sft_batch, self.grpo_steps, self.n_eval) < 1:
            raise ValueError("n_train, n_test, sft_steps, sft_batch, grpo_steps and n_eval must be >= 1")
        if self.n_eval > self.n_test:
            raise ValueError(f"n_eval ({self.n_eval}) cannot exceed n_test ({self.n_test})")
        if not self.domains or set(self.domains) - set(DOMAINS):
            raise ValueError(f"domains must be a non-empty subset of {DOMAINS}, got {self.domains}")
        if not 0.0 < self.search_share <= 1.0:
            raise ValueError(f"search_share must be in (0, 1], got {self.search_share}")
        if not 0.0 <= self.hedge_share <= 1.0:
            raise ValueError(f"hedge_share must be in [0, 1], got {self.hedge_share}")
        if self.tool_balance and self.search_share < 1:
            raise ValueError("tool_balance needs search_share 1: it also removes what searching gains")
        if self.threads < 0:
            raise ValueError(f"threads must be >= 0, got {self.threads}")
        if self.bf16 is None:
            self.bf16 = native_bf16()

    def warmup_plan(self) -> WarmupPlan:
        return WarmupPlan(steps=self.sft_steps, batch=self.sft_batch, learning_rate=self.sft_learning_rate,
                          random_tool=self.random_tool, search_share=self.search_share, hedge_share=self.hedge_share,
                          hedge_wordings=self.hedge_wordings, domains=tuple(self.domains), seed=self.seed,
                          bf16=self.bf16)


def main(args: QuickstartArguments) -> dict:
    from openrm.models import resolve

    if args.threads:
        import torch

        torch.set_num_threads(args.threads)
    out = Path(args.out)
    world = ToyWorld(args.seed, WorldSize())
    stage(1, "toy world: %d documents; %d/%d short judge pairs (%s) in %s", len(world.documents), args.n_train,
          args.n_test, "+".join(args.domains), out / "data")
    data = write_dataset(world, out / "data", args.n_train, args.n_test, style="short", granularity="fact",
                         domains=args.domains, hedge_share=args.hedge_share,
                         hedge_wordings=args.hedge_wordings)
    stage(2, "bm25 indexes")
    indexes = toy_indexes(data / "corpora", out / "indexes")
    stage(3, "base model %s", args.model)
    base = Path(resolve(args.model))
    examples = world.examples(args.n_eval, "test", args.domains, style="short")
    stage(4, "judging %d held-out pairs in both orders zero-shot", len(examples))
    out.mkdir(parents=True, exist_ok=True)
    judged = out / "judged.json"  # every row's numbers, keyed by the weights: export rewrites the judge's folder
    judging = {"dtype": "bfloat16"} if args.bf16 else {}  # a float32 run's cached numbers keep their key
    table = {"zero-shot": measured(base, indexes, examples, cache=judged, **judging)}
    stage(5, "SFT warm-up")
    warm = warm_up(world, str(base), out / "judge-sft", args.warmup_plan())
    table["SFT warm-up"] = measured(warm, indexes, examples, cache=judged, **judging)
    stage(6, "GRPO")
    run = grpo(warm, data, indexes, out / "grpo", args.grpo_steps, seed=args.seed,
               learning_rate=args.grpo_learning_rate,
               trajectory_log=out / "grpo" / "trajectories.jsonl",  # experiments/tool_choice_log.py reads it
               **({"bf16": True} if args.bf16 else {}), **({"tool_balance": True} if args.tool_balance else {}),
               **({"bf16_copy": True} if args.bf16_copy else {}))
    from train.judge_export import ExportArguments, export_judge

    judge_dir = out / "judge"
    stage(7, "exporting the judge to %s", judge_dir)
    export_judge(ExportArguments(checkpoint=str(run), out=str(judge_dir), overwrite=True))
    stage(8, "judging the held-out pairs after GRPO, with and without search")
    table["after GRPO"] = measured(judge_dir, indexes, examples, cache=judged, **judging)
    table["after GRPO, no search"] = measured(judge_dir, None, examples, cache=judged, **judging)
    lines = results_table(table)
    (out / "results.md").write_text("\n".join(lines) + "\n\n" + summary(table) + "\n", encoding="utf-8")
    (out / "results.json").write_text(json.dumps(table, indent=2) + "\n", encoding="utf-8")
    plot = plot_curves(run, out / "training_curves.png")
    logger.info("%d held-out toy pairs (documents no training pair asks about), greedy judging:\n%s\n%s\n"
                "curves: %s; judge: %s", len(examples), "\n".join(lines), summary(table), plot, judge_dir)
    return table


if __name__ == "__main__":
    from trl import TrlParser

    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s", datefmt="%H:%M:%S")
    (parsed_args,) = TrlParser(QuickstartArguments).parse_args_and_config()
    main(parsed_args)
