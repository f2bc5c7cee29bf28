"""Every topology's ranks and shaped rewards against hand computations, and the papers' rules next to ours.

A candidate's text is its strength; the judge prefers the stronger (`Strength`: 1/0, a tie 0.5; `Soft`:
0.5 + (x - y)/8 clipped, exact in binary). Each case is played at several steps: a draw-independent case must give
the same hand-computed values at every step; a draw-dependent one (Swiss) names the draw its values belong to.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pytest

from openrm.tournament import (
    TOPOLOGIES,
    Active,
    Anchor,
    Arena,
    DoubleElimination,
    Live,
    MultiRound,
    RoundRobin,
    SeededSingleElimination,
    Swiss,
    bt_min_max,
    rank_z,
    tournament_reward,
    win_rate,
)
from openrm.tournament.records import ranks_from

R2, R3, R5 = 2**0.5, 3**0.5, 5**0.5
C = 0.5 * 0.999  # records.composite: a tiebreak in [0, 1] is added at C x the smallest gap (1 in every case below)
STEPS = range(12)


class Strength:
    orders = 1

    def compare_many(self, items):
        return [float(int(x) > int(y)) if x != y else 0.5 for _, x, y in items]


class Soft:
    orders = 1

    def compare_many(self, items):
        return [min(1.0, max(0.0, 0.5 + (int(x) - int(y)) / 8)) for _, x, y in items]


class StrengthGroup:
    """The k strongest win; counts the requests it is asked."""

    def __init__(self):
        self.requests = 0

    def select_winners_many(self, requests):
        self.requests += len(requests)
        return [sorted(np.argsort([-int(c) for c in r.candidates])[:r.k].tolist()) for r in requests]


def eq8(scores):
    """Tournament-GRPO Eq. 8 by hand: (s - min) / (max - min + 1e-6)."""
    s = np.asarray(scores, dtype=float)
    return (s - s.min()) / (s.max() - s.min() + 1e-6)


def play(topology, strengths, judge=None, step=0):
    return Arena(judge or Strength(), StrengthGroup()).run(topology, "q", [str(s) for s in strengths], step)


def first_opponent_of_best(result, strengths) -> int:
    best = int(np.argmax(strengths))
    m = next(m for m in result.matches if best in (m.i, m.j))
    return strengths[m.j if m.i == best else m.i]


@dataclass
class Case:
    topology: object
    strengths: list[int]
    ranks: list[float]
    scores: list[float] | None  # the result's scores (composite); None: Bradley-Terry, no closed form
    win_rate: list[float]
    rank_z: list[float]
    when: Callable = lambda result, strengths: True  # the draw these values belong to

    def __repr__(self):
        return f"{self.topology.name}-K{len(self.strengths)}-{self.ranks}"


# Values are in index order; the comments name candidates by strength. Index 0 is the anchor where there is one.
K4, K5 = [1, 3, 0, 2], [2, 4, 0, 3, 1]
Z4 = [-1 / R5, 3 / R5, -3 / R5, 1 / R5]  # ranks [2, 0, 3, 1]: quantiles [1/3, 1, 0, 2/3], std sqrt(5)/6
Z5 = [-1 / R2, R2, -R2, 1 / R2, 0]  # ranks [3, 0, 4, 1, 2]: quantiles [1/4, 1, 0, 3/4, 1/2], std 1/sqrt(8)
CASES = [
    # win rates: the strongest won 3 of 3, then 2/3, 1/3, 0
    Case(RoundRobin(), K4, [2, 0, 3, 1], [1 / 3, 1, 0, 2 / 3], [1 / 3, 1, 0, 2 / 3], Z4),
    # 3 and 2 both beat the anchor (1): level; the anchor scores 1 - mean(1, 0, 1)
    Case(Anchor(), K4, [2, 0.5, 3, 0.5], [1 / 3, 1, 0, 1], [1 / 3, 1, 0, 1],
         [-R2 / 3, 2 * R2 / 3, -R2, 2 * R2 / 3]),
    # seeds 3|2 (1.0, shuffled), anchor (1/3), 0; 3 and 2 win their first match, 3 the final. Net wins
    # [-1, 2, -1, 0], depth [0, 2, 0, 1]; mean shares [mean(1/3, 0), 1, 0, mean(1, 1, 0)] = [1/6, 1, 0, 2/3]
    Case(SeededSingleElimination(rank_by="net_wins"), K4, [2, 0, 3, 1], [-1 + C / 6, 2 + C, -1, 2 * C / 3],
         [1 / 4, 1, 0, 2 / 3], Z4),
    Case(SeededSingleElimination(), K4, [2, 0, 3, 1], [C / 6, 2 + C, 0, 1 + 2 * C / 3],
         [1 / 4, 1, 0, 2 / 3], Z4),
    # K=5, 8 slots: seeds 4 and 3 (1.0), the anchor 2 (1/2) get byes; 1 beats 0; 4 beats 1, 3 beats the anchor;
    # 4 beats 3. Net (a bye earns max(0, 2 x seeding - 1)) [-1, 3, -1, 1, 0]; depth [1, 3, 0, 2, 1] (the bye
    # holder out in round 1 is level with 1, who won round 0); mean shares [1/4, 1, 0, 2/3, 1/3]
    Case(SeededSingleElimination(rank_by="net_wins"), K5, [3, 0, 4, 1, 2],
         [-1 + C / 4, 3 + C, -1, 1 + 2 * C / 3, C / 3],
         [2 / 5, 1, 0, 2 / 3, 1 / 3], Z5),
    Case(SeededSingleElimination(), K5, [3, 0, 4, 1, 2], [1 + C / 4, 3 + C, 0, 2 + 2 * C / 3, 1 + C / 3],
         [2 / 5, 1, 0, 2 / 3, 1 / 3], Z5),
    # every draw: 0 goes out in round 1 (two losses), 1 in round 2, 2 loses the grand final to 3. Net
    # [-1, 3, -2, 0], depth [2, 4, 1, 3]; mean shares [1/3, 1, 0, 1/2]
    Case(DoubleElimination(rank_by="net_wins"), K4, [2, 0, 3, 1], [-1 + C / 3, 3 + C, -2, C / 2],
         [1 / 3, 1, 0, 1 / 2], Z4),
    Case(DoubleElimination(), K4, [2, 0, 3, 1], [2 + C / 3, 4 + C, 1, 3 + C / 2], [1 / 3, 1, 0, 1 / 2],
         Z4),
    # two rounds; points [1, 2, 0, 1] whatever the draw. 3 meets 2 or 1 first: every Buchholz is 1, so 1 and 2
    # are level; 3 meets 0 first: Buchholz [1/2, 1/2, 3/2, 3/2] puts 2 above 1
    Case(Swiss(), K4, [1.5, 0, 3, 1.5], [1, 2, 0, 1], [1 / 2, 1, 0, 1 / 2], [0, R2, -R2, 0],
         when=lambda r, s: first_opponent_of_best(r, s) != 0),
    Case(Swiss(), K4, [2, 0, 3, 1], [1, 2, C, 1 + C], [1 / 2, 1, 0, 1 / 2], Z4,
         when=lambda r, s: first_opponent_of_best(r, s) == 0),
    # arrivals 3; 0 (plays 3, 1); 2 (plays the whole board): the complete graph, win rates as round robin
    Case(Live(), K4, [2, 0, 3, 1], None, [1 / 3, 1, 0, 2 / 3], Z4),
    # the fifth arrival (1) meets the best (4), the median (3) and the worst (0) of the board, never 2: 1 and 2
    # each lost to 4 and 3 and beat 0, so they are level
    Case(Live(), K5, [2.5, 0, 4, 1, 2.5], None, [1 / 3, 1, 0, 3 / 4, 1 / 3],
         list(np.array([-1 / 8, 1 / 2, -1 / 2, 1 / 4, -1 / 8]) / 0.11875**0.5)),
    # a budget of every pair: the complete graph in rounds of disjoint pairs, win rates as round robin
    Case(Active(share=1.0), K4, [2, 0, 3, 1], None, [1 / 3, 1, 0, 2 / 3], Z4),
    # one group of four, one winner: 3 scores 1
    Case(MultiRound(4, 1, 1, 1), K4, [2, 0, 2, 2], [0, 1, 0, 0], [0, 1, 0, 0], [-1 / R3, R3, -1 / R3, -1 / R3]),
    # Tournament-GRPO's G=4, K_win=2, K_final=2, twice: 3 and 2 score 2
    Case(MultiRound(4, 2, 2, 2), K4, [2.5, 0.5, 2.5, 0.5], [0, 2, 0, 2], [0, 1, 0, 1], [-1, 1, -1, 1]),
]


def test_every_topology_has_a_hand_computed_case():
    assert {c.topology.name for c in CASES} == set(TOPOLOGIES)


@pytest.mark.parametrize("case", CASES, ids=repr)
def test_ranks_and_rewards_equal_the_hand_computation(case):
    seen = 0
    for step in STEPS:
        result = play(case.topology, case.strengths, step=step)
        if not case.when(result, case.strengths):
            continue
        seen += 1
        assert result.ranks.tolist() == case.ranks
        if case.scores is not None:
            assert result.scores == pytest.approx(case.scores, abs=1e-9)
            assert tournament_reward(result) == pytest.approx(eq8(case.scores), abs=1e-9)
        assert win_rate(result) == pytest.approx(case.win_rate, abs=1e-9)
        assert rank_z(result) == pytest.approx(case.rank_z, rel=1e-5)
    assert seen, "no step drew this case"


@pytest.mark.parametrize("case", CASES, ids=repr)
def test_every_shaping_rewards_the_strongest_most_and_equal_standings_equally(case):
    """Win rate and Bradley-Terry read the match graph, not the standing, so only min-max and rank-z must follow
    the ranks; every case's level candidates are also symmetric in its graph, so all four give them one reward."""
    result = next(r for r in (play(case.topology, case.strengths, step=s) for s in STEPS)
                  if case.when(r, case.strengths))
    best, ranks = int(np.argmax(case.strengths)), np.array(case.ranks)
    for name, r in {"min_max": tournament_reward(result), "rank_z": rank_z(result), "win_rate": win_rate(result),
                    "bt_min_max": bt_min_max(result)}.items():
        assert np.all(np.isfinite(r)), name
        assert r[best] == pytest.approx(r.max(), abs=1e-6) and r[best] > r.min(), name
        for a in range(len(r)):
            for b in range(len(r)):
                if ranks[a] == ranks[b]:
                    assert r[a] == pytest.approx(r[b], abs=1e-5), name
                if ranks[a] < ranks[b] and name in ("min_max", "rank_z"):  # made from the standing itself
                    assert r[a] > r[b], name
    z = rank_z(result)
    assert np.sign(z).tolist() == np.sign(np.array(case.rank_z).round(12)).tolist()


def test_bt_min_max_on_a_complete_symmetric_graph_is_antisymmetric():
    # a perfect judge over the complete graph: beta_s = -beta_(3-s), so the min-max rewards of s and 3-s sum to 1
    for topology in (RoundRobin(), Live()):
        bt = bt_min_max(play(topology, K4))
        assert bt[[1, 2]] == pytest.approx([1, 0], abs=1e-5) and bt[0] + bt[3] == pytest.approx(1, abs=1e-5)


# --- the papers' rules, as options ---------------------------------------------------------------------------


@pytest.mark.parametrize("make", [lambda: SeededSingleElimination(rank_by="wins"),
                                  lambda: DoubleElimination(rank_by="Depth"), lambda: Swiss(buchholz="median")])
def test_unknown_rule_names_are_refused(make):
    with pytest.raises(ValueError):
        make()


def test_single_elimination_depth_and_net_wins_disagree_after_a_narrow_win():
    # Anchor 5. Seeding: 0 -> 0, 10 -> 1, 6 -> 5/8, the anchor 1 - (0 + 1 + 5/8)/3 = 11/24: seeds 10, 6, 5, 0.
    # Round 0: 10 beats 0; 6 beats 5 by 5/8 (net +1/4 / -1/4). Final: 10 beats 6 outright (6: 1/4 - 1 = -3/4).
    # Net wins: 10, 5, 6, 0. Depth: 10 (2), 6 (1), then 5 and 0 (0) by mean share (11/24, 3/8) vs (0, 0).
    for step in STEPS[:4]:
        net = play(SeededSingleElimination(rank_by="net_wins"), [5, 0, 10, 6], Soft(), step)
        assert net.ranks.tolist() == [1, 3, 0, 2]
        depth = play(SeededSingleElimination(), [5, 0, 10, 6], Soft(), step)  # the default: the paper's depth
        assert depth.ranks.tolist() == [2, 3, 0, 1]


def test_double_elimination_depth_and_net_wins_disagree_after_a_narrow_win():
    # Every draw: 1 beats 0 once by 5/8 (+1/4) and loses twice outright (-2): net -7/4; 0 loses once outright and
    # once by 5/8: net -5/4, so net wins put 0 above 1. But 0 goes out in round 1 and 1 in round 2 (depth 1 < 2);
    # 5 loses only to 10, in the winners' bracket and in the grand final (depth 3); 10 is champion (4).
    for step in STEPS:
        net = play(DoubleElimination(rank_by="net_wins"), [5, 0, 10, 1], Soft(), step)
        assert net.ranks.tolist() == [1, 2, 0, 3]
        assert play(DoubleElimination(), [5, 0, 10, 1], Soft(), step).ranks.tolist() == [1, 3, 0, 2]  # depth


def test_depth_a_tie_decides_no_depth():
    # The two 3s are seeds 1 and 2 and tie in the final: one goes on to keep the bracket going, but both get the
    # champion's depth (2) and have the same mean share (1, 1, 1/2): level, whichever seed the draw made first.
    for step in STEPS[:4]:
        assert play(SeededSingleElimination(), [1, 3, 0, 3], step=step).ranks.tolist() == [
            2, 0.5, 3, 0.5]


class Failing:
    orders = 1

    def compare_many(self, items):
        return [None] * len(items)


@pytest.mark.parametrize("topology", [SeededSingleElimination(), DoubleElimination()],
                         ids=lambda t: t.name)
@pytest.mark.parametrize("k", [2, 4, 5, 8])
def test_depth_with_a_failing_judge_gives_equal_rewards(topology, k):
    result = Arena(Failing()).run(topology, "q", [str(i) for i in range(k)], step=1)
    assert result.failures == len(result.matches) > 0
    assert np.ptp(result.scores) == 0 and np.all(result.ranks == (k - 1) / 2)
    assert np.ptp(rank_z(result)) == 0 and np.ptp(tournament_reward(result)) == 0


class InOrder:
    """A draw that never shuffles: Swiss pairs and gives its byes in index order."""

    def permutation(self, k):
        return np.arange(k)


def drive(topology, strengths, judge):
    """Play a topology's generator directly with the `InOrder` draw; its `Standing`."""
    gen = topology.play(len(strengths), InOrder())
    request = next(gen)
    try:
        while True:
            request = gen.send(judge.compare_many([("q", str(strengths[i]), str(strengths[j]))
                                                   for i, j in request.pairs]))
    except StopIteration as stop:
        return stop.value


def test_swiss_buchholz_sum_penalises_the_bye_holder():
    # K=3, two rounds. Round 0: 6 has the bye (+1/2), 0 meets 4 (0/1): points [0, 1, 1/2]. Round 1: the bye goes
    # to 0 (+1/2), 4 meets 6 (1/4 for 4): points [1/2, 5/4, 5/4]. Buchholz of 0, 4, 6 (opponents 4 / 0, 6 / 4):
    # mean [5/4, 7/8, 5/4] puts 6 first; the paper's sum [5/4, 7/4, 5/4] puts 4 first (6 met one opponent fewer).
    for buchholz, tiebreak, ranks in (("mean", [5 / 4, 7 / 8, 5 / 4], [2, 1, 0]),
                                      ("sum", [5 / 4, 7 / 4, 5 / 4], [2, 0, 1])):
        standing = drive(Swiss(buchholz=buchholz), [0, 4, 6], Soft())
        assert standing.scores.tolist() == [1 / 2, 5 / 4, 5 / 4]
        assert standing.tiebreak.tolist() == tiebreak
        assert ranks_from(standing.scores, standing.tiebreak).tolist() == ranks


class Halves:
    """What the arena hands a topology for a failed match: a half for each side."""

    def compare_many(self, items):
        return [0.5] * len(items)


def test_swiss_buchholz_sum_does_not_let_a_failing_judge_rank_the_bye_holders_last():
    # K=5, three rounds, three distinct byes; every match and bye is worth 1/2, so everyone has 3/2 points. The
    # two who never had a bye met three opponents (Buchholz sum 9/2), the bye holders two (3): the tiebreak alone
    # would rank by the draw, so a group with no decided match is levelled, under either rule.
    standing = drive(Swiss(), [0, 1, 2, 3, 4], Halves())
    assert np.ptp(standing.scores) == 0 and np.ptp(standing.tiebreak) > 0  # what the topology alone says
    for swiss in (Swiss(), Swiss(buchholz="mean")):
        assert np.all(Arena(Failing()).run(swiss, "q", list("01234")).ranks == 2)


class FirstThenB:
    """A sampling judge, caricatured: its first verdict picks "a", every later one "b"."""

    def __init__(self):
        self.requests = 0

    def select_winners_many(self, requests):
        out = []
        for r in requests:
            out.append([r.candidates.index("a" if self.requests == 0 else "b")])
            self.requests += 1
        return out


def test_multi_round_fresh_repeats_ask_the_judge_in_every_repeat():
    differ = 0
    for step in STEPS:  # K=2, M=4: one group per repeat, shown in one of two orders
        ours, paper = StrengthGroup(), StrengthGroup()
        cached = Arena(group=ours).run(MultiRound(2, 1, 1, 4, fresh_repeats=False), "q", ["0", "1"], step)
        fresh = Arena(group=paper).run(MultiRound(2, 1, 1, 4), "q", ["0", "1"], step)  # the default: fresh
        # a deterministic judge: the same scores; the paper's rule asks 4 times, ours once per order shown
        assert cached.scores.tolist() == fresh.scores.tolist() == [0, 4]
        assert paper.requests == fresh.group_calls == 4 and not any(g.cached for g in fresh.group_matches)
        assert ours.requests == cached.group_calls == len({g.members for g in cached.group_matches}) <= 2
        # a sampling judge: fresh repeats see its verdicts a, b, b, b; ours re-use "a" in every repeat that shows
        # the first repeat's order
        fresh = Arena(group=FirstThenB()).run(MultiRound(2, 1, 1, 4), "q", ["a", "b"], step)
        assert fresh.scores.tolist() == [1, 3]
        cached = Arena(group=FirstThenB()).run(MultiRound(2, 1, 1, 4, fresh_repeats=False), "q", ["a", "b"], step)
        n = sum(g.members == cached.group_matches[0].members for g in cached.group_matches)
        assert cached.scores.tolist() == [n, 4 - n]
        differ += n != 1
    assert differ


def test_the_defaults_are_the_papers_rules():
    assert SeededSingleElimination().rank_by == DoubleElimination().rank_by == "depth"
    assert Swiss().buchholz == "sum" and MultiRound().fresh_repeats is True
