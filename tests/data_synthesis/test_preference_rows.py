"""A build_dataset split as binarized preference rows: the answer written with the documents becomes `chosen`
whichever letter it was placed at, the rows load as pairs the selection command reads, and a record without a
label is refused by name."""

from __future__ import annotations

import json

import pytest

from data_synthesis.pairs import preference_rows
from eval.preference_sets import load_preference_sets


def _record(i: int, label: str) -> dict:
    good, bad = f"grounded answer {i}", f"unsupported answer {i}"
    a, b = (good, bad) if label == "A" else (bad, good)
    return {"id": f"syn-test-wiki-{i:06d}", "domain": "wiki", "question": f"Question {i}?", "answer_a": a,
            "answer_b": b, "label": label, "gold_tool": "WIKI", "meta": {"source": "llm"}}


def test_the_grounded_answer_is_chosen_whatever_its_letter(tmp_path):
    (tmp_path / "test.jsonl").write_text("".join(json.dumps(_record(i, "AB"[i % 2])) + "\n" for i in range(5)))
    rows = preference_rows(tmp_path, "test")
    assert [r["chosen"] for r in rows] == [f"grounded answer {i}" for i in range(5)]
    assert [r["rejected"] for r in rows] == [f"unsupported answer {i}" for i in range(5)]
    assert len(preference_rows(tmp_path, "test", limit=2)) == 2
    (tmp_path / "rows.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    loaded = load_preference_sets(tmp_path / "rows.jsonl")
    assert [s.id for s in loaded.sets] == [r["prompt_id"] for r in rows]
    assert all(s.best == [0] and s.candidates[0].startswith("grounded") for s in loaded.sets)


def test_a_record_without_a_label_is_refused(tmp_path):
    bad = _record(0, "A") | {"label": "tie"}
    (tmp_path / "train.jsonl").write_text(json.dumps(bad) + "\n")
    with pytest.raises(ValueError, match="syn-test-wiki-000000.*no A/B label"):
        preference_rows(tmp_path, "train")
