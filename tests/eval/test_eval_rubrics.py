"""eval.rubrics: on a five-triplet fixture with a scripted scorer, every method's preference accuracy and paired
Cohen's d equal a hand count (the numbers below were worked out on paper from the tables here); the CLI writes the
report (markdown + json) on toy triplets."""

from __future__ import annotations

import json
import math

import pytest

from eval import rubric_methods as ev
from openrm.rubrics import Rating
from openrm.rubrics.prompts import GENERAL_RUBRIC
from openrm.rubrics.triplets import Triplet

T = [Triplet(f"t{i}", f"q{i}", f"p{i}", f"r{i}") for i in range(1, 6)]
# generated rubrics (one per triplet) and the scorer's item ratings {report: {item title: rating}}
GENERATED = [['[{"title": "A", "description": "a", "weight": 1}]'],
             ['[{"title": "A", "description": "a", "weight": 1}, {"title": "B", "description": "b", "weight": 3}]'],
             ['[{"title": "A", "description": "a", "weight": 1}]'],
             ['[{"title": "A", "description": "a"}]'],                       # invalid: no weight
             ['```json\n[{"title": "A", "description": "a", "weight": 2}]\n```']]
ITEMS = {"p1": {"A": 10}, "r1": {"A": 1},           # d = 1
         "p2": {"A": 4, "B": 7}, "r2": {"A": 7, "B": 4},  # S+ = (3/9 + 3*6/9)/4 = 7/12, S- = 5/12: d = 1/6
         "p3": {"A": 1}, "r3": {"A": 4},            # d = -1/3
         "p5": {"A": 5}, "r5": {"A": 5}}            # d = 0 (a tie)
GENERAL = {"p1": 6, "r1": 3, "p2": 2, "r2": 2, "p3": 3, "r3": 8, "p4": 9, "r4": 1, "p5": None, "r5": 4}
POINTWISE = {"p1": 7, "r1": 3, "p2": 5, "r2": 6, "p3": 8, "r3": 8, "p4": 9, "r4": 2, "p5": 4, "r5": 1}
# (report in position A, report in position B) -> verdict
PAIRWISE = {("p1", "r1"): "A", ("r1", "p1"): "B", ("p2", "r2"): "A", ("r2", "p2"): "A", ("p3", "r3"): "B",
            ("r3", "p3"): "A", ("p4", "r4"): "A", ("r4", "p4"): None, ("p5", "r5"): "A", ("r5", "p5"): "B"}


class Scripted:
    def rate_items(self, asks):
        out = []
        for a in asks:
            value = ITEMS.get(a.report, {}).get(a.item.title) if a.item.title in ("A", "B") else GENERAL[a.report]
            out.append(Rating(value) if value is not None else Rating(None, "scripted failure"))
        return out

    def judge_rubrics(self, asks):
        raise AssertionError("evaluation never judges rubrics")

    def rate_reports(self, asks):
        return [Rating(POINTWISE[a.report]) for a in asks]

    def compare(self, asks):
        return [Rating(v) if (v := PAIRWISE[(a.report_a, a.report_b)]) else Rating(None, "http 500") for a in asks]


@pytest.mark.parametrize("method,accuracy,cohens_d,unscored,valid", [
    # (1 + 1 + 0 + 0 + 1/2) / 5; d over [1, 1/6, -1/3, 0]: mean 5/24, sd 0.567238
    ("generated", 0.5, 0.367277, 1, 0.8),
    # every general item has the report's one rating, so d_i = (g+ - g-)/9: [1/3, 0, -5/9, 8/9], p5 fails
    ("general", 0.5, 0.275396, 1, None),
    # d_i = [4, -1, 0, 7, 3]: mean 2.6, sd sqrt(41.2 / 4)
    ("pointwise", 0.7, 0.810131, 0, None),
    # per triplet (both orders): 1, 1/2 (position bias), 0, 1/2 (one verdict failed), 1
    ("pairwise", 0.6, None, 1, None),
])
def test_each_method_equals_the_hand_count(method, accuracy, cohens_d, unscored, valid):
    assert {"Relevance", "Depth"} <= {it.title for it in GENERAL_RUBRIC.items}
    result = ev.evaluate(T, Scripted(), [method], GENERATED)[method]
    assert result.rows == 5 and result.unscored == unscored
    assert math.isclose(result.accuracy, accuracy, abs_tol=1e-9)
    assert (result.cohens_d is None and cohens_d is None) or math.isclose(result.cohens_d, cohens_d, abs_tol=1e-5)
    assert result.valid_rate == valid


@pytest.mark.parametrize("deltas,accuracy,d,scored", [
    ([0.5, 0.5], 1.0, None, 1.0),            # sd 0: undefined
    ([None, 0.2, -0.2], 1 / 3, 0.0, 0.5),    # the unscored row counts 0 overall, not among the scored
    ([0.1], 1.0, None, 1.0),                 # one row: undefined
    ([None, None], 0.0, None, None),         # nothing scored
])
def test_metric_edge_cases(deltas, accuracy, d, scored):
    assert math.isclose(ev.preference_accuracy(deltas), accuracy)
    assert ev.paired_cohens_d(deltas) == d
    assert ev.scored_accuracy(deltas) == scored


def test_cli_writes_the_report_on_toy_triplets(tmp_path):
    from trl import TrlParser

    from toy.rubric_task import ToyRubricTask
    from toy.world import ToyWorld

    path = tmp_path / "heldout.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in ToyRubricTask(ToyWorld(0), 16).triplets("heldout", 2)))
    (args,) = TrlParser(ev.RubricEvalArguments).parse_args_into_dataclasses([
        "--triplets", str(path), "--out", str(tmp_path / "out"), "--methods", "general,pointwise,pairwise",
        "--scorer", "toy"])
    body = ev.run(args)
    saved = json.loads((tmp_path / "out/report.json").read_text())
    assert saved["methods"] == body["methods"] and set(saved["methods"]) == {"general", "pointwise", "pairwise"}
    # the toy rule rates every general item 5: all ties, accuracy exactly 1/2 and d undefined
    assert saved["methods"]["general"]["accuracy"] == 0.5 and saved["methods"]["general"]["cohens_d"] is None
    assert saved["methods"]["general"]["rows"] == 16
    assert "| pointwise | 16 |" in (tmp_path / "out/report.md").read_text()


def test_generated_needs_a_generator():
    with pytest.raises(ValueError, match="generator"):
        ev.RubricEvalArguments(triplets="x.jsonl")
