"""Active pairing on the real Arena: the budget is spent exactly, every round is disjoint pairs sent as one judge
batch, results depend only on the seed, a perfect judge recovers the true order at round robin's budget, and a
failing or position-biased judge gives equal rewards. Also the Laplace Bradley-Terry fit it rests on, and that
train.grpo_policy / eval.best_of_n can build and budget it."""

from __future__ import annotations

import hashlib
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from eval.picks import expected_calls
from openrm.tournament import (
    SHAPINGS,
    TOPOLOGIES,
    Active,
    Arena,
    Group,
    RoundRobin,
    bt_laplace,
    fit_bradley_terry,
)
from train.policy_trainer import PolicyArguments

ROOT = Path(__file__).resolve().parents[3]


def strength(text: str) -> int:
    return int(text.split("-")[1])


class Recording:
    """A one-order pairwise judge; records every batch it gets."""

    orders = 1

    def __init__(self, decide):
        self.decide, self.batches = decide, []

    def compare_many(self, items):
        self.batches.append(list(items))
        return [self.decide(q, x, y) for q, x, y in items]


def perfect(q, x, y):
    return 1.0 if strength(x) > strength(y) else 0.0 if strength(x) < strength(y) else 0.5


def noisy(q, x, y):
    """Deterministic but noisy: a hash of the item flips about a quarter of the verdicts, with a position bias."""
    h = int(hashlib.sha256(f"{q}|{x}|{y}".encode()).hexdigest()[:8], 16) / 2**32
    return 0.5 if h < 0.1 else float((strength(x) - strength(y)) / 8 + 0.15 > h - 0.5)


def groups(k: int, n: int = 4) -> list[Group]:
    return [Group(f"q{g}", tuple(f"cand-{s}" for s in np.random.default_rng(g).permutation(k)), group_id=g)
            for g in range(n)]


def play(topology: Active, k: int, decide=noisy, seed: int = 0, n: int = 4):
    orders = "given" if topology.one_order else "both"
    judge = Recording(decide)
    return Arena(judge, orders=orders, seed=seed).run_many(topology, groups(k, n)), judge


@pytest.mark.parametrize("k", [2, 3, 5, 8, 16])
@pytest.mark.parametrize("options", [{}, {"budget": 7}, {"share": 0.25, "rule": "closeness"}, {"share": 1.0},
                                     {"budget": 500}, {"budget": 9, "one_order": True},
                                     {"share": 2.0, "one_order": True}])
def test_the_budget_is_spent_exactly(k, options):
    topology = Active(**options)
    pairs = k * (k - 1) // 2
    cap = 2 * pairs if topology.one_order else pairs
    wanted = options.get("budget", int(np.ceil(options.get("share", 0.5) * pairs)))
    assert topology.matches(k) == min(wanted, cap)
    results, _ = play(topology, k)
    for r in results:
        assert len(r.matches) == topology.matches(k)
        assert r.inferences == topology.matches(k) * (1 if topology.one_order else 2)
        assert not any(m.cached for m in r.matches)


@pytest.mark.parametrize("options", [{"share": 0.6}, {"share": 1.0, "rule": "closeness"},
                                     {"share": 1.5, "one_order": True}, {"share": 2.0, "one_order": True}])
@pytest.mark.parametrize("k", [7, 8])
def test_rounds_are_maximal_disjoint_pairs_and_one_judge_batch_each(k, options):
    topology = Active(**options)
    cap = 2 if topology.one_order else 1
    results, judge = play(topology, k)
    for r in results:
        assert sum(m.round == 0 for m in r.matches) == k // 2
        met = Counter()
        last = max(m.round for m in r.matches)
        for rnd in range(last + 1):
            seen = [c for m in r.matches if m.round == rnd for c in (m.i, m.j)]
            assert len(seen) == len(set(seen)), f"round {rnd} repeats a candidate"
            idle = sorted(set(range(k)) - set(seen))
            if rnd < last:  # no two candidates who sat the round out could still have met
                assert all(met[a, b] >= cap for n, a in enumerate(idle) for b in idle[n + 1:])
            for m in r.matches:
                if m.round == rnd:
                    met[min(m.i, m.j), max(m.i, m.j)] += 1
        # a pair meets at most once (both orders), or once each way (one order)
        assert max(Counter((m.i, m.j) if topology.one_order else (min(m.i, m.j), max(m.i, m.j))
                           for m in r.matches).values()) == 1
    assert len(judge.batches) == max(len({m.round for m in r.matches}) for r in results)


def test_one_order_keeps_every_candidate_within_one_of_as_many_firsts_as_seconds():
    results, _ = play(Active(budget=17, one_order=True), 8, n=6)
    for r in results:
        lead = Counter(m.i for m in r.matches)
        lead.subtract(Counter(m.j for m in r.matches))
        assert max(abs(v) for v in lead.values()) <= 1


@pytest.mark.parametrize("options", [{}, {"rule": "closeness"}, {"share": 1.2, "one_order": True}])
def test_deterministic_given_the_seed(options):
    def log(results):
        return [[(m.round, m.i, m.j, m.p_i) for m in r.matches] + [tuple(r.scores)] for r in results]

    first, _ = play(Active(**options), 8, seed=3)
    again, _ = play(Active(**options), 8, seed=3)
    other, _ = play(Active(**options), 8, seed=4)
    assert log(first) == log(again)
    assert log(first) != log(other)
    alone = Arena(Recording(noisy), orders="given" if options.get("one_order") else "both", seed=3).run_many(
        Active(**options), groups(8)[2:3])
    assert log(alone) == log(first)[2:3]  # a group's tournament does not depend on its batch-mates


@pytest.mark.parametrize("k", [3, 6, 9])
@pytest.mark.parametrize("options", [{"share": 1.0}, {"share": 1.0, "rule": "closeness"},
                                     {"share": 2.0, "one_order": True}])
def test_a_perfect_judge_recovers_the_true_order_at_round_robins_budget(k, options):
    results, _ = play(Active(**options), k, decide=perfect)
    for r, g in zip(results, groups(k), strict=True):
        truth = sorted(range(k), key=lambda c: -strength(g.candidates[c]))
        assert r.ranking == truth
        assert len(set(r.ranks)) == k


def test_one_order_models_a_strong_position_bias():
    """A deterministic judge that lets the first-shown win unless it is 3 or more levels worse: the fitted bonus
    absorbs the bias and the order is still the true one at round robin's budget."""
    results, _ = play(Active(share=2.0, one_order=True), 8,
                      decide=lambda q, x, y: float(strength(x) - strength(y) + 2.5 > 0))
    for r, g in zip(results, groups(8), strict=True):
        assert r.ranking == sorted(range(8), key=lambda c: -strength(g.candidates[c]))


@pytest.mark.parametrize("decide", [lambda q, x, y: None, lambda q, x, y: 0.5, lambda q, x, y: 1.0,
                                    lambda q, x, y: "A"], ids=["failing", "always-tie", "first-wins", "garbage"])
@pytest.mark.parametrize("options", [{}, {"budget": 11, "rule": "closeness"}, {"share": 1.0}])
def test_a_failing_or_position_biased_judge_gives_equal_rewards(decide, options):
    results, _ = play(Active(**options), 8, decide=decide)
    for r in results:
        assert all(m.status in ("tie", "failure") for m in r.matches)
        for name, shape in SHAPINGS.items():
            rewards = shape(r)
            assert np.ptp(rewards) == 0, (name, rewards)


def test_one_order_with_a_first_wins_judge_at_a_full_budget_gives_equal_rewards():
    results, _ = play(Active(share=2.0, one_order=True), 8, decide=lambda q, x, y: 1.0)
    for r in results:
        assert np.ptp(r.scores) == 0


def test_bt_laplace_matches_the_mirrored_lbfgs_fit_and_recovers_a_planted_bias():
    rng = np.random.default_rng(0)
    k, m = 6, 4000
    beta = rng.normal(size=k)
    first, second = rng.integers(0, k, m), rng.integers(0, k, m)
    keep = first != second
    first, second = first[keep], second[keep]
    o = (rng.random(len(first)) < 1 / (1 + np.exp(-(beta[first] - beta[second] + 0.7)))).astype(float)
    # each mirrored match counts twice there, so its l2 is twice our prior
    plain = bt_laplace(k, first, second, o, prior=0.5)
    assert np.allclose(plain.beta, fit_bradley_terry(k, first, second, o, l2=1.0), atol=1e-5)
    assert plain.bias == 0.0
    post = bt_laplace(k, first, second, o, prior=1.0, position_bias=True)
    assert abs(post.bias - 0.7) < 0.1
    centred = post.beta - post.beta.mean()
    assert np.max(np.abs(centred - (beta - beta.mean()))) < 0.15
    # the common shift is only pinned by the prior; contrasts are pinned by the data
    d = np.diag(post.cov)
    contrast_sd = np.sqrt(d[:, None] + d[None, :] - 2 * post.cov)[np.triu_indices(k, 1)]
    assert np.all(contrast_sd > 0.02) and np.all(contrast_sd < 0.1) and np.allclose(post.cov, post.cov.T)


def test_bt_laplace_of_no_information_is_all_zeros():
    post = bt_laplace(4, [0, 1, 2], [1, 2, 3], [0.5, 0.5, 0.5], position_bias=True)
    assert np.all(post.beta == 0) and post.bias == 0


@pytest.mark.parametrize("bad", [{"budget": 0}, {"budget": 2.5}, {"budget": True}, {"share": 0.0}, {"rule": "x"},
                                 {"prior": 0.0}])
def test_bad_options_are_refused(bad):
    with pytest.raises(ValueError):
        Active(**bad)


def test_policy_training_and_best_of_n_can_build_and_budget_it():
    args = PolicyArguments(dataset="x", judge="toy-oracle", world_seed=0, topology="active",
                           topology_options='{"budget": 14, "rule": "closeness"}')
    assert args.topology_obj == Active(budget=14, rule="closeness")
    assert TOPOLOGIES["active"] is Active
    with pytest.raises(ValueError):
        PolicyArguments(dataset="x", judge="toy-oracle", world_seed=0, topology="active",
                        topology_options='{"budgets": 14}')
    # eval.best_of_n builds Active() (half of round robin) and filters on expected calls per prompt
    assert expected_calls(Active(), [8], orders=2) == 14
    assert expected_calls(Active(), [8, 16], orders=1) == (2 * 14 + 2 * 60) / 2


def test_the_active_policy_config_plays_half_of_round_robin_and_the_command_line_overrides_its_budget():
    from train.policy_trainer import parse

    config = ["--config", str(ROOT / "configs/grpo_policy/active.yaml"), "--use_cpu", "true", "--bf16", "false"]
    s, t, _ = parse(config)
    assert s.topology_obj == Active(budget=14)
    assert 2 * s.topology_obj.matches(t.num_generations) == RoundRobin().matches(t.num_generations)
    s, _, _ = parse([*config, "--topology_options", '{"share": 0.75, "rule": "closeness"}'])
    assert s.topology_obj == Active(share=0.75, rule="closeness")
