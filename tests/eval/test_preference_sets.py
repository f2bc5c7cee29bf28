"""Preference rows in every input shape: binarized chat rows shaped like HuggingFaceH4/ultrafeedback_binarized (JSONL,
parquet and a save_to_disk DatasetDict), TRL's plain-text preference rows, UltraFeedback raw rows, and any JSONL
through a field mapping; malformed rows are skipped and counted with their line and reason."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from eval.preference_sets import load_preference_sets, parse_fields

FIX = Path(__file__).parent / "fixtures"
BINARIZED = FIX / "ultrafeedback_binarized.jsonl"


def test_binarized_chat_rows_load_with_every_bad_line_counted():
    loaded = load_preference_sets(BINARIZED)
    rows = loaded.sets
    assert len(rows) == 8 and dict(loaded.formats) == {"binarized-chat": 8}
    assert [(s.where, s.reason) for s in loaded.skipped] == [
        (f"{BINARIZED}:7", "chosen: the last message is not an assistant turn"),
        (f"{BINARIZED}:8", "not JSON (Expecting value)"),
        (f"{BINARIZED}:9", "chosen and rejected hold different conversations before their responses"),
        (f"{BINARIZED}:10", "missing field 'rejected'"),
    ]
    first = rows[0]
    assert first.question == "What is the boiling point of water at sea level?"
    assert first.candidates == ("100 degrees Celsius.", "50 degrees Celsius.")
    assert first.messages == ({"role": "user", "content": first.question},)
    assert (first.labelled, first.ratings, first.best, first.worst, first.ordered) == (0, (8.0, 6.0), [0], [1], True)
    assert len(first.id) == 64 and first.index == 0
    tied = rows[2]  # score_chosen == score_rejected: the file names no better response
    assert tied.tied and tied.best == [0, 1] and not tied.ordered
    no_score = rows[5]  # score_rejected "N/A": the label alone decides
    assert no_score.ratings is None and no_score.best == [0] and no_score.ordered
    assert [s.reason for s in loaded.adjusted] == [
        "score unusable (rating 'N/A' is not a number): the chosen label alone"]
    assert [r.index for r in rows] == [0, 1, 2, 3, 4, 5, 10, 11]  # row numbers in the file, bad lines included


def test_binarized_rows_read_the_same_from_parquet_and_a_dataset_folder(tmp_path):
    from datasets import Dataset, DatasetDict

    lines = BINARIZED.read_text().splitlines()
    clean = [json.loads(line) for line in lines[:5]]  # the real files hold float scores only
    Dataset.from_list(clean).to_parquet(str(tmp_path / "train_prefs.parquet"))
    DatasetDict({"train_prefs": Dataset.from_list(clean), "test_prefs": Dataset.from_list(clean[:2])}).save_to_disk(
        str(tmp_path / "folder"))
    want = [(s.id, s.question, s.candidates, s.ratings, s.messages) for s in load_preference_sets(BINARIZED).sets[:5]]
    for path, split in ((tmp_path / "train_prefs.parquet", None), (tmp_path / "folder", "train_prefs")):
        got = load_preference_sets(path, split=split)
        assert [(s.id, s.question, s.candidates, s.ratings, s.messages) for s in got.sets] == want
    with pytest.raises(ValueError, match="pick a split"):
        load_preference_sets(tmp_path / "folder")


def test_plain_text_pairs_load_with_adjustments_and_skips():
    path = FIX / "preferences_text.jsonl"
    loaded = load_preference_sets(path)
    assert dict(loaded.formats) == {"binarized": 3}
    assert [(s.question, s.candidates) for s in loaded.sets] == [
        ("Complete: the cat sat on the", (" mat.", " moon.")), ("What is 3 x 3?", ("9", "six")),
        ("Name an ocean.", ("The Pacific.", ""))]
    assert all(s.messages is None and s.labelled == 0 and s.ratings is None for s in loaded.sets)
    assert sorted(s.reason for s in loaded.adjusted) == ["int answer → text", "null answer → empty text"]
    assert [(s.where, s.reason) for s in loaded.skipped] == [
        (f"{path}:4", "prompt is chat messages but chosen/rejected are text"), (f"{path}:5", "no prompt text")]


def test_ultrafeedback_raw_rows_become_rated_sets():
    loaded = load_preference_sets(FIX / "ultrafeedback_bon.jsonl")
    assert dict(loaded.formats) == {"ultrafeedback": 5} and len(loaded.skipped) == 1
    by_question = {s.question: s for s in loaded.sets}
    colours = by_question["Name three primary colours."]
    assert (colours.ratings, colours.best, colours.worst, colours.labelled) == ((7.0, 4.0, 9.0, 5.0), [2], [1], None)
    sleep = by_question["Give one tip for sleeping better."]
    assert sleep.best == [0, 1] and sleep.worst == [3] and sleep.ordered
    fine = load_preference_sets(FIX / "ultrafeedback_bon.jsonl", rating="fine-grained_score").sets[0]
    assert fine.best == [1]  # another gold rating, another better response


def test_any_jsonl_through_a_field_mapping(tmp_path):
    path = FIX / "preferences_custom.jsonl"
    fields = {"prompt": "instruction", "chosen": "better", "rejected": "worse", "score_chosen": "good_score",
              "score_rejected": "bad_score", "id": "uid"}
    loaded = load_preference_sets(path, fields=fields)
    assert [(s.id, s.question, s.candidates, s.ratings) for s in loaded.sets] == [
        ("c1", "Capital of Italy?", ("Rome.", "Milan."), (5.0, 2.0)),
        ("c2", "Largest planet?", ("Jupiter.", "Mars."), (4.0, 4.0))]
    assert loaded.sets[1].tied
    assert [(s.where, s.reason) for s in loaded.skipped] == [
        (f"{path}:3", "missing field 'worse' (mapped to rejected)")]
    sets = tmp_path / "sets.jsonl"
    sets.write_text(json.dumps({"key": "s1", "q": "Pick a number.", "answers": ["1", "2", "3"], "scores": [1, 3, 2]})
                    + "\n" + json.dumps({"key": "s2", "q": "Pick a colour.", "answers": ["red"]}) + "\n")
    got = load_preference_sets(sets, fields={"prompt": "q", "candidates": "answers", "ratings": "scores", "id": "key"})
    assert [(s.id, s.candidates, s.best, s.worst) for s in got.sets] == [("s1", ("1", "2", "3"), [1], [0])]
    assert [s.reason for s in got.skipped] == ["fewer than 2 candidates"]


@pytest.mark.parametrize("fields, message", [
    ({"prompt": "q", "answer": "a"}, "unknown"),
    ({"prompt": "q", "chosen": "c", "rejected": "r", "candidates": "x"}, "not both"),
    ({"candidates": "x"}, "must map prompt"),
])
def test_bad_field_mappings_are_refused(fields, message):
    with pytest.raises(ValueError, match=message):
        parse_fields(fields)


def test_a_file_without_usable_rows_names_the_first_bad_line(tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_text('{"prompt": "q", "chosen": [{"role": "user", "content": "q"}], "rejected": "x"}\n[1, 2]\n')
    with pytest.raises(ValueError, match=r"bad.jsonl:1: rejected is not a non-empty list of chat messages"):
        load_preference_sets(path)


def test_scores_inside_a_metadata_object_are_read_and_a_malformed_metadata_is_noted(tmp_path):
    path = tmp_path / "uf_metadata.jsonl"
    chat = [{"role": "user", "content": "Capital of France?"}]
    rows = [
        {"chosen": chat + [{"role": "assistant", "content": "Paris."}],
         "rejected": chat + [{"role": "assistant", "content": "Lyon."}], "metadata": {"score_chosen": 9.0,
                                                                                       "score_rejected": 3.5}},
        {"prompt": "Capital of Spain?", "chosen": "Madrid.", "rejected": "Seville.", "metadata": "9 vs 3"},
        {"prompt": "Capital of Italy?", "chosen": "Rome.", "rejected": "Milan.",
         "metadata": {"source": "x", "score_chosen": 5, "score_rejected": 5}},
        {"prompt": "Capital of Peru?", "chosen": "Lima.", "rejected": "Cusco.", "metadata": {"score_chosen": "high"}},
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    loaded = load_preference_sets(path)
    first, bad_meta, tied, unusable = loaded.sets
    assert first.ratings == (9.0, 3.5) and first.best == [0] and first.ordered
    assert bad_meta.ratings is None and bad_meta.best == [0]
    assert tied.ratings == (5.0, 5.0) and tied.tied and not tied.ordered
    assert unusable.ratings is None and unusable.best == [0]
    assert [s.reason for s in loaded.adjusted] == [
        "metadata is str, not an object: its scores ignored",
        "score unusable (rating 'high' is not a number): the chosen label alone"]
