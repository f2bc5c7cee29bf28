"""Eq. 2 scoring and the hybrid reward (Eq. 1, 3) against hand-computed cases; the TRL reward callable on the toy
scorer logs every component; a failed rating is a failure, never a default."""

from __future__ import annotations

import json
import math

import pytest

from openrm.rubrics import (
    HybridWeights,
    Rating,
    Rubric,
    RubricGeneratorReward,
    hybrid_reward,
    normalise_rating,
    rubric_score,
)
from openrm.rubrics.scorer import score_reports
from toy.rubric_scorer import ToyScorer

R3 = Rubric.of([("a", "x", 3.0), ("b", "y", 1.0)])


@pytest.mark.parametrize("rating,expected", [(1, 0.0), (10, 1.0), (4, 1 / 3), (5.5, 0.5)])
def test_normalise_rating(rating, expected):
    assert math.isclose(normalise_rating(rating), expected)


@pytest.mark.parametrize("bad", [0, 11, -3])
def test_normalise_rating_refuses_out_of_scale(bad):
    with pytest.raises(ValueError):
        normalise_rating(bad)


@pytest.mark.parametrize("rubric,ratings,expected", [
    (R3, [10, 1], 0.75),                                     # (3*1 + 1*0) / 4
    (R3, [7, 4], (3 * 6 / 9 + 1 * 3 / 9) / 4),                # = 0.5833...
    (Rubric.of([("a", "x", 2), ("b", "y", 2), ("c", "z", 4)]), [1, 10, 4], (0 + 2 * 1 + 4 / 3) / 8),
    (R3, [10, None], None),                                  # a failed item: no score at all
])
def test_eq2_by_hand(rubric, ratings, expected):
    got = rubric_score(rubric, ratings)
    assert (got is None and expected is None) or math.isclose(got, expected)


def test_eq2_refuses_a_wrong_number_of_ratings():
    with pytest.raises(ValueError):
        rubric_score(R3, [5])


W = HybridWeights()


@pytest.mark.parametrize("weights,args,total,parts", [
    (W, dict(valid=True, s_preferred=0.8, s_rejected=0.2, quality=10), 2.0, (1.0, 0.0, 1.0)),
    (W, dict(valid=True, s_preferred=0.2, s_rejected=0.8, quality=4), 1 / 3, (0.0, 0.0, 1 / 3)),
    (W, dict(valid=True, s_preferred=0.5, s_rejected=0.5, quality=1), 0.0, (0.0, 0.0, 0.0)),  # a tie is 0
    (W, dict(valid=False, error="rubric: not JSON"), -1.0, (0.0, -1.0, 0.0)),
    (HybridWeights(1.0, 0.5, 2.0, -3.0), dict(valid=False), -1.5, (0.0, -3.0, 0.0)),
    (HybridWeights(2.0, 1.0, 0.5), dict(valid=True, s_preferred=0.9, s_rejected=0.1, quality=7), 2 + 0.5 * 6 / 9,
     (1.0, 0.0, 6 / 9)),
])
def test_hybrid_reward_by_hand(weights, args, total, parts):
    b = hybrid_reward(weights, **args)
    assert math.isclose(b.total, total, abs_tol=1e-12) and b.valid == args["valid"]
    assert all(math.isclose(x, y, abs_tol=1e-12) for x, y in zip((b.preference, b.format, b.judge), parts,
                                                                  strict=True))


def test_missing_components_count_zero_and_are_flagged_only_when_weighted():
    b = hybrid_reward(W, True, None, 0.3, None)
    assert b.total == 0.0 and b.preference_failed and b.judge_failed
    b = hybrid_reward(HybridWeights(judge=0.0), True, 0.9, 0.3, None)
    assert b.total == 1.0 and not b.judge_failed


@pytest.mark.parametrize("kwargs", [dict(preference=-1.0), dict(format_penalty=0.0), dict(format_penalty=0.5)])
def test_weights_are_validated(kwargs):
    with pytest.raises(ValueError):
        HybridWeights(**kwargs)


ENTITIES = frozenset({"Velaen", "Thedaeth", "Zanniar"})
QUERY = "Write a report on Velaen."
PREFERRED = "Velaen was born in 1750. Velaen was a physician."
REJECTED = "Zanniar was born in 1969. Zanniar was a botanist."


def _rubric(*items):
    return [{"role": "assistant", "content": json.dumps([{"title": t, "description": d, "weight": w}
                                                         for t, d, w in items])}]


def test_toy_scorer_follows_its_rule():
    scorer = ToyScorer(ENTITIES)
    specific = Rubric.of([("Covers Velaen", "Says who Velaen was.", 3), ("Clarity", "Easy to read.", 1)])
    general = Rubric.of([("Clarity", "Easy to read.", 1)])
    s = score_reports(scorer, [(QUERY, specific, PREFERRED), (QUERY, specific, REJECTED),
                               (QUERY, general, PREFERRED), (QUERY, general, REJECTED)])
    assert [x.ratings for x in s] == [(10, 5), (1, 5), (5,), (5,)]
    assert math.isclose(s[0].score, 0.75 + 0.25 * 4 / 9) and math.isclose(s[1].score, 0.25 * 4 / 9)
    assert s[2].score == s[3].score


class _Flaky(ToyScorer):
    """Fails every item whose report mentions Thedaeth, and every rubric-quality rating."""

    def rate_items(self, asks):
        return [Rating(None, "http 500") if "Thedaeth" in a.report else r
                for a, r in zip(asks, super().rate_items(asks), strict=True)]

    def judge_rubrics(self, asks):
        return [Rating(None, "bad_json") for _ in asks]


def test_trl_reward_logs_every_component_and_counts_failures(tmp_path):
    logged: dict[str, list[float]] = {}
    reward = RubricGeneratorReward(_Flaky(ENTITIES), HybridWeights(), log_path=str(tmp_path / "r.jsonl"))
    completions = [
        _rubric(("Covers Velaen", "About Velaen.", 2), ("Clarity", "Readable.", 1)),  # right: pref 1
        _rubric(("Clarity", "Readable.", 1)),                                           # generic: tie, pref 0
        [{"role": "assistant", "content": "[{\"title\": \"x\""}],                        # broken: -1
        _rubric(("Covers Velaen", "About Velaen.", 2)),                                  # ratings fail (Thedaeth)
    ]
    rejected = [REJECTED, REJECTED, REJECTED, "Thedaeth is a city."]
    out = reward([None] * 4, completions, query=[QUERY] * 4, preferred=[PREFERRED] * 4, rejected=rejected,
                 log_metric=lambda k, v: logged.setdefault(k, []).append(v))
    assert out == [1.0, 0.0, -1.0, 0.0]  # every judge rating failed: R_judge counts 0
    assert {k: v[0] for k, v in logged.items()} == {
        "rubric/valid_rate": 0.75, "rubric/format": -0.25, "rubric/preference": 1 / 3, "rubric/judge": 0.0,
        "rubric/total": 0.0, "rubric/preference_failures": 1.0, "rubric/judge_failures": 3.0,
        "rubric/items": 4 / 3}
    lines = [json.loads(x) for x in (tmp_path / "r.jsonl").read_text().splitlines()]
    assert [x["preference_failed"] for x in lines] == [False, False, False, True]
    assert lines[2]["error"].startswith("rubric: not JSON")


def test_trl_reward_names_missing_columns():
    reward = RubricGeneratorReward(ToyScorer(ENTITIES))
    with pytest.raises(KeyError, match="preferred"):
        reward([None], [_rubric(("a", "b", 1))], query=[QUERY], rejected=[REJECTED])
