"""Typed records of a tournament: what a topology asks for (`PairRound`, `GroupRound`), what it returns (`Standing`),
and what the arena logs (`Match`, `GroupMatch`, `TournamentResult`).

Indices are positions in the group's candidate list. A soft outcome `p` is the first candidate's share of a match:
1 win, 0 loss, 0.5 tie or judge failure (the `status` says which; a failure never becomes a random winner).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

import numpy as np
from scipy.stats import rankdata

Status = Literal["decisive", "tie", "failure"]


@dataclass(frozen=True)
class PairRound:
    """All pairwise matches of one round; the topology receives one soft outcome `p_i` per pair, in order."""

    pairs: tuple[tuple[int, int], ...]
    phase: str


@dataclass(frozen=True)
class GroupRound:
    """Disjoint groups judged at once; the topology receives the winners (candidate indices) of each group,
    an empty tuple where the judge failed. The arena caches a verdict per (group, members in order, k, `cache_tag`):
    a topology that must ask the judge again about a group it showed before gives the request a new tag."""

    groups: tuple[tuple[int, ...], ...]
    k: int
    phase: str
    cache_tag: int = 0


@dataclass(frozen=True)
class Standing:
    """A topology's final word: `scores[i]` (higher is better) and an optional `tiebreak[i]` that orders equal
    scores (e.g. survival depth first, then accumulated score)."""

    scores: np.ndarray  # [K]
    tiebreak: np.ndarray | None = None  # [K]


@dataclass(frozen=True)
class Match:
    round: int  # the topology's round counter (0-based), across phases
    phase: str
    i: int
    j: int
    p_i: float  # i's soft outcome
    status: Status
    cached: bool  # answered from the cache (no judge call)
    # each presentation the judge answered for this match: (shown first, shown second, P(first wins) or None for a
    # failure); a two-order judge's one item already holds both of its orders
    views: tuple[tuple[int, int, float | None], ...] = ()


@dataclass(frozen=True)
class GroupMatch:
    round: int
    phase: str
    members: tuple[int, ...]  # in the order shown to the judge
    k: int
    winners: tuple[int, ...]  # empty: the judge failed (logged; nobody advances)
    cached: bool

    @property
    def status(self) -> Status:
        return "decisive" if self.winners else "failure"


@dataclass
class TournamentResult:
    topology: str
    k: int
    step: int
    group_id: int
    scores: np.ndarray  # [K], higher is better
    ranks: np.ndarray  # [K], 0 = best; equal standings share their mean rank
    matches: list[Match] = field(default_factory=list)
    group_matches: list[GroupMatch] = field(default_factory=list)
    judge_calls: int = 0  # pairwise items sent to the judge (cache misses)
    inferences: int = 0  # judge_calls x orders each item runs inside the judge
    group_calls: int = 0  # group-judge requests sent

    @property
    def ranking(self) -> list[int]:
        """Candidate indices best first (equal ranks keep index order)."""
        return [int(i) for i in np.argsort(self.ranks, kind="stable")]

    def pairwise(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Every pairwise outcome as arrays (i, j, p_i): the matches, plus what each group match implies (each
        winner beat each non-winner; a failed group ties all its pairs, as a failed match does)."""
        i = [m.i for m in self.matches]
        j = [m.j for m in self.matches]
        p = [m.p_i for m in self.matches]
        for g in self.group_matches:
            if g.winners:
                losers = [c for c in g.members if c not in g.winners]
                pairs = [(w, c, 1.0) for w in g.winners for c in losers]
            else:
                pairs = [(a, b, 0.5) for n, a in enumerate(g.members) for b in g.members[n + 1:]]
            for a, b, o in pairs:
                i.append(a)
                j.append(b)
                p.append(o)
        return np.array(i, dtype=np.int64), np.array(j, dtype=np.int64), np.array(p, dtype=float)

    @property
    def ties(self) -> int:
        return sum(m.status == "tie" for m in self.matches)

    @property
    def failures(self) -> int:
        return sum(m.status == "failure" for m in self.matches) + sum(not g.winners for g in self.group_matches)


def composite(scores: np.ndarray, tiebreak: np.ndarray | None) -> np.ndarray:
    """One scalar per candidate that orders exactly as (scores, tiebreak) lexicographically: the tiebreak,
    squeezed into [0, 1), is scaled below half the smallest gap between distinct scores."""
    scores = np.asarray(scores, dtype=float)
    if tiebreak is None or len(scores) < 2:
        return scores
    tb = np.asarray(tiebreak, dtype=float)
    span = tb.max() - tb.min()
    if span <= 0:
        return scores
    gaps = np.diff(np.unique(scores))
    delta = 0.5 * gaps.min() if len(gaps) else 1.0
    return scores + delta * 0.999 * (tb - tb.min()) / span


def ranks_from(scores: np.ndarray, tiebreak: np.ndarray | None = None) -> np.ndarray:
    """0-based ranks (0 = best) by `scores`, then `tiebreak`, both descending; exact ties share the mean rank."""
    scores = np.asarray(scores, dtype=float)
    if tiebreak is None:
        return rankdata(-scores, method="average") - 1
    tiebreak = np.asarray(tiebreak, dtype=float)
    # dense rank of the (score, tiebreak) pairs, then average ranks over equal pairs
    keys = np.stack([-scores, -tiebreak], axis=1)
    _, dense = np.unique(keys, axis=0, return_inverse=True)
    return rankdata(dense.ravel(), method="average") - 1
