import json

import pytest

from data_synthesis import label_check, label_rule

DOC = ("The Eiffel Tower is a wrought-iron lattice tower in Paris, completed in 1889 for the World's Fair. It is "
       "330 metres tall and was designed by the company of Gustave Eiffel.")


def record(good: str, bad: str, label: str = "A", question: str = "When was the Eiffel Tower built?",
           documents=None) -> dict:
    a, b = (good, bad) if label == "A" else (bad, good)
    return {"id": "p1", "question": question, "answer_a": a, "answer_b": b, "label": label,
            "meta": {"documents": [{"id": "d", "title": "Eiffel Tower", "text": DOC}] if documents is None
                     else documents}}


@pytest.mark.parametrize("text, want", [
    ("It opened in 1889 and is 330 metres tall.", {"1889", "330"}),
    ("Some 1,200 workers; 7 days.", {"1200"}),  # a separator dropped, one digit is not a claim
    ("It cost 7.5 million.", {"7.5"}),
    ("The end.", set()),
])
def test_numbers_of_two_digits_or_more_normalised(text, want):
    assert label_rule.numbers(text) == want


def test_names_leave_out_words_opening_a_sentence_and_possessives():
    got = label_rule.names("Paris holds it. The tower was built by Eiffel's company for the World Fair.\nHowever it "
                            "stands.")
    assert got == {"eiffel", "world", "fair"}  # "Paris", "The", "However" open a sentence or a line
    assert label_rule.names("**Early Life**\n- Born in Rome\n1. Moved to Milan") == {"life", "rome", "milan"}


@pytest.mark.parametrize("label", ["A", "B"])
def test_label_holds_when_the_preferred_answer_is_better_grounded(label):
    good = "The tower was finished in 1889 and stands 330 metres tall, a design from Gustave Eiffel."
    bad = "The tower was finished in 1925 and stands 512 metres tall, a design from Auguste Perret."
    check = label_rule.check_pair(record(good, bad, label))
    assert check.verdict == "holds"
    assert set(check.preferred.supported) == {"1889", "330", "gustave"}  # "Eiffel" and "Tower" are asked
    assert set(check.other.unsupported_numbers) == {"1925", "512"}
    assert check.lexical == "right"


def test_label_reversed_when_the_other_answer_is_better_grounded():
    good = "It was finished in 1925 under Auguste Perret."
    bad = "It was finished in 1889."
    check = label_rule.check_pair(record(good, bad))
    assert check.verdict == "reversed"
    assert check.preferred.unsupported_numbers == ("1925",)


def test_no_checkable_claim_and_claims_the_question_makes_are_undecided():
    check = label_rule.check_pair(record("it is a tall tower of iron.", "it is a tower, quite tall.",
                                          question="Is the tower in Paris from 1889?"))
    assert check.verdict == "undecided"
    asked = label_rule.check_pair(record("It is in Paris, from 1889.", "it is a tower.",
                                          question="Is the tower in Paris from 1889?"))
    assert asked.verdict == "undecided" and asked.preferred.supported == ()


def test_a_record_without_documents_or_label_is_refused():
    with pytest.raises(ValueError, match="no source documents"):
        label_rule.check_pair(record("a", "b", documents=[]))
    bad = record("a", "b")
    bad["label"] = "tie"
    with pytest.raises(ValueError, match="label must be"):
        label_rule.check_pair(bad)


def test_summary_shares_and_the_command_writes_its_files(tmp_path):
    records = [record("Finished in 1889, 330 metres tall.", "Finished in 1925, 512 metres tall, a big tower."),
               record("Finished in 1925.", "Finished in 1889."),
               record("a tower.", "an iron tower.")]
    for i, r in enumerate(records):
        r["id"] = f"p{i}"
    (tmp_path / "test.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    assert label_check.main(["--dataset", str(tmp_path), "--out", str(tmp_path / "out")]) == 0
    s = json.loads((tmp_path / "out" / "label_check.json").read_text())
    assert s["pairs"] == 3
    assert [s[v]["share"] for v in label_rule.VERDICTS] == pytest.approx([1 / 3, 1 / 3, 1 / 3])
    assert s["longer_wins_all"]["share"] == 0  # the preferred answer is never the longer one here
    assert s["longer_wins_confirmed"]["n"] == 1
    assert len((tmp_path / "out" / "pairs.jsonl").read_text().splitlines()) == 3
    assert "label holds by rule" in (tmp_path / "out" / "label_check.md").read_text()


def test_a_broken_line_stops_with_its_place(tmp_path):
    (tmp_path / "test.jsonl").write_text(json.dumps(record("a", "b")) + "\n{not json\n")
    with pytest.raises(SystemExit, match="test.jsonl:2"):
        label_check.main(["--dataset", str(tmp_path), "--out", str(tmp_path / "out")])


@pytest.mark.slow  # builds judge pairs from the packaged Wikipedia lead sections (about 20 s)
def test_the_rule_never_reverses_labels_right_by_construction(tmp_path):
    from data_synthesis.wiki_dataset import write_dataset
    from eval.breakdown import kind_of

    write_dataset(tmp_path, 10, 70)
    records = [json.loads(line) for line in (tmp_path / "test.jsonl").read_text().splitlines()]
    verdicts = [(kind_of(r), label_rule.check_pair(r).verdict) for r in records]
    assert len(verdicts) == 70 and "reversed" not in {v for _, v in verdicts}
    # a changed number, year or name is a claim the article does not hold: those kinds are confirmed
    assert all(v == "holds" for k, v in verdicts if k in ("numbers", "date", "entity", "place"))
