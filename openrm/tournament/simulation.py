"""Simulated match judges over latent strengths `s` [G, K] (group g's candidate c has strength s[g, c]): a pairwise
judge that is Bradley-Terry on them plus a position bias and ties (`SimPairJudge`), one whose noise varies by pair and
repeats (`RealisticPairJudge`), and a Plackett-Luce group judge (`SimGroupJudge`). Questions are group numbers and
candidates their index, as strings, so the real `Arena` and topologies play them; bench.tournament_sim does.
"""

from __future__ import annotations

import numpy as np

from openrm.tournament.judges import GroupRequest


class SimPairJudge:
    """One presentation order per item: P(x wins) = sigmoid(s_x - s_y + bias); a tie with probability
    `tie_rate`. `info` sums p(1-p) over the items asked: the Fisher information they carry about the strengths (a
    call can carry at most 1/4)."""

    orders = 1

    def __init__(self, strengths: np.ndarray, bias: float, tie_rate: float, seed: int):
        self.s, self.bias, self.tie_rate = strengths, bias, tie_rate
        self.rng = np.random.default_rng(seed)
        self.info, self.asked = 0.0, 0

    def logits(self, g, x, y) -> np.ndarray:
        return self.s[g, x] - self.s[g, y] + self.bias

    def tie_chance(self, g, x, y) -> np.ndarray:
        return np.full(len(g), self.tie_rate)

    def compare_many(self, items):
        g = np.fromiter((int(q) for q, _, _ in items), np.int64, len(items))
        x = np.fromiter((int(a) for _, a, _ in items), np.int64, len(items))
        y = np.fromiter((int(b) for _, _, b in items), np.int64, len(items))
        p = 1 / (1 + np.exp(-self.logits(g, x, y)))
        tie_p = self.tie_chance(g, x, y)
        self.info += float(np.sum((1 - tie_p) * p * (1 - p)))
        self.asked += len(items)
        u, tie = self.rng.random(len(items)), self.rng.random(len(items)) < tie_p
        return np.where(tie, 0.5, (u < p).astype(float)).tolist()


class RealisticPairJudge(SimPairJudge):
    """A judge whose noise varies by pair: logit = a_xy (s_x - s_y) + e_xy + b_g, with a per-pair discrimination
    a_xy = exp(N(0, 0.5)), a per-pair error e_xy ~ N(0, 0.5) that repeats in both orders and on every replay
    (e_yx = -e_xy: the judge misreads that pair), a per-group position bias b_g ~ N(bias, 0.2), and a tie chance
    2.5 x tie_rate x exp(-|s_x - s_y|) (about tie_rate on average; likelier between close candidates)."""

    def __init__(self, strengths: np.ndarray, bias: float, tie_rate: float, seed: int):
        super().__init__(strengths, bias, tie_rate, seed)
        g, k = strengths.shape
        rng = np.random.default_rng([seed, 19])
        upper = np.triu(np.ones((k, k), dtype=bool), 1)
        a, e = np.exp(rng.normal(0, 0.5, (g, k, k))), rng.normal(0, 0.5, (g, k, k))
        self.a = np.where(upper, a, np.swapaxes(a, 1, 2))  # [G, K, K] symmetric
        self.e = np.where(upper, e, -np.swapaxes(e, 1, 2))  # [G, K, K] antisymmetric
        self.b = rng.normal(bias, 0.2, g)  # [G]

    def logits(self, g, x, y) -> np.ndarray:
        return self.a[g, x, y] * (self.s[g, x] - self.s[g, y]) + self.e[g, x, y] + self.b[g]

    def tie_chance(self, g, x, y) -> np.ndarray:
        return np.minimum(1.0, 2.5 * self.tie_rate * np.exp(-np.abs(self.s[g, x] - self.s[g, y])))


JUDGES = {"simple": SimPairJudge, "realistic": RealisticPairJudge}


class SimGroupJudge:
    """Plackett-Luce top-k on the strengths (Gumbel trick), the first shown candidate getting the position bias;
    fails (no winners) with probability `tie_rate`."""

    def __init__(self, strengths: np.ndarray, bias: float, tie_rate: float, seed: int):
        self.s, self.bias, self.tie_rate = strengths, bias, tie_rate
        self.rng = np.random.default_rng(seed)

    def select_winners_many(self, requests: list[GroupRequest]):
        out = []
        for req in requests:
            if self.rng.random() < self.tie_rate:
                out.append([])
                continue
            util = self.s[int(req.question), [int(c) for c in req.candidates]].copy()
            util[0] += self.bias
            util += self.rng.gumbel(size=len(util))
            out.append(sorted(int(i) for i in np.argsort(-util)[:req.k]))
        return out
