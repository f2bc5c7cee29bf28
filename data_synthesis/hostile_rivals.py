"""Training pairs that teach a judge not to pay a candidate for gaming it: a share of a dataset's pairs keep their right
answer and question, and their wrong answer is replaced by a hedge (the right and the wrong answer side by side behind
a connective, in either order) or by an evasion (a refusal, a deflection, the question turned back), in many
wordings, none of them the audit's (`eval.hostile`), so the audit measures shapes the judge trained on in words it
did not.

    rewrite = HostileRivals(share=0.25, seed=0)
    row = rewrite(row)   # the same row, its wrong answer replaced in about a quarter of the pairs

The choice is made per pair (`pair_id`, else `id`), so a pair's two orders get the same rival.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

# a hedge: the right answer and the wrong one, joined by one of these (the audit's "Some sources say otherwise:" is
# not among them; a test checks it)
CONNECTIVES = ("Others report:", "Another account:", "Alternatively:", "Some accounts differ:",
               "By another account,", "A different version:", "Then again,", "Elsewhere one reads:",
               "Reports vary; one has it that", "Or perhaps:", "Though it is also said:", "Accounts disagree:")
# an evasion: no answer at all (the audit's "I do not know." and the bare question are not among them)
EVASIONS = ("I cannot say for certain.", "That is hard to answer.", "There is not enough information to answer this.",
            "I am unable to help with that.", "It depends on many factors.", "This is a matter of debate.",
            "Nobody knows for sure.", "I would rather not guess.", "Please consult a reliable source.",
            "No answer can be given here.", "Good question; it is complicated.", "The answer is unclear.",
            "I'm not able to answer that.", "Hard to say without more context.")
QUESTION_BACK = ("You ask: {q} That is hard to say.", "The question was: {q}", "To answer \"{q}\", one would need to "
                 "look it up.", "{q} Many have asked this.")
KINDS = ("hedge", "evasion")


def hedge(right: str, wrong: str, rng: random.Random) -> str:
    """The right and the wrong answer behind a connective, in either order."""
    first, second = (right, wrong) if rng.random() < 0.5 else (wrong, right)
    return f"{first.strip()} {rng.choice(CONNECTIVES)} {second.strip()}"


def evasion(question: str, rng: random.Random) -> str:
    """A refusal or deflection, or (one time in four) the question turned back."""
    if rng.random() < 0.25:
        return rng.choice(QUESTION_BACK).format(q=question.strip())
    return rng.choice(EVASIONS)


@dataclass
class HostileRivals:
    """Replaces the wrong answer of about `share` of the pairs (kinds in turn by a per-pair coin) and counts what it
    did in `made` (kind -> rows)."""

    share: float
    seed: int = 0
    made: Counter = field(default_factory=Counter)

    def __post_init__(self) -> None:
        if not 0.0 <= self.share <= 1.0:
            raise ValueError(f"share must be in [0, 1], got {self.share}")

    def __call__(self, row: Mapping[str, Any]) -> dict[str, Any]:
        row = dict(row)
        if row.get("label") not in ("A", "B") or not self.share:
            return row
        rng = random.Random(f"hostile-rivals:{self.seed}:{row.get('pair_id', row.get('id'))}")
        if rng.random() >= self.share:
            return row
        kind = rng.choice(KINDS)
        right_key, wrong_key = ("answer_a", "answer_b") if row["label"] == "A" else ("answer_b", "answer_a")
        row[wrong_key] = (hedge(row[right_key], row[wrong_key], rng) if kind == "hedge"
                          else evasion(row["question"], rng))
        row["rival"] = kind
        self.made[kind] += 1
        return row
