"""Match-judge protocols and adapters: a pairwise judge gives `p_x_wins` per `(question, x, y)` (None when it
failed), a group judge picks exactly k winners per group (an empty list when it failed).

    pairwise = JudgePairwise(Judge.from_pretrained("runs/judge", retrievers=...))   # both orders per item
    group = PairwiseGroupJudge(pairwise)   # Tournament-GRPO's group judge out of a pairwise one
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

import numpy as np

logger = logging.getLogger(__name__)


@runtime_checkable
class PairwiseJudge(Protocol):
    """`orders`: how many presentation orders one item runs inside the judge (1: as shown; 2: both, already
    debiased). `compare_many` answers every item in one batch: P(x beats y) in [0, 1], 0.5 for a tie,
    None for a failure (no verdict)."""

    orders: int

    def compare_many(self, items: Sequence[tuple[str, str, str]]) -> list[float | None]: ...


@dataclass(frozen=True)
class GroupRequest:
    question: str
    rubric: str | None
    candidates: tuple[str, ...]
    k: int


@runtime_checkable
class GroupJudge(Protocol):
    """`select_winners_many` answers every request in one batch: exactly `k` distinct indices into the
    request's candidates, or [] when the judge failed."""

    def select_winners_many(self, requests: Sequence[GroupRequest]) -> list[list[int]]: ...


def select_winners(judge: GroupJudge, question: str, rubric: str | None, candidates: Sequence[str],
                   k: int) -> list[int]:
    """One group: the indices of its `k` winners, [] on failure."""
    return judge.select_winners_many([GroupRequest(question, rubric, tuple(candidates), k)])[0]


class JudgePairwise:
    """`openrm.judge.Judge` (or anything with `compare_batch(pairs) -> [Verdict]`) as a pairwise match judge.
    The judge runs both orders itself, so `orders = 2`; a pair where neither order gave an answer is a failure,
    anything else is the verdict's `p_a` (0.5 when the orders contradict each other: a tie)."""

    orders = 2

    def __init__(self, judge: Any, progress: bool = False):
        self.judge, self.progress = judge, progress

    def compare_many(self, items: Sequence[tuple[str, str, str]]) -> list[float | None]:
        if not items:
            return []
        verdicts = self.judge.compare_batch(list(items), progress=self.progress)
        if len(verdicts) != len(items):
            raise RuntimeError(f"judge returned {len(verdicts)} verdicts for {len(items)} pairs")
        out: list[float | None] = []
        for v in verdicts:
            orders = getattr(v, "orders", None)
            failed = orders is not None and all(getattr(r, "answer", None) is None for r in orders)
            out.append(None if failed else float(v.p_a))
        failures = sum(p is None for p in out)
        if failures:
            logger.warning("pairwise judge: %d of %d pairs without a verdict in either order (scored 0.5)",
                           failures, len(out))
        return out


class PairwiseGroupJudge:
    """A group judge built on a pairwise one: every pair inside a group is judged (all groups in one batch);
    the k best by win rate win. When the k-th and (k+1)-th are level, the group has no clear winners and
    counts as a failure (nobody advances) rather than a coin flip."""

    def __init__(self, pairwise: PairwiseJudge):
        self.pairwise = pairwise

    def select_winners(self, question: str, rubric: str | None, candidates: Sequence[str], k: int) -> list[int]:
        return select_winners(self, question, rubric, candidates, k)

    def select_winners_many(self, requests: Sequence[GroupRequest]) -> list[list[int]]:
        items, owners = [], []
        for r_idx, req in enumerate(requests):
            n = len(req.candidates)
            for a in range(n):
                for b in range(a + 1, n):
                    items.append((req.question, req.candidates[a], req.candidates[b]))
                    owners.append((r_idx, a, b))
        answers = self.pairwise.compare_many(items) if items else []
        wins = [np.zeros(len(req.candidates)) for req in requests]
        for (r_idx, a, b), p in zip(owners, answers, strict=True):
            p = 0.5 if p is None else float(p)
            wins[r_idx][a] += p
            wins[r_idx][b] += 1 - p
        out = []
        for req, w in zip(requests, wins, strict=True):
            order = np.argsort(-w, kind="stable")
            k = req.k
            if not 1 <= k <= len(w) or (k < len(w) and np.isclose(w[order[k - 1]], w[order[k]])):
                logger.info("pairwise group judge: no clear top %d of %d (scores %s); no winners", k, len(w),
                            np.round(w, 3).tolist())
                out.append([])
            else:
                out.append(sorted(int(i) for i in order[:k]))
        return out
