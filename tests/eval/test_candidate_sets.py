"""Best-of-N candidate sets: UltraFeedback-shaped rows with the real files' hazards, and our JSONL."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from eval.candidate_sets import MISSING, gold_rating, load_candidate_sets

FIXTURE = Path(__file__).parent / "fixtures" / "ultrafeedback_bon.jsonl"


@pytest.mark.parametrize("value, rating, why", [
    (8, 8.0, None),
    (6.5, 6.5, None),
    ("7.5", 7.5, "numeric text rating read as a number"),
    ("N/A", None, "rating 'N/A' is not a number"),
    (None, None, "rating null"),
    (MISSING, None, "rating field missing"),
    (True, None, "rating of type bool"),
    (math.nan, None, "rating nan is not finite"),
    ("inf", None, "rating 'inf' is not finite"),
    ([4], None, "rating of type list"),
])
def test_gold_rating(value, rating, why):
    assert gold_rating(value) == (rating, why)


def test_ultrafeedback_rows_count_every_decision():
    loaded = load_candidate_sets(FIXTURE)
    summary = loaded.summary()
    assert summary["formats"] == {"ultrafeedback": 5}
    assert summary["skipped_rows"] == {"fewer than 2 candidates with a usable rating": 1}
    assert summary["dropped_candidates"] == {"rating field missing: candidate dropped": 1,
                                             "rating null: candidate dropped": 1,
                                             "rating 'N/A' is not a number: candidate dropped": 1}
    assert summary["adjusted_candidates"] == {"empty answer judged as is": 1, "null answer → empty text": 1,
                                              "chat-message list answer → its assistant turns": 1,
                                              "int answer → text": 1}
    by_id = {s.id: s for s in loaded.sets}
    assert [s.id for s in loaded.sets] == ["0", "1", "2", "3", "4"]  # no id in the rows: the row number
    assert by_id["1"].candidates[1] == "" and by_id["2"].candidates[1] == ""
    assert by_id["2"].candidates[2] == "Paris is the capital of France."  # the assistant turn, not the user's
    assert by_id["3"].candidates == ("6 x 7 = 42", "42", "The product of six and seven is 42.")
    assert by_id["3"].ratings == (6.0, 4.0, 6.5)
    assert by_id["4"].best == [0, 1] and by_id["0"].best == [2]


def test_fine_grained_score_is_the_other_gold():
    loaded = load_candidate_sets(FIXTURE, rating="fine-grained_score")
    assert [s.best for s in loaded.sets] == [[1], [2], [3], [2], [0, 1]]
    with pytest.raises(ValueError, match="rating must be one of"):
        load_candidate_sets(FIXTURE, rating="score")


def test_our_jsonl_with_and_without_ratings(tmp_path):
    rows = [{"id": "a", "question": "q1", "candidates": ["x", "y", "z"], "ratings": [1, None, 3]},
            {"id": "b", "prompt": "q2", "candidates": ["x", "y"]},
            {"id": "a", "question": "q3", "candidates": ["x", "y"]},
            {"id": "c", "question": "q4", "candidates": ["x", "y"], "ratings": [1]},
            {"id": "d", "question": " ", "candidates": ["x", "y"]},
            {"id": "e", "question": "q6", "answers": ["x", "y"]}]
    path = tmp_path / "sets.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows) + "{broken\n")
    loaded = load_candidate_sets(path)
    assert [(s.id, s.question, s.candidates, s.ratings) for s in loaded.sets] == [
        ("a", "q1", ("x", "z"), (1.0, 3.0)), ("b", "q2", ("x", "y"), None)]
    assert loaded.summary()["skipped_rows"] == {
        "duplicate id": 1, "ratings is not a list as long as candidates": 1, "no question text": 1,
        "neither candidates (our JSONL) nor completions (UltraFeedback)": 1, "not JSON (Expecting property name "
        "enclosed in double quotes)": 1}
    assert loaded.summary()["sets_without_ratings"] == 1
    assert [s.id for s in load_candidate_sets(path, limit=1).sets] == ["a"]
