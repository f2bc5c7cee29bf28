"""Per-completion rewards that need no judge, for policy training beside a tournament: the binary format reward
(Tournament-GRPO Eq. 9 adds it to the min-max tournament reward) and an exact-answer verifier (Reasoning Arena's
R_v, whose zero-variance groups are the ones routed to the tournament).

    FormatReward(r"<answer>[^<>]*</answer>")            # a TRL reward function: 1.0 when the pattern matches
    AnswerMatch()(completion_text, gold_answer)         # 1.0 when the <answer> span equals the gold answer

Both are pure and never raise on a completion: an empty, non-string or tag-stuffed completion scores 0.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from typing import Any

from openrm.reward import completion_text

ANSWER_SPAN = re.compile(r"<answer>(.*?)</answer>", re.DOTALL)


class FormatReward:
    """1.0 when the whole completion (stripped) matches `pattern` (`re.fullmatch`, DOTALL), else 0.0."""

    def __init__(self, pattern: str, name: str = "format"):
        if not pattern:
            raise ValueError("a format reward needs a non-empty pattern")
        try:
            self.pattern = re.compile(pattern, re.DOTALL)
        except re.error as exc:
            raise ValueError(f"format pattern {pattern!r} is not a regular expression: {exc}") from exc
        self.__name__ = name

    def ok(self, text: str) -> bool:
        return self.pattern.fullmatch(text.strip()) is not None

    def __call__(self, prompts: Sequence[Any], completions: Sequence[Any], **kwargs: Any) -> list[float]:
        return [float(self.ok(completion_text(c))) for c in completions]


def normalize_answer(text: str) -> str:
    """Case, accents, punctuation and spacing do not count: 'The  Seltaost Sea.' == 'the seltaost sea'."""
    text = unicodedata.normalize("NFKD", text)
    text = "".join(ch for ch in text if not unicodedata.combining(ch)).lower()
    text = re.sub(r"[^\w\s]", " ", text)
    text = re.sub(r"\b(a|an|the)\b", " ", text)
    return " ".join(text.split())


class AnswerMatch:
    """The verifier: 1.0 when the last `<answer>` span of the completion equals the gold answer after
    `normalize_answer`, else 0.0 (no span, an empty gold, or a different answer)."""

    def __call__(self, text: str, gold: Any) -> float:
        spans = ANSWER_SPAN.findall(text or "")
        if not spans or not isinstance(gold, str) or not normalize_answer(gold):
            return 0.0
        return float(normalize_answer(spans[-1]) == normalize_answer(gold))
