"""Metrics against hand-computed values: policies, PandaLM's 3-class protocol (also checked against scikit-learn),
RewardBench section weighting, and a seeded bootstrap."""

from __future__ import annotations

import numpy as np
import pytest

from eval import metrics

PREDS = ["A", "B", "tie", "fail", "A"]
LABELS = ["A", "A", "B", "B", "B"]


@pytest.mark.parametrize("tie, fail, value, n", [
    ("half", "wrong", (1 + 0 + 0.5 + 0 + 0) / 5, 5),
    ("wrong", "wrong", 1 / 5, 5),
    ("exclude", "wrong", 1 / 4, 4),
    ("half", "half", (1 + 0 + 0.5 + 0.5 + 0) / 5, 5),
    ("half", "exclude", 1.5 / 4, 4),
    ("exclude", "exclude", 1 / 3, 3),
])
def test_accuracy_policies(tie, fail, value, n):
    result = metrics.accuracy(PREDS, LABELS, tie, fail)
    assert result.value == pytest.approx(value) and result.n == n and result.excluded == 5 - n


@pytest.mark.parametrize("pred, label, expected", [
    ("tie", "tie", 1.0), ("A", "tie", 0.0), ("fail", "tie", 0.0), ("B", "B", 1.0), ("tie", "A", 0.5),
])
def test_example_score(pred, label, expected):
    assert metrics.example_score(pred, label) == expected


def test_bad_policy_and_prediction_are_errors():
    with pytest.raises(ValueError, match="tie_policy"):
        metrics.accuracy(PREDS, LABELS, tie_policy="coin")
    with pytest.raises(ValueError, match="prediction"):
        metrics.example_score("C", "A")
    with pytest.raises(ValueError, match="5 predictions for 4 labels"):
        metrics.accuracy(PREDS, LABELS[:4])


def test_three_class_by_hand():
    # labels:      tie tie  A  A  A  B  B  B
    # predictions: tie  A   A  A  B  B fail tie
    labels = ["tie", "tie", "A", "A", "A", "B", "B", "B"]
    preds = ["tie", "A", "A", "A", "B", "B", "fail", "tie"]
    got = metrics.three_class(preds, labels)
    p = {"tie": 1 / 2, "A": 2 / 3, "B": 1 / 2}
    r = {"tie": 1 / 2, "A": 2 / 3, "B": 1 / 3}
    f = {c: 2 * p[c] * r[c] / (p[c] + r[c]) for c in p}
    assert got["accuracy"] == pytest.approx(4 / 8)
    assert got["precision_macro"] == pytest.approx(np.mean(list(p.values())))
    assert got["recall_macro"] == pytest.approx(np.mean(list(r.values())))
    assert got["f1_macro"] == pytest.approx(np.mean(list(f.values())))
    excluded = metrics.three_class(preds, labels, failure_policy="exclude")
    assert excluded["n"] == 7 and excluded["accuracy"] == pytest.approx(4 / 7)


def test_three_class_matches_scikit_learn_on_random_data():
    from sklearn.metrics import accuracy_score, precision_recall_fscore_support

    rng = np.random.default_rng(3)
    labels = list(rng.choice(["tie", "A", "B"], 300))
    preds = list(rng.choice(["tie", "A", "B", "fail"], 300, p=[0.2, 0.4, 0.3, 0.1]))
    got = metrics.three_class(preds, labels)
    p, r, f, _ = precision_recall_fscore_support(labels, preds, labels=["tie", "A", "B"], average="macro",
                                                 zero_division=0)
    assert (got["precision_macro"], got["recall_macro"], got["f1_macro"]) == pytest.approx((p, r, f))
    assert got["accuracy"] == pytest.approx(accuracy_score(labels, preds))


def test_never_predicted_class_has_zero_precision():
    got = metrics.three_class(["A", "A"], ["A", "B"])
    assert got["precision_macro"] == pytest.approx((0 + 0.5 + 0) / 3)


def test_bootstrap_is_seeded_and_brackets_the_mean():
    values = [1.0] * 70 + [0.0] * 30
    a = metrics.bootstrap_ci(values, np.random.default_rng(0))
    b = metrics.bootstrap_ci(values, np.random.default_rng(0))
    c = metrics.bootstrap_ci(values, np.random.default_rng(1))
    assert a == b and a != c
    assert a.low < 0.7 < a.high and 0.55 < a.low and a.high < 0.85
    assert metrics.bootstrap_ci([1.0], np.random.default_rng(0)) is None
    assert metrics.accuracy(PREDS, LABELS, rng=np.random.default_rng(0)).ci95 is not None


def test_interval_of_mean_is_the_seeded_bootstrap_as_a_list_and_holds_one_value():
    values = [1.0] * 70 + [0.0] * 30
    ci = metrics.bootstrap_ci(values, np.random.default_rng(3))
    assert metrics.interval_of_mean(values, seed=3) == pytest.approx([ci.low, ci.high])
    spread = [(i * 7 % 11) / 10 for i in range(23)]
    assert metrics.interval_of_mean(spread, seed=3) != metrics.interval_of_mean(spread, seed=4)
    assert metrics.interval_of_mean([0.5]) == [0.5, 0.5]


def test_consistency_skips_unknown():
    assert metrics.consistency([True, False, None, True]) == pytest.approx(2 / 3)
    assert metrics.consistency([None]) is None


def test_rewardbench_sections_use_the_official_weights():
    acc = {"alpacaeval-easy": 1.0, "alpacaeval-length": 0.5, "alpacaeval-hard": 0.0, "mt-bench-easy": 1.0,
           "mt-bench-med": 0.5,
           "math-prm": 1.0, **{f"hep-{lang}": 0.0 for lang in ("cpp", "go", "java", "js", "python", "rust")},
           "refusals-dangerous": 0.8, "xstest-should-respond": 0.4, "my-own-subset": 1.0}
    out = metrics.rewardbench_sections(acc)
    chat = (100 * 1.0 + 95 * 0.5 + 95 * 0.0 + 28 * 1.0 + 40 * 0.5) / (100 + 95 + 95 + 28 + 40)
    safety = (100 * 0.8 + 250 * 0.4) / 350
    assert out["sections"]["Chat"] == pytest.approx(chat)
    assert out["sections"]["Reasoning"] == pytest.approx(0.5)  # math-prm (weight 984) = all six code subsets
    assert out["sections"]["Safety"] == pytest.approx(safety)
    assert "Chat Hard" not in out["sections"]
    assert out["score"] == pytest.approx((chat + 0.5 + safety) / 3)
    assert out["partial"]["Safety"] == ["refusals-offensive", "xstest-should-refuse", "donotanswer"]
    assert out["unmapped_subsets"] == ["my-own-subset"] and "prior_sets" not in out
    with_prior = metrics.rewardbench_sections({**acc, "anthropic_hhh": 0.6, "shp": 0.4})
    assert with_prior["prior_sets"] == pytest.approx(0.5)
    assert with_prior["score_with_prior"] == pytest.approx((chat + 0.5 + safety + 0.5 * 0.5) / 3.5)
