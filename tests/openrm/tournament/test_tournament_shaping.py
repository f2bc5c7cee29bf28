"""Reward shaping (min-max + format, rank quantile + z-score, win rate, BT min-max) and adaptive routing."""

from __future__ import annotations

import numpy as np
import pytest

from openrm.tournament import (
    Arena,
    MultiRound,
    adaptive_rewards,
    bt_min_max,
    is_diverse,
    min_max,
    rank_quantile,
    rank_z,
    tournament_reward,
    win_rate,
    z_score,
)
from openrm.tournament.records import GroupMatch, Match, TournamentResult, composite, ranks_from


def result(scores, matches=(), group_matches=(), tiebreak=None):
    scores = np.asarray(scores, dtype=float)
    return TournamentResult("test", len(scores), 0, 0, composite(scores, tiebreak), ranks_from(scores, tiebreak),
                            list(matches), list(group_matches))


def test_min_max_and_format_reward():
    r = result([1.0, 3.0, 2.0, 3.0])
    assert min_max(r.scores) == pytest.approx([0, 1, 0.5, 1], abs=1e-5)
    assert tournament_reward(r, [True, False, True, True]) == pytest.approx([1, 1, 1.5, 2], abs=1e-5)
    assert np.all(tournament_reward(result([2.0, 2.0])) == 0)
    with pytest.raises(ValueError):
        tournament_reward(r, [True])


def test_rank_quantile_then_z_score():
    assert rank_quantile([0, 1, 2, 3]) == pytest.approx([1, 2 / 3, 1 / 3, 0])
    assert rank_quantile([0.5, 0.5, 2]) == pytest.approx([0.75, 0.75, 0])
    z = rank_z(result([4.0, 1.0, 3.0, 2.0]))
    assert z.mean() == pytest.approx(0, abs=1e-9) and z.std() == pytest.approx(1, abs=1e-4)
    assert np.argsort(-z).tolist() == [0, 2, 3, 1]
    assert np.all(z_score([0.3, 0.3, 0.3]) == 0)


def test_ranks_break_ties_lexicographically_and_the_composite_agrees():
    scores, tiebreak = np.array([1.0, 1.0, 2.0, 1.0]), np.array([0.2, 0.9, 0.0, 0.2])
    ranks = ranks_from(scores, tiebreak)
    assert ranks.tolist() == [2.5, 1.0, 0.0, 2.5]
    assert ranks_from(composite(scores, tiebreak)).tolist() == ranks.tolist()


def test_win_rate_counts_group_matches_as_implied_pairs():
    matches = [Match(0, "x", 0, 1, 1.0, "decisive", False), Match(0, "x", 1, 2, 0.5, "tie", False)]
    groups = [GroupMatch(1, "g", (0, 2, 3), 1, (3,), False), GroupMatch(1, "g", (1, 2), 1, (), False)]
    wr = win_rate(result([0, 0, 0, 0], matches, groups))
    # 0: beat 1, lost to 3 -> 1/2; 1: lost to 0, tied 2, failed group with 2 -> 1/3; 2: tie, loss to 3, tie -> 1/3
    assert wr == pytest.approx([1 / 2, 1 / 3, 1 / 3, 1.0])
    bt = bt_min_max(result([0, 0, 0, 0], matches, groups))
    assert bt.argmax() == 3 and bt.min() == 0


def test_multi_round_scores_accumulate_omega_per_round():
    class TopByName:
        def select_winners_many(self, requests):
            return [sorted(np.argsort([-int(c) for c in r.candidates])[:r.k].tolist()) for r in requests]

    cands = [str(c) for c in range(8)]
    once = Arena(group=TopByName()).run(MultiRound(2, 1, 1, 1, omega=(1.0, 2.0, 4.0)), "q", cands)
    assert sorted(once.scores.tolist()) == [0, 0, 0, 0, 1, 1, 1 + 2, 1 + 2 + 4]
    twice = Arena(group=TopByName()).run(MultiRound(2, 1, 1, 2, omega=(1.0, 2.0, 4.0)), "q", cands)
    assert twice.scores[7] == 2 * (1 + 2 + 4) and twice.scores[0] == 0  # points accumulate over repeats


@pytest.mark.parametrize("rewards,diverse", [([1, 1, 1], False), ([0, 0, 0, 0], False), ([0, 1, 0], True),
                                             ([0.5], False), ([0.2, 0.2000001], True)])
def test_is_diverse(rewards, diverse):
    assert is_diverse(rewards) is diverse


def test_adaptive_routing_sends_only_zero_variance_groups_to_the_tournament_in_one_call():
    calls = []

    def judge(ids):
        calls.append(ids)
        return [np.arange(3.0) + 10 * g for g in ids]

    out = adaptive_rewards([[1, 1, 1], [0, 1, 0], [0, 0, 0]], judge)
    assert calls == [[0, 2]] and out.routed == [True, False, True]
    assert [r.tolist() for r in out.rewards] == [[0, 1, 2], [0, 1, 0], [20, 21, 22]]
    adaptive_rewards([[0, 1], [1, 0]], judge)
    assert len(calls) == 1  # nothing to judge: the tournament is not called
    with pytest.raises(ValueError):
        adaptive_rewards([[1, 1]], lambda ids: [[1.0, 2.0, 3.0]])
