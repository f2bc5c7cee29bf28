"""Match-judge protocols and adapters: a pairwise judge gives `p_x_wins` per `(question, x, y)` (None when it
failed), a group judge picks exactly k winners per group (an empty list when it failed).

    pairwise = JudgePairwise(Judge.from_pretrained("runs/judge", retrievers=...))   # both orders per item
    group = PairwiseGroupJudge(pairwise)   # Tournament-GRPO's group judge out of a pairwise one

Whatever a judge answers, `checked_p` turns it into P(x wins) or a failure: a bad answer never raises out of a
tournament and never picks a winner.
"""

from __future__ import annotations

import logging
import numbers
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


def checked_p(answer: object) -> float | None:
    """A pairwise judge's answer as P(x wins) in [0, 1], or None (a failure) for anything else: None, NaN of any
    float type (numpy's included), values outside [0, 1], infinities, strings, bools."""
    if isinstance(answer, bool | np.bool_) or not isinstance(answer, numbers.Real):
        return None
    p = float(answer)
    return p if 0.0 <= p <= 1.0 else None  # NaN fails both comparisons


def log_invalid(raw: Sequence[object], checked: Sequence[float | None], where: str) -> None:
    """Warn once per batch about answers that were neither None nor a valid P (they are scored as failures)."""
    bad = [r for r, c in zip(raw, checked, strict=True) if c is None and r is not None]
    if bad:
        logger.warning("%s: %d of %d answers are not P(x wins) in [0, 1] (first: %r); scored as failures (0.5)",
                       where, len(bad), len(raw), bad[0])


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

    `orders=2` (default): the judge runs both orders itself; a pair where neither order gave an answer is a
    failure, anything else is the verdict's `p_a` (0.5 when the orders contradict each other: a tie).
    `orders=1`: one rollout per item, in the order shown (`judge_one_order`), as Reasoning Arena budgets; the
    arena then draws the order (`orders: random`) or plays both as two items (`orders: both`). No answer is a
    failure, else 1 or 0 (0.5 for a tie verdict, from a judge run with `allow_tie`)."""

    def __init__(self, judge: Any, progress: bool = False, orders: int = 2):
        if orders not in (1, 2):
            raise ValueError(f"orders must be 1 or 2, got {orders!r}")
        self.judge, self.progress, self.orders = judge, progress, orders

    def compare_many(self, items: Sequence[tuple[str, str, str]]) -> list[float | None]:
        if not items:
            return []
        if self.orders == 1:
            runs = self.judge.judge_one_order(list(items), progress=self.progress)
            if len(runs) != len(items):
                raise RuntimeError(f"judge returned {len(runs)} runs for {len(items)} items")
            out = [None if r.answer is None else r.vote_a for r in runs]  # a tie verdict (allow_tie): 0.5
            failures = sum(p is None for p in out)
            if failures:
                logger.warning("pairwise judge: %d of %d items without a verdict (scored 0.5)", failures, len(out))
            return out
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


class GroupPairwise:
    """A group judge (e.g. `RubricGroupJudge`) as a pairwise match judge that reads the group's rubric: each match
    is a group of two with one winner, shown in the order the arena gives (`orders = 1`; the arena draws or doubles
    it). Tournament-GRPO's rubric-guided pairwise baseline: round robin with this judge and shaping win_rate. A
    group the judge fails on is a failure (0.5)."""

    orders = 1
    reads_rubric = True

    def __init__(self, group: GroupJudge):
        self.group = group

    def compare_many(self, items: Sequence[tuple[str, str, str]],
                     rubrics: Sequence[str | None] | None = None) -> list[float | None]:
        rubrics = [None] * len(items) if rubrics is None else list(rubrics)
        if len(rubrics) != len(items):
            raise ValueError(f"{len(rubrics)} rubrics for {len(items)} items")
        winners = self.group.select_winners_many([GroupRequest(q, r, (x, y), 1)
                                                  for (q, x, y), r in zip(items, rubrics, strict=True)])
        return [None if w not in ([0], [1]) else float(w == [0]) for w in winners]


class PairwiseGroupJudge:
    """A group judge built on a pairwise one: every pair inside a group is judged (all groups in one batch);
    the k best by win rate win. When the k-th and (k+1)-th are level, the group has no clear winners and
    counts as a failure (nobody advances) rather than a coin flip.

    A one-order judge (`orders == 1`) sees every pair in both presentation orders and the two votes are averaged
    (ArenaRL's bidirectional protocol), so a judge that only prefers a position gives level scores and no winners;
    a two-order judge debiases itself and sees each pair once. An invalid answer is a 0.5 vote."""

    def __init__(self, pairwise: PairwiseJudge):
        if getattr(pairwise, "orders", None) not in (1, 2):
            raise ValueError(f"a pairwise judge must say how many orders an item runs (1 or 2), got "
                             f"{getattr(pairwise, 'orders', None)!r}")
        self.pairwise = pairwise

    def select_winners(self, question: str, rubric: str | None, candidates: Sequence[str], k: int) -> list[int]:
        return select_winners(self, question, rubric, candidates, k)

    def select_winners_many(self, requests: Sequence[GroupRequest]) -> list[list[int]]:
        both = self.pairwise.orders == 1
        items, owners = [], []  # owner: (request, a, b, flipped: the item shows b first)
        for r_idx, req in enumerate(requests):
            n = len(req.candidates)
            for a in range(n):
                for b in range(a + 1, n):
                    items.append((req.question, req.candidates[a], req.candidates[b]))
                    owners.append((r_idx, a, b, False))
                    if both:
                        items.append((req.question, req.candidates[b], req.candidates[a]))
                        owners.append((r_idx, a, b, True))
        raw = list(self.pairwise.compare_many(items)) if items else []
        if len(raw) != len(items):
            raise RuntimeError(f"pairwise judge answered {len(raw)} of {len(items)} items")
        answers = [checked_p(p) for p in raw]
        log_invalid(raw, answers, "pairwise group judge")
        weight = 0.5 if both else 1.0
        wins = [np.zeros(len(req.candidates)) for req in requests]
        for (r_idx, a, b, flipped), p in zip(owners, answers, strict=True):
            vote = 0.5 if p is None else (1 - p if flipped else p)  # a's share
            wins[r_idx][a] += weight * vote
            wins[r_idx][b] += weight * (1 - vote)
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
