"""Judge-example datasets (the record of DESIGN.md) read from an HF dataset folder or JSONL, validated, and turned
into GRPO prompts (chat messages) with the columns the reward reads (`label`, `gold_tool`).

    ds = load_judge_examples("runs/quickstart/data/dataset", split="train")
    ds = in_both_orders(ds, seed=0)   # optional: each pair as given and swapped, side by side (pair_id, order)
    train = to_prompts(ds, tools, max_tool_calls=3, tokenizer=tok, max_prompt_length=4096)
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from openrm import protocol

logger = logging.getLogger(__name__)

REQUIRED = ("id", "question", "answer_a", "answer_b", "label", "gold_tool")
LABELS = ("A", "B", "tie")


def check_example(row: Mapping[str, Any], where: str) -> None:
    """Raise ValueError naming `where` if `row` is not a judge example."""
    missing = [k for k in REQUIRED if k not in row]
    if missing:
        raise ValueError(f"{where}: judge example lacks {missing} (needs {list(REQUIRED)})")
    for key in ("question", "answer_a", "answer_b"):
        if not isinstance(row[key], str) or not row[key].strip():
            raise ValueError(f"{where}: {key} must be a non-empty string")
    if row["label"] not in LABELS:
        raise ValueError(f"{where}: label must be one of {LABELS}, got {row['label']!r}")
    if row["gold_tool"] is not None and not isinstance(row["gold_tool"], str):
        raise ValueError(f"{where}: gold_tool must be a tool name or null, got {row['gold_tool']!r}")


def load_judge_examples(path: str | Path, split: str = "train"):
    """An HF `datasets.Dataset` of judge examples (plumbing.rows.open_rows: a save_to_disk folder, JSONL, JSON or
    parquet), every row checked."""
    from plumbing.rows import open_rows

    ds = open_rows(path, split, what="judge examples")
    if len(ds) == 0:
        raise ValueError(f"{path}: the dataset is empty")
    for i, row in enumerate(ds):
        check_example(row, f"{path} row {i}")
    return ds


def to_prompts(ds, tools: Sequence[protocol.ToolSpec], max_tool_calls: int, tokenizer: Any = None,
               max_prompt_length: int | None = None, style: str = "full"):
    """Add a chat `prompt` column; drop (and count) examples whose rendered prompt exceeds `max_prompt_length`.

    Ties cannot be learned from an A/B reward, so tie-labelled rows are dropped too."""
    known = {t.name for t in tools}
    bad_tools = sorted({g for g in ds["gold_tool"] if g is not None and g not in known})
    if bad_tools:
        raise ValueError(f"dataset gold_tool values {bad_tools} are not among the configured tools {sorted(known)}")
    n = len(ds)
    ds = ds.filter(lambda row: row["label"] != "tie")
    ds = ds.map(lambda row: {"prompt": protocol.judge_messages(row, tools, max_tool_calls, style=style)})
    if tokenizer is not None and max_prompt_length:
        def fits(row):
            ids = tokenizer.apply_chat_template(row["prompt"], add_generation_prompt=True, tokenize=False)
            return len(tokenizer(ids, add_special_tokens=False)["input_ids"]) <= max_prompt_length

        ds = ds.filter(fits)
    if len(ds) < n:
        logger.warning("dropped %d of %d examples (tie labels or prompts over %s tokens)", n - len(ds), n,
                       max_prompt_length)
    if len(ds) == 0:
        raise ValueError("no trainable examples left after dropping ties and over-long prompts")
    return ds


def interleaved_by_domain(domains: Sequence[str], seed: int) -> list[int]:
    """An order of the rows (given by their `domain`s) that takes one row of each domain in turn, each domain's rows
    in a seeded random order, until every row is placed (a domain that runs out drops out of the turn).

    GRPO with a few prompts a step on a shuffled set sees runs of one domain; where each domain needs its own tool,
    such a run pushes one tool up for every question, and a small judge collapses onto it (SmolLM2 at 2 prompts a
    step did). Taken in this order without shuffling, every step holds the domains in equal measure."""
    import random

    rng = random.Random(seed)
    queues: dict[str, list[int]] = {}
    for i, domain in enumerate(domains):
        queues.setdefault(domain, []).append(i)
    for rows in queues.values():
        rng.shuffle(rows)
    turn = sorted(queues)
    order: list[int] = []
    while turn:
        for domain in list(turn):
            order.append(queues[domain].pop())
            if not queues[domain]:
                turn.remove(domain)
    return order


ORDERS = ("AB", "BA")  # the pair as given; its answers swapped (and its label flipped)


def swapped(row: Mapping[str, Any]) -> dict[str, Any]:
    """`row` with its answers swapped and its label flipped (a tie stays a tie)."""
    flip = {"A": "B", "B": "A", "tie": "tie"}
    return {**row, "answer_a": row["answer_b"], "answer_b": row["answer_a"], "label": flip[row["label"]]}


def in_both_orders_rows(rows: Sequence[Mapping[str, Any]], seed: int) -> list[dict[str, Any]]:
    """Each row twice, as given (order "AB") and swapped ("BA"), the two side by side with the same `pair_id` (the
    row's id; the swapped row's id gets ":BA"), the pairs in a seeded random order."""
    import random

    index = list(range(len(rows)))
    random.Random(f"both-orders:{seed}").shuffle(index)
    out = []
    for i in index:
        row = rows[i]
        if "pair_id" in row or "order" in row:
            raise ValueError("the rows already have pair_id / order: they are in both orders already")
        out.append({**row, "pair_id": str(row["id"]), "order": ORDERS[0]})
        out.append({**swapped(row), "id": f"{row['id']}:BA", "pair_id": str(row["id"]), "order": ORDERS[1]})
    return out


def in_both_orders(ds, seed: int):
    """`in_both_orders_rows` of an HF dataset, as a dataset. Taken in this order without shuffling, each step sees
    a pair in both orders, so a verdict that follows the position and not the answers earns nothing
    (`openrm.reward.both_orders_gate`)."""
    from datasets import Dataset

    return Dataset.from_list(in_both_orders_rows([ds[i] for i in range(len(ds))], seed))


def question_of(prompt: Any) -> str:
    """The question text of a TRL prompt: a string, or the last user message of a chat."""
    if isinstance(prompt, str):
        return prompt
    users = [m.get("content") or "" for m in prompt if isinstance(m, Mapping) and m.get("role") == "user"]
    return str(users[-1]) if users else json.dumps(prompt, sort_keys=True, default=str)
