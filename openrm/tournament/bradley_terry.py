"""Bradley-Terry strengths from soft match outcomes (Reasoning Arena Eq. 7, 9-10): every match (i, j, o) is
mirrored as (j, i, 1-o), and the L2-regularised soft cross-entropy is minimised with scipy's L-BFGS-B.

    beta = fit_bradley_terry(k, i, j, soft_outcome(p, gamma=0.9))
    post = bt_laplace(k, first, second, o, position_bias=True)   # MAP, covariance and first-position bonus
Pure functions: no I/O, no randomness.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from scipy.optimize import minimize
from scipy.special import expit


def soft_outcome(p, gamma: float = 1.0):
    """A verdict's soft outcome for its first candidate: a win -> gamma, a tie -> 1/2, a loss -> 1 - gamma
    (Eq. 7), linear in between, so a both-orders p of 0.75 maps half-way between tie and win."""
    if not 0.5 < gamma <= 1.0:
        raise ValueError(f"gamma must be in (0.5, 1], got {gamma}")
    return 0.5 + (2 * gamma - 1) * (np.asarray(p, dtype=float) - 0.5)


def bt_loss(beta: np.ndarray, i: np.ndarray, j: np.ndarray, o: np.ndarray, l2: float) -> tuple[float, np.ndarray]:
    """Eq. 10 over the mirrored match set and its gradient. i, j, o: [M] (already mirrored)."""
    d = beta[i] - beta[j]  # [M]
    # -[o log s(d) + (1-o) log s(-d)] = o * softplus(-d) + (1-o) * softplus(d)
    loss = np.sum(o * np.logaddexp(0.0, -d) + (1 - o) * np.logaddexp(0.0, d)) + 0.5 * l2 * beta @ beta
    g = 1.0 / (1.0 + np.exp(-d)) - o  # d loss / d d
    k = len(beta)
    grad = np.bincount(i, g, k) - np.bincount(j, g, k) + l2 * beta
    return float(loss), grad


def fit_bradley_terry(k: int, i, j, o, l2: float = 1.0, mirror: bool = True, tol: float = 1e-8) -> np.ndarray:
    """Log-strengths beta [k] from matches where i scored o against j (o in [0, 1]). `l2` is the weight of
    1/2 ||beta||^2 (1 in the paper); it keeps beta finite on sparse or disconnected comparison graphs."""
    i, j, o = np.asarray(i, dtype=np.int64), np.asarray(j, dtype=np.int64), np.asarray(o, dtype=float)
    if not (len(i) == len(j) == len(o)):
        raise ValueError("i, j and o must have the same length")
    if len(o) and (o.min() < 0 or o.max() > 1 or not np.all(np.isfinite(o))):
        raise ValueError("soft outcomes must lie in [0, 1]")
    if len(i) and (min(i.min(), j.min()) < 0 or max(i.max(), j.max()) >= k):
        raise ValueError(f"match indices must lie in [0, {k})")
    if l2 <= 0:
        raise ValueError(f"l2 must be > 0 (it makes the optimum unique), got {l2}")
    if k == 0 or len(i) == 0:
        return np.zeros(k)
    if mirror:
        i, j, o = np.concatenate([i, j]), np.concatenate([j, i]), np.concatenate([o, 1 - o])
    res = minimize(bt_loss, np.zeros(k), args=(i, j, o, l2), jac=True, method="L-BFGS-B",
                   options={"gtol": tol, "ftol": 1e-12, "maxiter": 1000})
    return res.x


class BTPosterior(NamedTuple):
    """Laplace approximation of the Bradley-Terry posterior: the MAP log-strengths, their covariance (the inverse
    Hessian of the negative log-posterior at the MAP, the position bonus marginalised out) and the bonus."""

    beta: np.ndarray  # [K]
    cov: np.ndarray  # [K, K]
    bias: float  # logit bonus of the first-shown candidate; 0 when not fitted


def bt_laplace(k: int, first, second, o, prior: float = 1.0, position_bias: bool = False,
               tol: float = 1e-10, max_iter: int = 100) -> BTPosterior:
    """P(first beats second) = sigmoid(beta_first - beta_second + bias) with soft outcomes o in [0, 1], a
    N(0, 1/prior) prior on every log-strength (and on the bias when `position_bias`), fitted by damped Newton.
    Unlike `fit_bradley_terry`, each match counts once (no mirroring) and the order it was shown in matters."""
    first, second = np.asarray(first, dtype=np.int64), np.asarray(second, dtype=np.int64)
    o = np.asarray(o, dtype=float)
    if not (len(first) == len(second) == len(o)):
        raise ValueError("first, second and o must have the same length")
    if len(o) and (o.min() < 0 or o.max() > 1 or not np.all(np.isfinite(o))):
        raise ValueError("soft outcomes must lie in [0, 1]")
    if len(o) and (min(first.min(), second.min()) < 0 or max(first.max(), second.max()) >= k):
        raise ValueError(f"match indices must lie in [0, {k})")
    if prior <= 0:
        raise ValueError(f"prior must be > 0 (it makes the optimum unique), got {prior}")
    n = k + position_bias
    x = np.zeros((len(o), n))  # [M, K (+1)]: +1 first, -1 second, +1 in the bias column
    x[np.arange(len(o)), first] += 1.0
    x[np.arange(len(o)), second] -= 1.0
    if position_bias:
        x[:, k] = 1.0

    def loss(theta: np.ndarray) -> float:
        d = x @ theta
        return float(np.sum(o * np.logaddexp(0.0, -d) + (1 - o) * np.logaddexp(0.0, d)) + 0.5 * prior * theta @ theta)

    theta = np.zeros(n)
    for _ in range(max_iter):
        p = expit(x @ theta)  # [M]
        grad = x.T @ (p - o) + prior * theta
        hess = (x.T * (p * (1 - p))) @ x + prior * np.eye(n)
        step = np.linalg.solve(hess, grad)
        current, t = loss(theta), 1.0
        while t > 1e-8 and loss(theta - t * step) > current - 1e-4 * t * (grad @ step):
            t *= 0.5
        theta = theta - t * step
        if np.max(np.abs(t * step)) < tol:
            break
    p = expit(x @ theta)
    cov = np.linalg.inv((x.T * (p * (1 - p))) @ x + prior * np.eye(n))
    return BTPosterior(theta[:k], cov[:k, :k], float(theta[k]) if position_bias else 0.0)
