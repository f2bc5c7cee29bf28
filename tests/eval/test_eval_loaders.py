"""Benchmark loaders on fixture files in each benchmark's real schema: labels, placement, skips with reasons, and
clear errors when nothing is usable."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from eval import loaders

FIX = Path(__file__).parent / "fixtures"


def reasons(loaded: loaders.Loaded) -> list[str]:
    return [s.reason for s in loaded.skipped]


def test_rewardbench_places_chosen_by_a_seeded_coin_and_reports_skips():
    loaded = loaders.load_benchmark("rewardbench", FIX / "rewardbench.jsonl", seed=0)
    assert [e["id"] for e in loaded.examples] == ["0", "1", "2", "3", "4", "5", "6"]  # 6: an empty chosen answer
    rows = {str(r["id"]): r for r in map(json.loads, (FIX / "rewardbench.jsonl").read_text().splitlines()[:7])}
    for e in loaded.examples:
        chosen = e["answer_a"] if e["label"] == "A" else e["answer_b"]
        assert chosen == rows[e["id"]]["chosen"]
        assert e["meta"]["chosen_position"] == e["label"]
        assert e["domain"] == f"rewardbench/{rows[e['id']]['subset']}"
    assert sorted(reasons(loaded)) == sorted(["missing field 'rejected'", "duplicate id '0'",
                                              "not JSON (Expecting value)"])
    assert loaded.coercion_summary() == {"empty answer judged as is": 1}
    again = loaders.load_benchmark("rewardbench", FIX / "rewardbench.jsonl", seed=0)
    assert [e["label"] for e in again.examples] == [e["label"] for e in loaded.examples]


def test_rewardbench_placement_is_balanced_and_depends_only_on_seed_and_id(tmp_path):
    rows = [{"prompt": f"q{i}", "chosen": f"good {i}", "rejected": f"bad {i}", "subset": "alpacaeval-easy", "id": i}
            for i in range(400)]
    path = tmp_path / "rb.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    first = {e["id"]: e["label"] for e in loaders.load_rewardbench(path, seed=1).examples}
    assert 0.4 < sum(v == "A" for v in first.values()) / len(first) < 0.6
    path.write_text("".join(json.dumps(r) + "\n" for r in reversed(rows)))
    assert {e["id"]: e["label"] for e in loaders.load_rewardbench(path, seed=1).examples} == first
    other = {e["id"]: e["label"] for e in loaders.load_rewardbench(path, seed=2).examples}
    assert other != first


def test_pandalm_majority_vote_ties_and_skips():
    loaded = loaders.load_benchmark("pandalm", FIX / "pandalm_testset.json")
    assert {e["id"]: e["label"] for e in loaded.examples} == {"0": "A", "1": "B", "2": "tie", "3": "A", "5": "B",
                                                              "7": "B", "8": "A"}
    by_id = {e["id"]: e for e in loaded.examples}
    assert by_id["0"]["question"] == "Correct the grammar.\n\nHe go to school."
    assert by_id["1"]["question"] == "What is 7 squared?"  # empty input adds nothing
    # the rows the public file holds and the old loader dropped: empty answers, a JSON `true`, a blank instruction
    assert by_id["5"]["answer_a"] == "" and by_id["8"]["answer_b"] == ""
    assert by_id["7"]["answer_b"] == "True"
    assert by_id["8"]["question"] == "Summarise: cats sleep for most of the day."
    # only rows without a well-defined label are skipped
    assert sorted(reasons(loaded)) == sorted(["no majority among annotators [0, 1, 2]",
                                              "missing an annotator1..3 field"])
    assert loaded.coercion_summary() == {"empty answer judged as is": 2, "bool answer → text": 1}
    assert all(loaders.COERCED not in e["meta"] for e in loaded.examples)


def test_pandalm_nan_input_is_no_input(tmp_path):
    """testset-v1.json writes a missing input as a bare NaN (Python's json reads a float nan); such a row is asked
    its instruction alone, like a null input, and is not skipped."""
    row = {"instruction": "Name a colour.", "response1": "red", "response2": "", "annotator1": 1, "annotator2": 1,
           "annotator3": 0}
    path = tmp_path / "testset.json"
    path.write_text(json.dumps([{**row, "idx": 0, "input": float("nan")}, {**row, "idx": 1, "input": None}]))
    assert "NaN" in path.read_text()
    loaded = loaders.load_pandalm(path)
    assert [e["question"] for e in loaded.examples] == ["Name a colour.", "Name a colour."] and not loaded.skipped


@pytest.mark.parametrize("value, text, note", [
    ("fine", "fine", None),
    ("", "", "empty answer judged as is"),
    ("  ", "  ", "empty answer judged as is"),
    (None, "", "null answer → empty text"),
    (True, "True", "bool answer → text"),
    (3, "3", "int answer → text"),
    (2.5, "2.5", "float answer → text"),
    ([{"role": "user", "content": "q"}, {"role": "assistant", "content": "a1"}, {"role": "assistant", "content": "a2"}],
     "a1\n\na2", "chat-message list answer → its assistant turns"),
    (["x", "y"], '["x", "y"]', "list answer → JSON text"),
    ({"k": "v"}, '{"k": "v"}', "dict answer → JSON text"),
])
def test_answer_text_keeps_every_answer_and_says_what_it_changed(value, text, note):
    meta: dict = {}
    assert loaders.answer_text({"r": value}, "r", meta) == text
    assert meta[loaders.COERCED] == ([note] if note else [])


def test_answer_text_refuses_a_missing_field():
    with pytest.raises(loaders.BadRow, match="missing field 'r'"):
        loaders.answer_text({}, "r", {})


@pytest.mark.parametrize("name, file, labels, skipped", [
    ("llmbar", "llmbar.json", {"0": "A", "1": "B"}, ["label '3' is not one of ['1', '2']", "field 'input' is empty"]),
    ("autoj", "autoj.jsonl", {"0": "A", "1": "B", "2": "tie", "4": "A"}, ["missing field 'label'"]),
    ("judgebench", "judgebench.jsonl", {"p1": "A", "p2": "B"}, ["label 'A=B' is not one of ['A>B', 'B>A']"]),
])
def test_pairwise_presets(name, file, labels, skipped):
    loaded = loaders.load_benchmark(name, FIX / file)
    assert {e["id"]: e["label"] for e in loaded.examples} == labels
    assert reasons(loaded) == skipped
    assert all(e["domain"].startswith(name) for e in loaded.examples)


def test_autoj_and_judgebench_keep_their_subsets_as_domains():
    assert [e["domain"] for e in loaders.load_benchmark("autoj", FIX / "autoj.jsonl").examples] == [
        "autoj/code_generation", "autoj/open_question", "autoj/open_question", "autoj/chitchat"]
    assert [e["domain"] for e in loaders.load_benchmark("judgebench", FIX / "judgebench.jsonl").examples] == [
        "judgebench/mmlu-pro-physics", "judgebench/livebench-math"]


def test_mtbench_turns_and_ties():
    loaded = loaders.load_benchmark("mtbench", FIX / "mtbench.jsonl")
    assert [e["label"] for e in loaded.examples] == ["A", "tie", "B"]
    turn1, turn2, _ = loaded.examples
    assert turn1["question"] == "Write a travel blog post about Hawaii." and turn1["answer_b"] == "Hawaii good."
    assert "Rewrite it with every sentence" in turn2["question"] and turn2["domain"] == "mtbench/turn2"
    assert "[Turn 2]\nA Hawaii." in turn2["answer_b"]
    assert reasons(loaded) == ["winner 'both' is not one of ['model_a', 'model_b', 'tie', 'tie (bothbad)']"]


def test_generic_pairwise_with_a_custom_map_reads_parquet(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = tmp_path / "pairs.parquet"
    pq.write_table(pa.Table.from_pylist([{"q": "Which is larger?", "ctx": "1 or 2", "x": "2", "y": "1", "pref": "x"},
                                         {"q": "Pick one", "ctx": "", "x": "a", "y": "b", "pref": "same"}]), path)
    spec = loaders.PairwiseSpec("q", "x", "y", "pref", {"x": "A", "y": "B", "same": "tie"}, context="ctx")
    loaded = loaders.load_pairwise(path, spec, "mine")
    assert [(e["question"], e["label"]) for e in loaded.examples] == [("Which is larger?\n\n1 or 2", "A"),
                                                                     ("Pick one", "tie")]


def test_in_domain_reads_the_test_split_of_a_dataset_folder(tmp_path):
    from toy.world import ToyWorld, write_dataset

    out = write_dataset(ToyWorld(0), tmp_path / "toy", n_train=4, n_test=6)
    loaded = loaders.load_benchmark("in-domain", out / "dataset")
    assert len(loaded.examples) == 6 and {e["domain"] for e in loaded.examples} <= {"wiki", "science", "medical"}
    assert all(e["id"].startswith("toy-0-test") for e in loaded.examples)
    assert len(loaders.load_benchmark("in-domain", out / "dataset", split="train").examples) == 4
    with pytest.raises(ValueError, match="pick a split"):
        loaders.load_benchmark("in-domain", out / "dataset", split="validation")


@pytest.mark.parametrize("content, match", [
    ('[{"prompt": "q", "chosen": "a", "subset": "s"}]', "no usable rewardbench rows.*missing field 'rejected'"),
    ("[]", "no usable rewardbench rows"),
    ('{"a": 1', "not valid JSON"),
    ('"just a string"', "expected a JSON list"),
])
def test_nothing_usable_is_a_clear_error(tmp_path, content, match):
    path = tmp_path / "bad.json"
    path.write_text(content)
    with pytest.raises(ValueError, match=match):
        loaders.load_benchmark("rewardbench", path)


def test_unknown_benchmark_and_missing_file():
    with pytest.raises(ValueError, match="unknown benchmark"):
        loaders.load_benchmark("nope", FIX / "llmbar.json")
    with pytest.raises(FileNotFoundError):
        loaders.load_benchmark("llmbar", FIX / "missing.json")
    with pytest.raises(ValueError, match="needs a field map"):
        loaders.load_benchmark("pairwise", FIX / "llmbar.json")
