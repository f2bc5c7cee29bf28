"""Bradley-Terry: the soft-margin mapping, recovery of known strengths from many synthetic matches, and agreement
with an independent Newton fit of the same objective (Reasoning Arena Eq. 10) written here."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import spearmanr

from openrm.tournament import fit_bradley_terry, soft_outcome


@pytest.mark.parametrize("p,gamma,expected", [
    (1.0, 1.0, 1.0), (0.0, 1.0, 0.0), (0.5, 1.0, 0.5),
    (1.0, 0.8, 0.8), (0.0, 0.8, 0.2), (0.5, 0.8, 0.5), (0.75, 0.8, 0.65),
])
def test_soft_outcome_table(p, gamma, expected):
    assert soft_outcome(p, gamma) == pytest.approx(expected)


@pytest.mark.parametrize("gamma", [0.5, 0.3, 1.01])
def test_soft_outcome_rejects_gammas_outside_the_margin(gamma):
    with pytest.raises(ValueError):
        soft_outcome(1.0, gamma)


def synthetic(k=20, n=20000, seed=0):
    rng = np.random.default_rng(seed)
    beta = rng.normal(0, 1, k)
    i = rng.integers(0, k, n)
    j = (i + rng.integers(1, k, n)) % k
    win = rng.random(n) < 1 / (1 + np.exp(-(beta[i] - beta[j])))
    tie = rng.random(n) < 0.1
    o = np.where(tie, 0.5, win.astype(float))
    return beta, i, j, o


def test_recovers_known_strengths():
    beta, i, j, o = synthetic()
    fit = fit_bradley_terry(len(beta), i, j, o)
    assert spearmanr(fit, beta).statistic >= 0.95
    assert np.corrcoef(fit, beta)[0, 1] > 0.98
    # without ties (which pull every pair towards 1/2) the scale comes back too
    beta, i, j, o = synthetic(seed=2)
    o = np.where(o == 0.5, (np.random.default_rng(3).random(len(o)) < 1 / (1 + np.exp(beta[j] - beta[i]))) * 1.0, o)
    fit = fit_bradley_terry(len(beta), i, j, o, l2=0.01)
    assert np.abs((fit - fit.mean()) - (beta - beta.mean())).max() < 0.2


def newton_fit(k, i, j, o, l2, iters=50):
    """Eq. 10 on the mirrored matches, minimised by plain Newton steps on the exact Hessian."""
    mi, mj, mo = np.r_[i, j], np.r_[j, i], np.r_[o, 1 - o]
    b = np.zeros(k)
    for _ in range(iters):
        s = 1 / (1 + np.exp(-(b[mi] - b[mj])))
        g = l2 * b.copy()
        h = l2 * np.eye(k)
        for a, c, sa, oa in zip(mi, mj, s, mo, strict=True):
            g[a] += sa - oa
            g[c] -= sa - oa
            w = sa * (1 - sa)
            h[a, a] += w
            h[c, c] += w
            h[a, c] -= w
            h[c, a] -= w
        b = b - np.linalg.solve(h, g)
    return b


@pytest.mark.parametrize("l2,gamma", [(1.0, 1.0), (1.0, 0.8), (0.1, 0.9)])
def test_agrees_with_an_independent_newton_fit(l2, gamma):
    beta, i, j, o = synthetic(k=8, n=300, seed=1)
    o = soft_outcome(o, gamma)
    ours = fit_bradley_terry(8, i, j, o, l2=l2)
    assert np.allclose(ours, newton_fit(8, i, j, o, l2), atol=1e-5)


def test_sparse_and_disconnected_graphs_stay_finite_and_ties_give_zero():
    # two components, each perfectly separated: no MLE without the L2 term
    beta = fit_bradley_terry(4, [0, 2], [1, 3], [1.0, 1.0])
    assert np.all(np.isfinite(beta)) and beta[0] > beta[1] and beta[2] > beta[3]
    assert np.allclose(beta[[0, 1]], beta[[2, 3]])
    assert np.array_equal(fit_bradley_terry(3, [0, 1], [1, 2], [0.5, 0.5]), np.zeros(3))
    assert np.array_equal(fit_bradley_terry(3, [], [], []), np.zeros(3))


@pytest.mark.parametrize("args", [
    (3, [0], [1], [1.5]), (3, [0], [3], [1.0]), (3, [0, 1], [1], [1.0]),
])
def test_bad_matches_are_rejected(args):
    with pytest.raises(ValueError):
        fit_bradley_terry(*args)
