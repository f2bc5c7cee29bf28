"""The rubric record: a weighted list of assessment items (title, description, weight), read strictly from JSON.

    rubric = parse_rubric('[{"title": "Names Kalon", "description": "Says what Kalon is.", "weight": 3}]')
    rubric.weights            # normalised by the sum of the positive weights
    parse_rubric("not json")  # RubricError: rubric: not JSON (...)

`parse_rubric` raises `RubricError` and nothing else, whatever it is given; the error names the offending field
(`items[2].weight`). Accepted: one JSON array of item objects, optionally wrapped in a single markdown code fence,
with nothing else around it. Every item has exactly the keys title, description and weight. A weight is a finite
number other than 0: a positive one rewards what the item describes, a negative one makes the item a penalty (a
mistake the report should avoid, rated by how much the report commits it), as in the paper's generated rubrics;
at least one item must be positive. The number of items is not capped unless the caller asks (`max_items`).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

FIELDS = ("title", "description", "weight")
_FENCE = re.compile(r"\A```[A-Za-z]*[ \t]*\n?(.*?)\n?```\Z", re.DOTALL)


class RubricError(ValueError):
    """A rubric that cannot be used; `field` names where (`rubric`, `items[1].title`, ...)."""

    def __init__(self, field: str, message: str):
        super().__init__(f"{field}: {message}")
        self.field, self.message = field, message


@dataclass(frozen=True)
class RubricItem:
    title: str
    description: str
    weight: float  # as written, != 0 (< 0: a penalty item); `Rubric.weights` gives the normalised ones

    def text(self) -> str:
        return f"{self.title}: {self.description}"


@dataclass(frozen=True)
class Rubric:
    items: tuple[RubricItem, ...]

    def __post_init__(self) -> None:
        if not self.items:
            raise RubricError("items", "a rubric needs at least one item")
        for i, item in enumerate(self.items):
            _check_item_values(i, item.title, item.description, item.weight)
        if not any(item.weight > 0 for item in self.items):
            raise RubricError("items", "a rubric needs at least one item with a positive weight (all are penalties)")

    @property
    def weights(self) -> tuple[float, ...]:
        """The item weights divided by the sum of the positive ones: the positive weights sum to 1 and a penalty
        keeps its size relative to them, so a report that meets every positive item and commits no penalty scores
        1, and each penalty it commits takes off its share."""
        total = math.fsum(item.weight for item in self.items if item.weight > 0)
        return tuple(item.weight / total for item in self.items)

    @property
    def penalties(self) -> tuple[int, ...]:
        """Indexes of the penalty items (negative weight)."""
        return tuple(i for i, item in enumerate(self.items) if item.weight < 0)

    def to_json(self) -> str:
        return json.dumps([{"title": it.title, "description": it.description, "weight": it.weight}
                           for it in self.items], ensure_ascii=False)

    def render(self) -> str:
        """The rubric as numbered lines with normalised weights, for a judge's prompt."""
        return "\n".join(f"{n}. [{'penalty' if w < 0 else 'weight'} {abs(w):.2f}] {it.title}: {it.description}"
                         for n, (it, w) in enumerate(zip(self.items, self.weights, strict=True), start=1))

    @classmethod
    def of(cls, items: Sequence[tuple[str, str, float]]) -> Rubric:
        return cls(tuple(RubricItem(t, d, float(w)) for t, d, w in items))


def _check_item_values(i: int, title: Any, description: Any, weight: Any) -> None:
    for name, value in (("title", title), ("description", description)):
        if not isinstance(value, str):
            raise RubricError(f"items[{i}].{name}", f"must be a string, got {type(value).__name__}")
        if not value.strip():
            raise RubricError(f"items[{i}].{name}", "must not be empty")
    if isinstance(weight, bool) or not isinstance(weight, int | float):
        raise RubricError(f"items[{i}].weight", f"must be a number, got {type(weight).__name__}")
    try:
        finite = math.isfinite(weight)
    except OverflowError:  # an integer too large for a float
        finite = False
    if not finite or weight == 0:
        raise RubricError(f"items[{i}].weight", f"must be a finite number other than 0 (negative: a penalty), "
                                                f"got {str(weight)[:20]}")


def parse_rubric(text: Any, max_items: int | None = None) -> Rubric:
    """The rubric in `text` (a model's whole reply); `RubricError` naming the field when it is not one."""
    if not isinstance(text, str):
        raise RubricError("rubric", f"expected text, got {type(text).__name__}")
    body = text.strip()
    fenced = _FENCE.match(body)
    if fenced:
        body = fenced.group(1).strip()
    if not body:
        raise RubricError("rubric", "empty reply")
    try:
        data, end = json.JSONDecoder().raw_decode(body)
    except json.JSONDecodeError as exc:
        start = body.find("[")
        hint = " (text before the JSON)" if start > 0 and _decodes(body[start:]) else ""
        raise RubricError("rubric", f"not JSON{hint}: {exc.msg} at character {exc.pos}") from None
    except RecursionError:
        raise RubricError("rubric", "JSON nested too deeply") from None
    if body[end:].strip():
        raise RubricError("rubric", f"extra text after the JSON: {body[end:].strip()[:40]!r}")
    if not isinstance(data, list):
        raise RubricError("rubric", f"must be a JSON array of items, got a JSON {type(data).__name__}")
    if not data:
        raise RubricError("rubric", "the list of items is empty")
    if max_items is not None and len(data) > max_items:
        raise RubricError("rubric", f"{len(data)} items; at most {max_items} allowed")
    items = []
    for i, raw in enumerate(data):
        if not isinstance(raw, dict):
            raise RubricError(f"items[{i}]", f"must be an object, got {type(raw).__name__}")
        missing = [f for f in FIELDS if f not in raw]
        if missing:
            raise RubricError(f"items[{i}].{missing[0]}", "missing")
        extra = sorted(set(raw) - set(FIELDS))
        if extra:
            raise RubricError(f"items[{i}].{extra[0]}", f"unknown field (an item has only {', '.join(FIELDS)})")
        _check_item_values(i, raw["title"], raw["description"], raw["weight"])
        items.append(RubricItem(raw["title"].strip(), raw["description"].strip(), float(raw["weight"])))
    titles = [it.title.lower() for it in items]
    for i, title in enumerate(titles):
        if title in titles[:i]:
            raise RubricError(f"items[{i}].title", f"repeats items[{titles.index(title)}].title")
    if not any(it.weight > 0 for it in items):
        raise RubricError("rubric", "no item has a positive weight (a rubric of penalties only scores nothing)")
    return Rubric(tuple(items))


_THINKING = re.compile(r"\A\s*<think>.*?</think>", re.DOTALL)


def strip_thinking(text: str) -> str:
    """`text` without a leading `<think>...</think>` block (reasoning models write one before their answer)."""
    return _THINKING.sub("", text, count=1) if isinstance(text, str) else text


def _decodes(text: str) -> bool:
    try:
        json.JSONDecoder().raw_decode(text)
    except (json.JSONDecodeError, RecursionError):
        return False
    return True


def is_valid(text: Any) -> bool:
    try:
        parse_rubric(text)
    except RubricError:
        return False
    return True
