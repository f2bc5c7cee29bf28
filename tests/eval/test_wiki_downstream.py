"""Downstream task files from real Wikipedia lead sections: every file has the columns the local harness configs
read, the right answer sits where the harness looks for it, no article serves two tasks, and no trivia question
holds its answer."""

from __future__ import annotations

import json
import re

import pytest

from eval.benchmark_files import BENCHMARKS, check_columns, read
from eval.wiki_questions import MMLU_SUBJECTS, build, parse_lead, write


def test_first_sentences_are_split_at_their_copula_or_refused_with_a_reason():
    lead = parse_lead("Mercury (planet)", "Mercury (symbol ☿) is the first planet from the Sun and the smallest in "
                      "the Solar System. It has no moons.", "Physical sciences", "Planet closest to the Sun")
    assert (lead.subject, lead.verb, lead.predicate) == ("Mercury", "is", "the first planet from the Sun and the "
                                                                          "smallest in the Solar System")
    assert lead.sentence == "Mercury is the first planet from the Sun and the smallest in the Solar System."
    assert parse_lead("Rome", "Rome, the eternal city.", "Geography", "") == "no copula in the first sentence"
    assert parse_lead("Rome", "Paris is the capital of France.", "Geography", "") == ("subject does not name the "
                                                                                       "article")
    assert parse_lead("Rome", "Rome is a city.", "Geography", "") == "predicate too short"
    assert parse_lead("Rome", "Rome is the capital city of Italy", "Geography", "") == ("first sentence does not "
                                                                                        "end with a full stop")


@pytest.fixture(scope="module")
def packaged():
    return build(60, seed=3)


def test_every_file_has_the_columns_its_harness_config_reads(tmp_path, packaged):
    summary = write(tmp_path, 60, seed=3)
    assert summary["rows"] == {"triviaqa/validation.jsonl": 60, "truthfulqa_mc/validation.jsonl": 60,
                               "mmlu_pro/test.jsonl": 60, "mmlu_pro/validation.jsonl": 70}
    assert summary["askable_articles"] > 8000 and summary["skipped"]
    for name, benchmark in BENCHMARKS.items():
        path = tmp_path / benchmark.target
        check_columns(read(path), benchmark, name)  # raises on a missing column
    again = write(tmp_path, 5, seed=9)  # written once per folder: a rerun reads the summary back
    assert again == summary
    # the harness cannot load an MMLU-Pro category with no rows: every size from 14 up fills all 14
    assert set(summary["mmlu_pro_categories"]) == set(MMLU_SUBJECTS)
    for n in (14, 20, 27):
        tests = build(n, seed=3)[0]["mmlu_pro/test.jsonl"]
        assert len(tests) == n and {r["category"] for r in tests} == set(MMLU_SUBJECTS), n


def test_answers_sit_where_the_harness_looks_and_articles_are_not_shared(packaged):
    files, _ = packaged
    for row in files["truthfulqa_mc/validation.jsonl"]:
        mc1, mc2 = row["mc1_targets"], row["mc2_targets"]
        assert mc1["labels"] == [1, 0, 0, 0] and len(set(mc1["choices"])) == 4
        assert mc2["choices"][0] == mc1["choices"][0] and sum(mc2["labels"]) in (1, 2)
        assert mc2["labels"] == sorted(mc2["labels"], reverse=True)
    subjects = set()
    for row in files["mmlu_pro/test.jsonl"] + files["mmlu_pro/validation.jsonl"]:
        assert len(row["options"]) == 10 and len(set(row["options"])) == 10
        assert "ABCDEFGHIJ"[row["answer_index"]] == row["answer"] and row["category"] in MMLU_SUBJECTS
        subjects.add(row["category"])
    assert subjects == set(MMLU_SUBJECTS)
    shots = files["mmlu_pro/validation.jsonl"]
    assert all(r["cot_content"].endswith(f"The answer is ({r['answer']}).") for r in shots)
    for row in files["triviaqa/validation.jsonl"]:
        name = row["answer"]["aliases"][-1]  # the title without its disambiguating parenthesis
        title_words = {w for w in re.findall(r"[a-z0-9]+", name.lower()) if len(w) >= 4}
        assert not title_words & set(re.findall(r"[a-z0-9]+", row["question"].lower()))
    answers = [r["answer"]["value"] for r in files["triviaqa/validation.jsonl"]]
    answers += [r["options"][r["answer_index"]]
                for r in files["mmlu_pro/test.jsonl"] + files["mmlu_pro/validation.jsonl"]]
    assert len(answers) == len(set(answers))


def test_a_lead_section_file_of_bad_articles_counts_them(tmp_path):
    path = tmp_path / "summaries.json"
    good = {f"T{i}": {"title": f"Thing {i}", "extract": f"Thing {i} is a made up object number {i} of a list.",
                      "description": f"Object {i}", "topic": "Technology"} for i in range(14)}
    path.write_text(json.dumps({**good, "Bad": {"title": "Bad"}, "Worse": "not an object"}))
    files, summary = build(3, path=path)
    assert summary["askable_articles"] == 14 and summary["skipped"]["no extract"] == 2
    assert [len(rows) for rows in files.values()] == [3, 3, 3, 5]  # 14 articles: the shots get what is left
