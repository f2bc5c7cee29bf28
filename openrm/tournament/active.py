"""Active pairing: a fixed judge-call budget spent where the current Bradley-Terry fit is least sure. Each round
refits Bradley-Terry (Laplace: MAP and covariance) on the matches so far and plays up to K//2 disjoint pairs at once
(so the Arena still sends every group's round as one judge batch); scores are the final fit's log-strengths, the
win rate breaking exact ties (as `Live`).

    Arena(pairwise=JudgePairwise(judge)).run_many(Active(budget=14), groups)           # K = 8: half of round robin
    Arena(pairwise=one_order_judge, orders="given").run_many(Active(budget=28, one_order=True), groups)

Rules: "information" (default) greedily takes the pair with the largest expected information gain
log(1 + p(1-p) Var[beta_a - beta_b]), updating the covariance after each pick as if it were played (Sherman-Morrison),
so one round's pairs are not redundant; "closeness" is a simpler baseline, p(1-p) / (1 + n_pair). Round one is a
random perfect matching under either rule (every pair looks alike under the prior).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal, get_args

import numpy as np
from scipy.special import expit

from openrm.tournament.bradley_terry import BTPosterior, bt_laplace
from openrm.tournament.records import PairRound, Standing
from openrm.tournament.round_robin import win_rates

Rule = Literal["information", "closeness"]


@dataclass(frozen=True)
class Active:
    # matches per group per order, the unit of every topology's `matches(k)`; None: `share` of round robin's
    budget: int | None = None
    # used when budget is None, so one setting fits every K (eval.best_of_n builds Active()); up to 2 with one_order
    share: float = 0.5
    rule: Rule = "information"
    # one presentation per match in the order listed: use with Arena(orders="given") and a one-order judge. The fit
    # then models the first position's logit bonus, firsts are balanced, and a pair may meet twice (once each way),
    # so the budget goes up to K(K-1); otherwise a pair meets at most once (K(K-1)/2).
    one_order: bool = False
    prior: float = 1.0  # precision of the N(0, 1/prior) prior on log-strengths (and on the position bonus)
    name: str = "active"

    def __post_init__(self):
        if self.budget is not None and (isinstance(self.budget, bool) or not isinstance(self.budget, int)
                                        or self.budget < 1):
            raise ValueError(f"budget must be a positive int (matches per group per order), got {self.budget!r}")
        if not self.share > 0:
            raise ValueError(f"share must be > 0, got {self.share}")
        if self.rule not in get_args(Rule):
            raise ValueError(f"rule must be one of {get_args(Rule)}, got {self.rule!r}")
        if self.prior <= 0:
            raise ValueError(f"prior must be > 0, got {self.prior}")

    def matches(self, k: int) -> int:
        pairs = k * (k - 1) // 2
        wanted = self.budget if self.budget is not None else math.ceil(self.share * pairs)
        return min(wanted, pairs * (2 if self.one_order else 1))

    def play(self, k: int, rng: np.random.Generator):
        total = self.matches(k)
        first: list[int] = []
        second: list[int] = []
        outcome: list[float] = []
        shown = np.zeros((k, k), dtype=np.int64)  # [K, K] matches played with row shown first
        rnd = 0
        while len(outcome) < total:
            post = bt_laplace(k, first, second, outcome, self.prior, position_bias=self.one_order)
            pairs = self._pick(post, shown, min(k // 2, total - len(outcome)), rng)
            ps = yield PairRound(pairs, f"round{rnd}")
            for (i, j), p in zip(pairs, ps, strict=True):
                first.append(i)
                second.append(j)
                outcome.append(float(p))
                shown[i, j] += 1
            rnd += 1
        post = bt_laplace(k, first, second, outcome, self.prior, position_bias=self.one_order)
        # rounded so that the solver's floating-point noise never ranks candidates with equal records apart
        return Standing(np.round(post.beta, 9), win_rates(k, list(zip(first, second, strict=True)), outcome))

    def _pick(self, post: BTPosterior, shown: np.ndarray, n: int, rng: np.random.Generator
              ) -> tuple[tuple[int, int], ...]:
        """Up to `n` disjoint pairs, best first; exact ties go to a seeded random key."""
        k = len(post.beta)
        met = shown + shown.T  # [K, K] matches per unordered pair
        cap = 2 if self.one_order else 1
        upper = np.triu(np.ones((k, k), dtype=bool), 1)
        key = rng.random((k, k))  # [K, K] tie-break
        p = expit(post.beta[:, None] - post.beta[None, :])
        w = p * (1 - p)  # [K, K] Fisher information of one match about beta_a - beta_b
        cov = post.cov.copy()
        free = np.ones(k, dtype=bool)
        balanced = self._balanced(shown)
        out = []
        while len(out) < n:
            ok = upper & (met < cap) & free[:, None] & free[None, :]
            if not ok.any():
                break
            if (ok & balanced).any():
                ok &= balanced
            if self.rule == "information":
                d = np.diag(cov)
                score = np.log1p(w * (d[:, None] + d[None, :] - 2 * cov))
            else:
                score = w / (1 + met)
            score = np.where(ok, score, -np.inf)
            top = ok & np.isclose(score, score.max(), rtol=1e-9, atol=1e-12)
            a, b = np.unravel_index(np.argmin(np.where(top, key, np.inf)), (k, k))
            a, b = int(a), int(b)
            free[a] = free[b] = False
            if self.rule == "information":
                u = cov[:, a] - cov[:, b]  # [K]
                cov = cov - w[a, b] * np.outer(u, u) / (1 + w[a, b] * (u[a] - u[b]))
            out.append(self._order(a, b, shown, key[b, a]))  # the lower triangle of `key` is still unused
        return tuple(out)

    def _balanced(self, shown: np.ndarray) -> np.ndarray:
        """[K, K] pairs whose order can keep both candidates' firsts - seconds within one of zero (one_order: so a
        judge that only ever picks the first-shown gives everyone nearly the same record)."""
        k = len(shown)
        if not self.one_order:
            return np.ones((k, k), dtype=bool)
        lead = shown.sum(1) - shown.sum(0)  # [K] firsts - seconds; within a round each candidate plays once
        free_order = lead[:, None] * lead[None, :] <= 0
        # a pair that has gone one way must go the other: the one shown second before now goes first
        forced_ok = np.where(shown > shown.T, (lead[None, :] <= 0) & (lead[:, None] >= 0),
                             (lead[:, None] <= 0) & (lead[None, :] >= 0))
        return np.where(shown != shown.T, forced_ok, free_order)

    def _order(self, a: int, b: int, shown: np.ndarray, coin: float) -> tuple[int, int]:
        """Who is shown first: the way this pair has not gone yet, else the one with fewer firsts than seconds so
        far (every candidate stays within one of balanced), else a seeded coin."""
        if not self.one_order:
            return a, b
        if shown[a, b] != shown[b, a]:
            return (a, b) if shown[a, b] < shown[b, a] else (b, a)
        lead = shown.sum(1) - shown.sum(0)  # [K] firsts - seconds
        if lead[a] != lead[b]:
            return (a, b) if lead[a] < lead[b] else (b, a)
        return (a, b) if coin < 0.5 else (b, a)
