"""RM-Bench: each prompt's 3 chosen × 3 rejected style grid becomes nine pairs, and easy / normal / hard accuracy
follow the official definition (hard: the rejected answer is the more styled one)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from eval import loaders, metrics
from eval.run import main

FIX = Path(__file__).parent / "fixtures"


def test_rows_become_nine_placed_pairs_and_bad_rows_are_skipped():
    loaded = loaders.load_benchmark("rmbench", FIX / "rmbench.json", seed=0)
    assert len(loaded.examples) == 18
    assert [s.reason for s in loaded.skipped] == ["field 'chosen' must be a list of 3 style variants"]
    rows = {str(r["id"]): r for r in json.loads((FIX / "rmbench.json").read_text())}
    for e in loaded.examples:
        m = e["meta"]
        chosen = e["answer_a"] if e["label"] == "A" else e["answer_b"]
        rejected = e["answer_b"] if e["label"] == "A" else e["answer_a"]
        assert chosen == rows[m["rmbench_id"]]["chosen"][m["chosen_style"]]
        assert rejected == rows[m["rmbench_id"]]["rejected"][m["rejected_style"]]
        assert e["id"] == f"{m['rmbench_id']}/c{m['chosen_style']}r{m['rejected_style']}"
    assert {e["domain"] for e in loaded.examples} == {"rmbench/math", "rmbench/safety"}
    assert {e["label"] for e in loaded.examples} == {"A", "B"}


@pytest.mark.parametrize("rule, easy, normal, hard", [
    ("always right", 1.0, 1.0, 1.0),
    ("prefers the more styled answer", 1.0, 0.5, 0.0),  # same style: a tie, half credit
    ("prefers the less styled answer", 0.0, 0.5, 1.0),
])
def test_easy_normal_hard_by_hand(rule, easy, normal, hard):
    def score(i, j):
        if rule == "always right":
            return 1.0
        if i == j:
            return 0.5
        return float(i > j) if rule == "prefers the more styled answer" else float(i < j)

    got = metrics.rmbench_accuracies([("chat", i, j, score(i, j)) for i in range(3) for j in range(3)])
    assert got["per_domain"]["chat"]["easy"] == easy
    assert got["per_domain"]["chat"]["normal"] == normal
    assert got["per_domain"]["chat"]["hard"] == hard
    assert got["overall"]["hard"] == hard


def test_official_matrix_orientation_and_domain_mean():
    # chosen style 0 loses to rejected style 2 only (one upper-triangle cell): hard = 2/3, easy = normal = 1
    cells = [("math", i, j, 0.0 if (i, j) == (0, 2) else 1.0) for i in range(3) for j in range(3)]
    cells += [("code", i, j, 0.0) for i in range(3) for j in range(3)]
    got = metrics.rmbench_accuracies(cells)
    assert got["per_domain"]["math"]["hard"] == pytest.approx(2 / 3)
    assert got["per_domain"]["math"]["easy"] == 1.0 and got["per_domain"]["math"]["normal"] == 1.0
    assert got["per_domain"]["math"]["matrix"][0][2] == 0.0
    assert got["overall"]["hard"] == pytest.approx((2 / 3 + 0) / 2)
    assert got["overall"]["score"] == pytest.approx((8 / 9 + 0) / 2)


def test_run_reports_easy_normal_hard_per_domain(tmp_path):
    loaded = loaders.load_benchmark("rmbench", FIX / "rmbench.json", seed=5)
    other = {"A": "B", "B": "A"}
    # a judge that always prefers the more styled answer, and says tie between equal styles
    preds = {e["id"]: (e["label"] if e["meta"]["chosen_style"] > e["meta"]["rejected_style"] else
                       "tie" if e["meta"]["chosen_style"] == e["meta"]["rejected_style"] else other[e["label"]])
             for e in loaded.examples}
    path = tmp_path / "preds.jsonl"
    path.write_text("".join(json.dumps({"id": k, "prediction": v}) + "\n" for k, v in preds.items()))
    got = main(["--benchmark", "rmbench", "--data", str(FIX / "rmbench.json"), "--seed", "5", "--predictions",
                str(path), "--out", str(tmp_path / "out")])
    for domain in ("math", "safety"):
        assert got["rmbench"]["per_domain"][domain]["easy"] == 1.0
        assert got["rmbench"]["per_domain"][domain]["normal"] == 0.5
        assert got["rmbench"]["per_domain"][domain]["hard"] == 0.0
    text = (tmp_path / "out" / "report.md").read_text()
    assert "| math | 100.00 | 50.00 | 0.00 | 50.00 |" in text


@pytest.mark.parametrize("name, domain, pairs", [("code_filtered.json", "rmbench/code", 18),
                                                 ("safety-refuse_filtered.json", "rmbench/safety", 9)])
def test_per_domain_files_take_the_domain_from_the_file_name(name, domain, pairs):
    loaded = loaders.load_benchmark("rmbench", FIX / "rmbench_files" / name, seed=0)
    assert not loaded.skipped
    assert len(loaded.examples) == pairs
    assert {e["domain"] for e in loaded.examples} == {domain}
    assert {e["meta"]["source_domain"] for e in loaded.examples} == {name.split("_")[0]}


def test_subset_names_the_domain_and_an_unnamed_file_is_a_counted_skip(tmp_path):
    row = json.loads((FIX / "rmbench_files" / "code_filtered.json").read_text())[0]
    (tmp_path / "mixed.json").write_text(json.dumps([{**row, "subset": "math"}, {**row, "id": 7}]))
    loaded = loaders.load_benchmark("rmbench", tmp_path / "mixed.json", seed=0)
    assert {e["domain"] for e in loaded.examples} == {"rmbench/math"}
    assert len(loaded.skipped) == 1 and "names none of chat, code, math" in loaded.skipped[0].reason
