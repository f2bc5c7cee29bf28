"""Rubric rewards for policies: a rubric per prompt is generated once and cached on disk (a second book generates
nothing), an unparseable one falls back to the general rubric (counted), the pointwise reward equals Eq. 2 under the
toy rule, and the `rubric` column reaches a group judge's prompt."""

from __future__ import annotations

import json
import math

from openrm.rubrics.policy_reward import RubricBook, RubricScoreReward, add_rubric_column
from openrm.rubrics.record import parse_rubric
from toy.rubric_scorer import ToyScorer

GOOD = json.dumps([{"title": "Covers Velaen", "description": "About Velaen.", "weight": 3},
                   {"title": "Clarity", "description": "Easy to follow.", "weight": 1}])


class CountingGenerator:
    def __init__(self):
        self.asked: list[str] = []

    def generate(self, queries, samples, temperature, seed):
        self.asked += list(queries)
        return [[GOOD if "Velaen" in q else "not a rubric"] for q in queries]


def test_rubrics_are_generated_once_and_cached(tmp_path):
    gen = CountingGenerator()
    book = RubricBook(gen, tmp_path / "rubrics.jsonl")
    queries = ["Write about Velaen.", "Write about Zanniar.", "Write about Velaen."]
    rubrics = book.rubrics(queries)
    assert gen.asked == ["Write about Velaen.", "Write about Zanniar."]
    assert rubrics[0].items[0].title == "Covers Velaen" and rubrics[0] == rubrics[2]
    assert rubrics[1].items[0].title == "Relevance" and book.fallbacks == 1  # the general rubric stood in
    again = CountingGenerator()
    assert RubricBook(again, tmp_path / "rubrics.jsonl").rubrics(queries) == rubrics and again.asked == []


def test_pointwise_reward_is_eq2_under_the_toy_rule(tmp_path):
    book = RubricBook(CountingGenerator(), tmp_path / "r.jsonl")
    reward = RubricScoreReward(ToyScorer({"Velaen", "Zanniar"}), book)
    logged = {}
    out = reward(["p"] * 3, [[{"role": "assistant", "content": t}] for t in
                             ("Velaen was a physician.", "Zanniar was a botanist.", "Velaen again.")],
                 question=["Write about Velaen."] * 3, log_metric=logged.__setitem__)
    # item 1 (weight 3/4): 10 when Velaen is mentioned, else 1; item 2 (1/4): always 5
    assert all(math.isclose(a, b) for a, b in zip(out, [0.75 + 0.25 * 4 / 9, 0.25 * 4 / 9, 0.75 + 0.25 * 4 / 9],
                                                  strict=True))
    assert logged == {"rubric_policy/failed": 0.0, "rubric_policy/fallback_rubrics": 0.0}


def test_rubric_column_reaches_the_group_judge_prompt(tmp_path):
    from openrm.tournament.judges import GroupRequest
    from openrm.tournament.rubric_judge import judge_messages

    rows = add_rubric_column([{"question": "Write about Velaen.", "prompt": "x"}],
                             RubricBook(CountingGenerator(), tmp_path / "r.jsonl"))
    assert parse_rubric(rows[0]["rubric"]).items[0].title == "Covers Velaen"  # JSON: what the scorer reads
    messages = judge_messages(GroupRequest(rows[0]["question"], rows[0]["rubric"], ("a", "b", "c"), 1))
    assert "## Rubric\n1. [weight 0.75] Covers Velaen: About Velaen." in messages[-1]["content"]  # shown rendered


def test_implicit_scoring_rates_once_against_the_whole_rubric(tmp_path):
    import pytest

    from openrm.rubrics.prompts import rate_report_messages
    from openrm.rubrics.scorer import Rating

    class Recording:
        def __init__(self):
            self.asks = []

        def rate_reports(self, asks):
            self.asks += list(asks)
            return [Rating(10 if "Velaen" in a.report else 1) if "fail" not in a.report else Rating(None, "no JSON")
                    for a in asks]

        def rate_items(self, asks):
            raise AssertionError("implicit scoring asks one rating per completion, not one per item")

    scorer = Recording()
    reward = RubricScoreReward(scorer, RubricBook(CountingGenerator(), tmp_path / "r.jsonl"), scoring="implicit")
    out = reward(["p"] * 3, ["Velaen was a physician.", "Someone else.", "fail"], question=["Write about Velaen."] * 3)
    assert out == [1.0, 0.0, 0.0] and len(scorer.asks) == 3  # 10 -> 1, 1 -> 0, a failed rating -> 0
    assert all(a.rubric is not None and a.rubric.items[0].title == "Covers Velaen" for a in scorer.asks)
    user = rate_report_messages("q", "r", scorer.asks[0].rubric)[-1]["content"]
    assert "Covers Velaen" in user and "whole rubric" in user
    assert "RUBRIC" not in rate_report_messages("q", "r")[-1]["content"]  # the pointwise baseline: no rubric
    with pytest.raises(ValueError, match="scoring must be one of"):
        RubricScoreReward(scorer, scoring="holistic")
