"""Win rate of one policy over another under a match judge: each samples answers to the same prompts
(`sample_answers`), the judge compares them pair by pair (both orders when it is a one-order judge), and the win rate
of the first comes with a bootstrap interval (`head_to_head`). Win rate = mean P(policy's answer wins), a tie (or a
judge failure) counting half; 0.5 = no difference. `run` is what `python -m eval.head_to_head` does.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from openrm.judge_spec import JudgeSpec, judge_kinds
from openrm.tournament.judges import checked_p

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class HeadToHead:
    win_rate: float
    ci_low: float
    ci_high: float
    wins: int
    losses: int
    ties: int
    failures: int
    comparisons: int


def sample_answers(model_dir: str | Path, prompts: Sequence[Any], samples: int, temperature: float,
                   max_new_tokens: int, seed: int, batch_size: int = 64) -> list[list[str]]:
    """`samples` answers per prompt from the checkpoint at `model_dir` (CPU, transformers), decoded without special
    tokens. Seeded: the same call gives the same answers."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from openrm.generation import HFGenerator, SamplingParams
    from openrm.rollout import prompt_token_ids

    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32).eval()
    generator = HFGenerator(model, tokenizer, batch_size=batch_size)
    ids = [prompt_token_ids(tokenizer, p) for p in prompts for _ in range(samples)]
    torch.manual_seed(seed)
    gens = generator.generate(ids, SamplingParams(max_new_tokens=max_new_tokens, temperature=temperature))
    texts = [tokenizer.decode(g.token_ids, skip_special_tokens=True).strip() for g in gens]
    return [texts[i * samples:(i + 1) * samples] for i in range(len(prompts))]


def head_to_head(judge: Any, questions: Sequence[str], answers: Sequence[Sequence[str]],
                 baseline: Sequence[Sequence[str]], seed: int = 0, n_boot: int = 2000) -> HeadToHead:
    """Compare answers[i][s] with baseline[i][s] for every prompt i and sample s. A one-order judge sees both
    orders and the votes are averaged; a failure counts as a tie. The interval resamples prompts (95 %)."""
    items, owners = [], []
    for i, (q, mine, theirs) in enumerate(zip(questions, answers, baseline, strict=True)):
        for s, (x, y) in enumerate(zip(mine, theirs, strict=True)):
            items.append((q, x, y))
            owners.append((i, s, False))
            if judge.orders == 1:
                items.append((q, y, x))
                owners.append((i, s, True))
    raw = list(judge.compare_many(items)) if items else []
    if len(raw) != len(items):
        raise RuntimeError(f"judge answered {len(raw)} of {len(items)} comparisons")
    votes: dict[tuple[int, int], list[float | None]] = {}
    for (i, s, flipped), r in zip(owners, raw, strict=True):
        p = checked_p(r)
        votes.setdefault((i, s), []).append(None if p is None else (1 - p if flipped else p))
    per_prompt = np.zeros(len(questions))
    wins = losses = ties = failures = 0
    for (i, _), vs in votes.items():
        failures += all(v is None for v in vs)
        p = float(np.mean([0.5 if v is None else v for v in vs]))
        wins, losses, ties = wins + (p > 0.5), losses + (p < 0.5), ties + (p == 0.5)
        per_prompt[i] += p / len(answers[i])
    rng = np.random.default_rng(seed)
    boot = per_prompt[rng.integers(0, len(per_prompt), (n_boot, len(per_prompt)))].mean(axis=1)
    return HeadToHead(float(per_prompt.mean()), float(np.quantile(boot, 0.025)), float(np.quantile(boot, 0.975)),
                      wins, losses, ties, failures, len(votes))


@dataclass
class HeadToHeadArguments(JudgeSpec):
    policy: str = field(metadata={"help": "Checkpoint whose win rate is reported."})
    baseline: str = field(metadata={"help": "Checkpoint it plays against (e.g. its step-0 self)."})
    prompts: str = field(metadata={"help": "JSONL of prompt rows (prompt, question; meta for a plugin judge)."})
    out: str = field(default="", metadata={"help": "Folder for head_to_head.json and the sampled answers."})
    samples: int = field(default=4, metadata={"help": "Answers per prompt from each policy."})
    temperature: float = field(default=1.0, metadata={"help": "Sampling temperature of both policies (0 = greedy)."})
    max_new_tokens: int = field(default=32, metadata={"help": "Answer length cap."})
    seed: int = field(default=0, metadata={"help": "Sampling and bootstrap seed."})

    def __post_init__(self):
        super().__post_init__()
        if not self.judge or self.judge == "none":
            raise ValueError(f"--judge is required: an exported judge folder or one of {judge_kinds()[1:]}")


def run(args: HeadToHeadArguments) -> HeadToHead:
    """Sample both checkpoints on the prompts, judge the answers head to head, and write head_to_head.json and
    answers.jsonl under `args.out` (when given); the result."""
    rows = [json.loads(line) for line in Path(args.prompts).read_text(encoding="utf-8").splitlines() if line.strip()]
    if not rows:
        raise ValueError(f"{args.prompts}: no prompt rows")
    judge, close = args.open_match(rows)
    prompts = [r["prompt"] for r in rows]
    questions = [r.get("question") or r["prompt"] for r in rows]
    mine = sample_answers(args.policy, prompts, args.samples, args.temperature, args.max_new_tokens, args.seed)
    theirs = sample_answers(args.baseline, prompts, args.samples, args.temperature, args.max_new_tokens,
                            args.seed + 1)
    try:
        result = head_to_head(judge, questions, mine, theirs, seed=args.seed)
    finally:
        if close is not None:
            close()
    if args.out:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        (out / "head_to_head.json").write_text(json.dumps({"settings": asdict(args), **asdict(result)}, indent=2)
                                               + "\n", encoding="utf-8")
        with (out / "answers.jsonl").open("w", encoding="utf-8") as f:
            for row, a, b in zip(rows, mine, theirs, strict=True):
                f.write(json.dumps({"id": row.get("id"), "policy": a, "baseline": b}) + "\n")
    return result
