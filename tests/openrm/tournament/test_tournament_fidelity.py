"""Fidelity of tournament rewards to a latent ranking (tau-b, tau-a, top-1) and the simulated judges a fidelity study
plays: the vectorised statistics agree with their definitions, and one cell recovers a ranking a clean judge shows."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import kendalltau

from openrm.tournament import RoundRobin
from openrm.tournament.fidelity import Latent, Variant, kendall_tau_a, kendall_tau_b, measure_cell, top1
from openrm.tournament.simulation import RealisticPairJudge, SimPairJudge


def test_tau_b_agrees_with_scipy_on_tied_and_untied_rows():
    rng = np.random.default_rng(0)
    rewards, truth = np.round(rng.normal(size=(50, 8)), 1), rng.normal(size=(50, 8))
    expected = [kendalltau(a, b).statistic for a, b in zip(rewards, truth, strict=True)]
    assert kendall_tau_b(rewards, truth) == pytest.approx(expected)


def test_tau_a_counts_tied_pairs_as_half_right_and_a_constant_row_is_zero():
    truth = np.array([[1.0, 2.0, 3.0]])
    assert kendall_tau_a(np.array([[0.0, 0.0, 1.0]]), truth) == pytest.approx([2 / 3])
    assert kendall_tau_b(np.array([[0.0, 0.0, 1.0]]), truth) == pytest.approx([2 / np.sqrt(6)])
    assert kendall_tau_b(np.zeros((1, 3)), truth) == pytest.approx([0.0])
    assert kendall_tau_a(np.array([[3.0, 2.0, 1.0]]), truth) == pytest.approx([-1.0])


def test_top1_splits_a_tie_at_the_top_uniformly():
    truth = np.array([[0.0, 1.0, 2.0], [0.0, 1.0, 2.0]])
    assert top1(np.array([[0.0, 1.0, 1.0], [5.0, 1.0, 0.0]]), truth) == pytest.approx([0.5, 0.0])


def test_the_realistic_judge_misreads_a_pair_the_same_way_in_both_orders():
    judge = RealisticPairJudge(np.zeros((2, 4)), bias=0.0, tie_rate=0.1, seed=3)
    off = ~np.eye(4, dtype=bool)  # a candidate never meets itself
    assert np.allclose(judge.e[:, off], -np.swapaxes(judge.e, 1, 2)[:, off])
    assert np.allclose(judge.a[:, off], np.swapaxes(judge.a, 1, 2)[:, off])
    g, x, y = np.array([0, 1]), np.array([0, 2]), np.array([3, 1])
    assert np.allclose(judge.logits(g, x, y) - judge.b[g], -(judge.logits(g, y, x) - judge.b[g]))


def test_a_simulated_judge_is_reproducible_from_its_seed():
    s = np.random.default_rng(1).normal(size=(3, 4))
    items = [(str(g), str(x), str(y)) for g in range(3) for x in range(4) for y in range(4) if x != y]
    assert SimPairJudge(s, 0.3, 0.1, 7).compare_many(items) == SimPairJudge(s, 0.3, 0.1, 7).compare_many(items)


def test_round_robin_against_a_clear_judge_nearly_recovers_the_latent_ranking_and_a_noisy_one_does_not():
    def cell(sigma):
        return measure_cell("simple", 4, 20, Variant("round_robin", RoundRobin()), Latent(sigma, 0.0, 0.0))

    clean, noisy = cell(50.0), cell(0.1)
    assert clean["calls"] == 12 and clean["tau min-max"] > 0.95 and clean["top1 BT"] > 0.9
    assert noisy["tau min-max"] < 0.5 and 0.2 < noisy["info"] <= 0.25 and clean["info"] < 0.01
