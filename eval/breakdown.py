"""Both-order accuracy of a judge's verdicts broken down by any key of the examples (pair kind, answer length),
the same-letter rate: the share of pairs whose two orders got the same letter, i.e. a verdict that followed the
position, not the answers; and the examples of some kinds and lengths (`selected`).

    verdicts = {v["id"]: v for v in map(json.loads, open("runs/eval/x/verdicts.jsonl"))}
    both_order_accuracy(examples, verdicts, key=lambda e: e["meta"]["source"])
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any


def kind_of(example: Mapping[str, Any]) -> str:
    """A judge pair's kind (`numbers`, `swap`, ...): the last part of its `meta.source`."""
    return example["meta"]["source"].split("/")[-1]


def length_of(example: Mapping[str, Any]) -> str:
    """A judge pair's answer length (`sentence`, `short`, `lead`): its `length` fact, "-" without one."""
    return next((f["value"] for f in example["meta"].get("facts") or [] if f["attribute"] == "length"), "-")


def selected(examples: Sequence[Mapping[str, Any]], kinds: Sequence[str], lengths: Sequence[str],
             but: str = "") -> list[Mapping[str, Any]]:
    """The examples whose kind is one of `kinds` and whose length is one of `lengths` (an empty list: any), the kind
    `but` left out."""
    return [e for e in examples if kind_of(e) != but and (not kinds or kind_of(e) in kinds)
            and (not lengths or length_of(e) in lengths)]


def right(example: Mapping[str, Any], verdict: Mapping[str, Any] | None) -> bool:
    """Both orders picked the labelled answer (the verdict's `prediction`; the orders disagreeing is a tie)."""
    return verdict is not None and verdict.get("prediction") == example["label"]


def both_order_accuracy(examples: Sequence[Mapping[str, Any]], verdicts: Mapping[str, Mapping[str, Any]],
                        key: Callable[[Mapping[str, Any]], str]) -> dict[str, dict[str, float]]:
    """Per value of `key`: the pairs and the share right in both orders, values in sorted order."""
    groups: dict[str, list[bool]] = {}
    for e in examples:
        groups.setdefault(key(e), []).append(right(e, verdicts.get(e["id"])))
    return {k: {"n": len(v), "accuracy": sum(v) / len(v)} for k, v in sorted(groups.items())}


def same_letter_rate(examples: Sequence[Mapping[str, Any]], verdicts: Mapping[str, Mapping[str, Any]]) -> float:
    """The share of pairs whose two orders both answered and named the same position (A twice or B twice). The
    orders' answers are stored mapped back to the pair as given, so the same position is two different answers."""
    same = 0
    for e in examples:
        orders = (verdicts.get(e["id"]) or {}).get("orders") or []
        answers = [o.get("answer") for o in orders]
        same += len(answers) == 2 and None not in answers and answers[0] != answers[1] and "tie" not in answers
    return same / len(examples) if examples else 0.0
