"""The one row reader: every file shape, the split rule, and bad input as errors that name their place."""

from __future__ import annotations

import json

import pytest

from plumbing.rows import BadRow, open_rows, read_rows


def test_every_file_shape_gives_the_same_rows_and_every_column(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    rows = [{"prompt": "a"}, {"prompt": "b", "answer": "x"}]  # the first row lacks a column
    (tmp_path / "r.jsonl").write_text("\n".join(json.dumps(r) for r in rows) + "\n\n")
    (tmp_path / "r.json").write_text(json.dumps(rows))
    (tmp_path / "o.json").write_text(json.dumps({"data": rows, "version": 1}))
    pq.write_table(pa.Table.from_pylist([{"prompt": "a", "answer": None}, rows[1]]), tmp_path / "r.parquet")
    for name in ("r.jsonl", "r.json", "o.json", "r.parquet"):
        ds = open_rows(tmp_path / name)
        assert ds.to_list() == [{"prompt": "a", "answer": None}, {"prompt": "b", "answer": "x"}], name


def test_the_split_rule(tmp_path):
    from datasets import Dataset, DatasetDict

    one, two = tmp_path / "one", tmp_path / "two"
    DatasetDict({"test": Dataset.from_list([{"q": "t"}])}).save_to_disk(str(one))
    DatasetDict({"train": Dataset.from_list([{"q": "a"}]), "test": Dataset.from_list([{"q": "b"}])}).save_to_disk(
        str(two))
    assert open_rows(one)[0]["q"] == "t"  # the only split
    assert open_rows(two, "test")[0]["q"] == "b"
    with pytest.raises(ValueError, match=r"no split None of prompt rows; it has \['test', 'train'\]"):
        open_rows(two, what="prompt rows")
    with pytest.raises(ValueError, match="no split 'dev'"):
        open_rows(two, "dev")


def test_bad_input_is_an_error_naming_its_place_or_a_counted_bad_row(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"q": "a"}\n{"q": \n[1, 2]\n')
    with pytest.raises(ValueError, match=r"bad.jsonl:2: not JSON"):
        open_rows(bad)
    tolerant = list(read_rows(bad))
    assert [type(r).__name__ for _, r in tolerant] == ["dict", "BadRow", "list"]
    assert isinstance(tolerant[1][1], BadRow) and tolerant[1][0].endswith("bad.jsonl:2")
    (tmp_path / "list.jsonl").write_text("[1, 2]\n")
    with pytest.raises(ValueError, match=r"list.jsonl:1: each of the pairs must be a JSON object, got list"):
        open_rows(tmp_path / "list.jsonl", what="pairs")
    (tmp_path / "r.csv").write_text("q\na\n")
    with pytest.raises(ValueError, match=r"\.jsonl/\.json/\.parquet"):
        open_rows(tmp_path / "r.csv")
    with pytest.raises(FileNotFoundError, match="no such file or dataset folder"):
        open_rows(tmp_path / "missing.jsonl")
