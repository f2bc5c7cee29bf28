"""eval.judge_table: the rule rows (the longer answer, a reference verdict), the evidence coverage, the rows an
earlier results file keeps, and the markdown table of the real-text judge."""

import json

import pytest

from eval.judge_table import coverage, earlier_rows, longer, probe_curve, reference_row, table


def pair(i: int, label: str, a: str, b: str, kind: str, length: str) -> dict:
    return {"id": str(i), "label": label, "answer_a": a, "answer_b": b,
            "meta": {"source": f"wiki/{kind}", "facts": [{"attribute": "length", "value": length}]}}


TEST = [pair(0, "A", "one two three", "one", "numbers", "sentence"),  # the longer answer is right
        pair(1, "A", "one", "one two", "swap", "short"),  # the longer answer is wrong
        pair(2, "B", "one two", "three four", "numbers", "lead")]  # equal lengths: a tie


def test_the_longer_answer_wins_and_equal_lengths_tie():
    assert [longer(e) for e in TEST] == ["A", "B", "tie"]


def test_a_rules_row_is_right_per_pair_and_broken_down_by_kind_and_length():
    row = reference_row(TEST, longer)
    assert row["accuracy"] == pytest.approx(1 / 3) and row["n"] == 3 and row["ties"] == pytest.approx(1 / 3)
    assert row["ci95"][0] <= row["accuracy"] <= row["ci95"][1]
    assert row["by_kind"] == {"numbers": {"n": 2, "accuracy": 0.5}, "swap": {"n": 1, "accuracy": 0.0}}
    assert row["by_length"]["lead"] == {"n": 1, "accuracy": 0.0}
    assert reference_row(TEST, lambda e: e["label"])["ci95"] == [1.0, 1.0]


def test_coverage_is_the_share_of_pairs_whose_evidence_separates_the_answers():
    assert coverage(TEST, {"0": True, "1": True, "2": False}) == {
        "all": pytest.approx(2 / 3), "by_kind": {"numbers": 0.5, "swap": 1.0},
        "by_length": {"lead": 0.0, "sentence": 1.0, "short": 1.0}}


def test_rows_of_an_earlier_call_stay_only_on_the_same_warm_up_and_when_not_judged_again(tmp_path):
    saved = tmp_path / "results.json"
    assert earlier_rows(saved, {"lr": 1}, ["warm-up"]) == {}
    saved.write_text(json.dumps({"warm-up": {"lr": 1}, "rows": {"warm-up": 1, "zero-shot": 2}}))
    assert earlier_rows(saved, {"lr": 1}, ["warm-up"]) == {"zero-shot": 2}
    assert earlier_rows(saved, {"lr": 2}, ["warm-up"]) == {}


def test_the_table_shows_a_judge_row_then_the_rules_with_dashes_where_a_rule_has_no_value():
    rule = reference_row(TEST, longer)
    judged = {**reference_row(TEST, lambda e: e["label"]), "same_letter": 0.0, "single_order": 0.75,
              "unparsed_orders": 0.0, "searches": 2.0, "seconds_per_pair": 1.0}
    results = {"rows": {"warm-up": judged}, "references": {"longer answer wins": rule},
               "coverage": coverage(TEST, {"0": True, "1": True, "2": False})}
    lines = table(results).splitlines()
    assert lines[0] == ("| judge | both orders (95 % CI) | numbers | swap | sentence | short | lead | same letter | "
                        "ties | single order | unparsed orders | searches / pair |")
    assert lines[2] == ("| warm-up | 1.00 (1.00-1.00) | 1.00 | 1.00 | 1.00 | 1.00 | 1.00 | 0.00 | 0.00 | 0.75 | "
                        "0.00 | 2.00 |")
    assert lines[3].startswith("| longer answer wins | 0.33 (")
    assert lines[3].endswith("| 0.50 | 0.00 | 1.00 | 0.00 | 0.00 | - | 0.33 | - | - | - |")
    assert lines[-1].startswith("Evidence coverage (the search shows words that separate the answers): 0.67 of 3 "
                                "test pairs; by kind numbers 0.50, swap 1.00; by length lead 0.00,")


def test_the_probe_curve_has_a_line_per_probe_with_kinds_and_lengths_in_order():
    probes = [{"step": 40, "loss": 0.71234, "pairs": 2, "both_orders": 0.0, "same_letter": 1.0, "single_order": 0.5,
               "by_kind": {"swap": 0.0, "date": 0.0}, "by_length": {"short": 0.0, "sentence": 0.0}},
              {"step": 80, "loss": None, "pairs": 2, "both_orders": 0.5, "same_letter": 0.5, "single_order": 0.75,
               "by_kind": {"swap": 1.0}, "by_length": {"sentence": 1.0}}]
    lines = probe_curve({"probe": probes}).splitlines()
    assert lines[0] == ("| step | loss | both orders (2 pairs) | same letter | single order | date | swap | sentence "
                        "| short |")
    assert lines[2] == "| 40 | 0.712 | 0.00 | 1.00 | 0.50 | 0.00 | 0.00 | 0.00 | 0.00 |"
    assert lines[3] == "| 80 | - | 0.50 | 0.50 | 0.75 | - | 1.00 | 1.00 | - |"
    assert probe_curve({"probe": []}).startswith("No probe")
