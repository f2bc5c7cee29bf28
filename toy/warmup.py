"""The SFT warm-up of the quickstart and the learning proof: a pretrained model fine-tuned on compact gold judging
trajectories of the toy world, so that GRPO starts from a judge that writes the protocol.

    warm_up(world, "smollm2-135m-instruct", Path("runs/quickstart/judge-sft"), WarmupPlan(steps=40))

`random_tool` gives the trajectories a tool that carries no information: within each kind of fact (domain and
attribute) the two tools come equally often, in a seeded random order, so the judge learns the protocol and the copy
(name the subject in the query, write the value the evidence gives, then its letter) but not which corpus a question
needs, which is what GRPO's tool term is left to teach. The balance is exact per kind of fact: independent coins
leave each kind a few points off a half (about 30 records per kind), which the warm-up learns and which then decides
whether GRPO's small groups sample both tools. The folder is reused while its `stage.json` matches.
"""

from __future__ import annotations

import json
import logging
import random
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from openrm import protocol
from toy.stages import built, on_gpu
from toy.world import DOMAINS, HEDGE_WORDINGS, ToyWorld, hedge_every

logger = logging.getLogger("openrm.quickstart")
# Bumped whenever the records or the trainer settings change for the same plan, so an older warm-up is redone.
RECIPE = 2
SEARCH_BLOCK = 10  # `search_share` holds exactly per kind of fact over each run of this many of its records


@dataclass(frozen=True)
class WarmupPlan:
    steps: int = 40
    batch: int = 8
    learning_rate: float = 1e-4
    recombined_share: float = 0.5  # records whose fact is drawn afresh: only their own passage holds it
    random_tool: bool = False
    search_share: float = 1.0  # records that search; the rest answer at once (a guess, having no evidence)
    hedge_share: float = 0.0  # records whose wrong answer is a hedge naming both values (`ToyWorld.hedged`)
    hedge_wordings: str = "six"  # which of `toy.world.HEDGE_WORDINGS` the hedges are drawn from
    domains: tuple[str, ...] = DOMAINS
    seed: int = 0
    bf16: bool = False  # the forward under bf16 autocast (float32 weights and optimizer)

    def __post_init__(self) -> None:
        if self.steps < 1 or self.batch < 1 or self.learning_rate <= 0:
            raise ValueError("steps and batch must be >= 1 and learning_rate > 0")
        if not 0.0 <= self.recombined_share <= 1.0:
            raise ValueError(f"recombined_share must be in [0, 1], got {self.recombined_share}")
        if not 0.0 < self.search_share <= 1.0 or round(self.search_share * SEARCH_BLOCK) < 1:
            raise ValueError(f"search_share must be in [{1 / SEARCH_BLOCK:g}, 1], got {self.search_share}")
        if not self.domains or set(self.domains) - set(DOMAINS):
            raise ValueError(f"domains must be a non-empty subset of {DOMAINS}, got {list(self.domains)}")
        hedge_every(self.hedge_share)  # checks the range
        if self.hedge_wordings not in HEDGE_WORDINGS:
            raise ValueError(f"hedge_wordings must be one of {sorted(HEDGE_WORDINGS)}, got {self.hedge_wordings!r}")


def gold_records(world: ToyWorld, n: int, plan: WarmupPlan) -> list[dict]:
    """`n` SFT records (prompt, completion) of compact gold trajectories over short train pairs, a
    `plan.recombined_share` of them about freshly drawn facts (copying the evidence pays; memorising cannot), each
    drawn afresh. With `plan.random_tool` each kind of fact (domain, attribute) takes the two tools in turn, in
    shuffled pairs: as often one as the other, in no order the judge could learn. With `plan.search_share` < 1 each
    kind of fact searches in that share of its records (exactly, over every run of `SEARCH_BLOCK` of them, shuffled)
    and answers at once in the rest. A `plan.hedge_share` of the records, spread evenly, set the right answer
    against a hedge naming both values; their trajectories are the same (copy the evidence's value, then the
    letter of the answer that states only it)."""
    rng = random.Random(f"warmup:gold:{plan.seed}")
    coin = random.Random(f"warmup:tool:{plan.seed}")
    tools = sorted({protocol.GOLD_TOOL[d] for d in DOMAINS})
    searches = round(plan.search_share * SEARCH_BLOCK)
    # per kind of fact: the rest of its current shuffled run of tools, and of search decisions
    pending_tools: dict[tuple[str, str], list[str]] = {}
    pending_search: dict[tuple[str, str], list[bool]] = {}
    hedge = hedge_every(plan.hedge_share)
    records = []
    for i in range(n):
        style = "recombined" if rng.random() < plan.recombined_share else "short"
        ex = world.example(i, "train", plan.domains, style)
        if hedge(i):
            ex = world.hedged(ex, plan.seed, plan.hedge_wordings)
        kind = (ex["domain"], ex["meta"]["corrupted"][0]["attribute"])
        tool = None
        if plan.random_tool:
            if not pending_tools.get(kind):
                pending_tools[kind] = coin.sample(tools, len(tools))
            tool = pending_tools[kind].pop()
        search = True
        if searches < SEARCH_BLOCK:
            if not pending_search.get(kind):
                pending_search[kind] = coin.sample([True] * searches + [False] * (SEARCH_BLOCK - searches),
                                                   SEARCH_BLOCK)
            search = pending_search[kind].pop()
        records.append({"prompt": protocol.judge_messages(ex, style="compact"),
                        "completion": [{"role": "assistant",
                                        "content": world.compact_trajectory(ex, tool=tool, search=search)}]})
    return records


def run_sft(data: Path, base: str, out: Path, steps: int, batch: int, learning_rate: float, seed: int,
            max_length: int = 512, bf16: bool = False, in_file_order: bool = False,
            verdict_weight: float = 1.0, callbacks: Sequence = (), schedule: str = "cosine") -> None:
    """train/sft_warmup.py on the gold records in `data`: a tenth of the steps warming up, then `schedule` (a
    transformers `lr_scheduler_type`: cosine, or constant_with_warmup to hold the peak rate to the end),
    no checkpoints, on the GPU when one is visible; float32 weights, the forward under bf16 autocast with `bf16`.
    `in_file_order`: the records are taken in the file's order (each step's sorted by length), so records laid out
    side by side (a pair's two orders) share a step. `verdict_weight`: the verdict letters' weight in the loss.
    `callbacks`: more TrainerCallbacks (e.g. `train.verdict_probe.verdict_probe`)."""
    from train.warmup_trainer import configs, train_warmup

    train_warmup(*configs(
        dataset=data, lm_head="plain", model_name_or_path=base, output_dir=out, max_steps=steps,
        per_device_train_batch_size=batch, learning_rate=learning_rate, lr_scheduler_type=schedule,
        warmup_steps=max(steps // 10, 1), max_length=max_length, save_strategy="no", report_to="none",
        use_cpu=not on_gpu(), dtype="float32", bf16=bf16, gradient_checkpointing=False, seed=seed, disable_tqdm=True,
        logging_steps=max(steps // 10, 1), sort_within_steps=in_file_order, verdict_weight=verdict_weight),
        callbacks=callbacks)


def warm_up(world: ToyWorld, base: str, out: Path, plan: WarmupPlan, note: Sequence[str] = ()) -> Path:
    """train/sft_warmup.py on `plan.steps` x `plan.batch` fresh gold records from `base` (a folder or a packaged
    model's short name) into `out`, unless `out` already holds this run (its stage.json). `note`: words for the
    progress line."""
    from openrm.models import resolve

    base = resolve(base)
    want = {"base": base, "world_seed": world.seed, "recipe": RECIPE, **asdict(plan), "domains": list(plan.domains)}
    if not plan.hedge_share:
        del want["hedge_share"]  # warm-ups made before hedges existed stay valid
    if not plan.hedge_share or plan.hedge_wordings == "six":
        del want["hedge_wordings"]  # and those made before the wide wordings
    if not plan.bf16:
        del want["bf16"]  # and float32 ones made before the setting existed

    def build() -> None:
        out.mkdir(parents=True, exist_ok=True)
        data = out / "sft_records.jsonl"
        with data.open("w", encoding="utf-8") as f:
            for record in gold_records(world, plan.steps * plan.batch, plan):
                f.write(json.dumps(record) + "\n")
        run_sft(data, base, out, plan.steps, plan.batch, plan.learning_rate, plan.seed, bf16=plan.bf16)

    what = (f"the SFT warm-up{''.join(f' {w}' for w in note)}: {plan.steps} steps of {plan.batch} gold trajectories"
            + (", the two tools equally often per kind of fact" if plan.random_tool else "")
            + (f", {plan.search_share:.0%} of them searching" if plan.search_share < 1 else "")
            + (f", {plan.hedge_share:.0%} against a hedge ({plan.hedge_wordings} wordings)" if plan.hedge_share
               else ""))
    return built(out, want, build, what)
