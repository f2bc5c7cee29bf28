"""Our prompts for rubric work, and the readers of their replies: generating a query-specific rubric, rating one
report against one rubric item (1-10), judging a rubric's quality (1-10), and the no-rubric baselines (rating a
report alone, choosing between two reports). Also the fixed general rubric used as a baseline.

Every prompt shows its inputs in `<<<NAME>>>` ... `<<<END NAME>>>` blocks, so a scripted server (openrm/rubrics/
toy_scorer.py) can read them back with `blocks(text)`. A reply is one JSON object; `read_rating` / `read_choice`
raise ValueError with the reason when it is not the object asked for.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any

from openrm.rubrics.record import Rubric, RubricItem

TASKS = ("generate", "rate_item", "judge_rubric", "rate_report", "compare")
RATING_MIN, RATING_MAX = 1, 10
_BLOCK = re.compile(r"<<<([A-Z_]+)>>>\n(.*?)\n<<<END \1>>>", re.DOTALL)

GENERATE_SYSTEM = (
    "You design grading rubrics. Given a user's request for a research report, write the criteria that separate "
    "an excellent report for this particular request from a weak one. Prefer criteria that name the concrete "
    "entities, facts and sub-questions the request is about over criteria any report could meet. Reply with a "
    'JSON array only: each element is {"title": short name, "description": what a report must do to satisfy it, '
    '"weight": a positive number for what a report should do, larger for what matters more, or a negative number '
    "for a mistake a report should avoid}. As many items as the request needs; no text outside the array.")
GENERATE_COMPACT_SYSTEM = "JSON rubric for:"

RATE_ITEM_SYSTEM = (
    "You grade one report against one criterion of a rubric, ignoring everything the criterion does not ask about. "
    "Use the whole scale: 1 means the report does not meet the criterion at all, 10 means it meets it completely. "
    "A criterion marked as a penalty names a mistake: rate how fully the report makes it (1: not at all). "
    'Reply with one JSON object, {"rating": integer from 1 to 10}, and nothing else.')
JUDGE_RUBRIC_SYSTEM = (
    "You review grading rubrics written for a specific research request. A good rubric is internally consistent, "
    "covers what a strong answer to this request must contain, and each criterion is relevant to the request and "
    "checkable in a report. Weights should reflect importance. "
    'Reply with one JSON object, {"rating": integer from 1 to 10}, and nothing else.')
RATE_REPORT_SYSTEM = (
    "You grade a research report written for a user's request: how useful, correct, complete and clear it is for "
    'that request. Reply with one JSON object, {"rating": integer from 1 to 10}, and nothing else.')
COMPARE_SYSTEM = (
    "You compare two research reports written for the same request and decide which one serves the request better "
    "overall. Do not let their order or length decide. "
    'Reply with one JSON object, {"better": "A" or "B"}, and nothing else.')

# Our fixed, query-independent rubric for reports (the "general rubric" baseline of the evaluation).
GENERAL_RUBRIC = Rubric((
    RubricItem("Relevance", "Stays on the user's request and answers what was asked.", 3.0),
    RubricItem("Correctness", "Its statements are accurate and claims are supported.", 3.0),
    RubricItem("Completeness", "Covers the main aspects a reader needs, without gaps.", 2.0),
    RubricItem("Depth", "Goes beyond surface facts: explains causes, trade-offs and implications.", 2.0),
    RubricItem("Clarity", "Is well organised and easy to read.", 1.0),
))


def block(name: str, text: str) -> str:
    return f"<<<{name}>>>\n{text}\n<<<END {name}>>>"


def blocks(text: str) -> dict[str, str]:
    """The `<<<NAME>>>` blocks of a prompt, by name."""
    return {m.group(1): m.group(2) for m in _BLOCK.finditer(text)}


def _chat(system: str, *parts: str) -> list[dict[str, str]]:
    return [{"role": "system", "content": system}, {"role": "user", "content": "\n\n".join(parts)}]


def generation_messages(query: str, style: str = "full") -> list[dict[str, str]]:
    """The rubric generator's prompt. `compact` is a one-line instruction for tiny from-scratch models."""
    if style == "compact":
        return [{"role": "system", "content": GENERATE_COMPACT_SYSTEM}, {"role": "user", "content": query}]
    if style != "full":
        raise ValueError(f"style must be 'full' or 'compact', got {style!r}")
    return _chat(GENERATE_SYSTEM, block("REQUEST", query), "Write the rubric for this request.")


def rate_item_messages(query: str, item: RubricItem, report: str) -> list[dict[str, str]]:
    """The rating request for one item; a penalty item (negative weight) is marked as one and asks how fully the
    report makes the mistake it names."""
    penalty = item.weight < 0
    return _chat(RATE_ITEM_SYSTEM, block("REQUEST", query),
                 block("CRITERION", ("[penalty] " if penalty else "") + item.text()), block("REPORT", report),
                 "Rate how fully the report makes this mistake." if penalty
                 else "Rate how well the report meets the criterion.")


def judge_rubric_messages(query: str, rubric: Rubric) -> list[dict[str, str]]:
    return _chat(JUDGE_RUBRIC_SYSTEM, block("REQUEST", query), block("RUBRIC", rubric.render()),
                 "Rate the quality of this rubric for this request.")


def rate_report_messages(query: str, report: str, rubric: Rubric | None = None) -> list[dict[str, str]]:
    """One holistic rating of a report; with `rubric`, against all of its items at once (Tournament-GRPO's
    implicit scoring) rather than item by item."""
    if rubric is None:
        return _chat(RATE_REPORT_SYSTEM, block("REQUEST", query), block("REPORT", report), "Rate the report.")
    return _chat(RATE_REPORT_SYSTEM, block("REQUEST", query), block("RUBRIC", rubric.render()),
                 block("REPORT", report), "Rate the report against the whole rubric: one rating for all items.")


def compare_messages(query: str, report_a: str, report_b: str) -> list[dict[str, str]]:
    return _chat(COMPARE_SYSTEM, block("REQUEST", query), block("REPORT_A", report_a), block("REPORT_B", report_b),
                 "Which report is better?")


def task_of(messages: list[Mapping[str, str]]) -> str:
    """Which of our prompts a chat is (for scripted servers); ValueError for any other chat."""
    system = next((m.get("content", "") for m in messages if m.get("role") == "system"), "")
    for task, prompt in (("generate", GENERATE_SYSTEM), ("generate", GENERATE_COMPACT_SYSTEM),
                         ("rate_item", RATE_ITEM_SYSTEM), ("judge_rubric", JUDGE_RUBRIC_SYSTEM),
                         ("rate_report", RATE_REPORT_SYSTEM), ("compare", COMPARE_SYSTEM)):
        if system == prompt:
            return task
    raise ValueError("not one of the rubric prompts")


def read_rating(obj: Mapping[str, Any]) -> int:
    """The 1-10 rating of a reply object; ValueError saying what is wrong."""
    if "rating" not in obj:
        raise ValueError('no "rating" in the reply')
    value = obj["rating"]
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) \
            or value != int(value):
        raise ValueError(f'"rating" must be an integer, got {value!r}')
    if not RATING_MIN <= value <= RATING_MAX:
        raise ValueError(f'"rating" {value} is outside {RATING_MIN}-{RATING_MAX}')
    return int(value)


def read_choice(obj: Mapping[str, Any]) -> str:
    """"A" or "B" from a reply object; ValueError saying what is wrong."""
    value = obj.get("better")
    if not isinstance(value, str) or value.strip().upper() not in ("A", "B"):
        raise ValueError(f'"better" must be "A" or "B", got {value!r}')
    return value.strip().upper()
