"""Corpus readers: DPR tsv and JSONL variants, streaming, and every malformed line named or counted."""

from __future__ import annotations

import gzip
import json

import pytest

from retrieval.corpus import CorpusError, CorpusPassage, ReadStats, read_corpus


def _write(path, text: str | bytes):
    path.write_bytes(text if isinstance(text, bytes) else text.encode("utf-8"))
    return path


@pytest.mark.parametrize("header", [True, False])
def test_dpr_tsv_with_or_without_header(tmp_path, header):
    body = '1\t"Aaron is a prophet, ""the"" brother"\tAaron\n2\tSecond text\tTitle Two\n'
    path = _write(tmp_path / "c.tsv", ("id\ttext\ttitle\n" if header else "") + body)
    assert list(read_corpus(path)) == [
        CorpusPassage("1", "Aaron", 'Aaron is a prophet, "the" brother'),
        CorpusPassage("2", "Title Two", "Second text"),
    ]


def test_toy_world_tsv_and_jsonl_agree(corpora):
    for files in corpora.values():
        assert list(read_corpus(files["tsv"])) == list(read_corpus(files["jsonl"]))


@pytest.mark.parametrize("record, expected", [
    ({"id": "a", "title": "T", "contents": "body"}, CorpusPassage("a", "T", "body")),
    ({"id": 7, "title": "T", "text": "body"}, CorpusPassage("7", "T", "body")),
    ({"id": "p", "title": "Paper", "abstract": "We study x."}, CorpusPassage("p", "Paper", "We study x.")),
    ({"id": "0", "contents": '"Aaron"\nAaron is a prophet.'}, CorpusPassage("0", "Aaron", "Aaron is a prophet.")),
    ({"id": "n", "contents": "no title at all"}, CorpusPassage("n", "", "no title at all")),
])
def test_jsonl_field_variants(tmp_path, record, expected):
    path = _write(tmp_path / "c.jsonl", json.dumps(record) + "\n\n")
    assert list(read_corpus(path)) == [expected]


BAD_TSV = [
    ("1\tonly two fields\n", "expected 3 tab-separated fields"),
    ("1\ta\tb\textra\n", "got 4"),
    ("\ttext\ttitle\n", "empty id"),
    ("1\t \ttitle\n", "empty text"),
]
BAD_JSONL = [
    ("{not json\n", "Expecting"),
    ("[1, 2]\n", "expected a JSON object"),
    ('{"title": "t", "contents": "x"}\n', "missing 'id'"),
    ('{"id": "1", "title": "t"}\n', "no non-empty"),
    ('{"id": "1", "title": 5, "contents": "x"}\n', "'title' must be a string"),
]


@pytest.mark.parametrize("suffix, bad, reason", [("tsv", b, r) for b, r in BAD_TSV] +
                         [("jsonl", b, r) for b, r in BAD_JSONL])
def test_bad_line_is_named_or_skipped_and_counted(tmp_path, suffix, bad, reason):
    good = "9\tgood text\tGood\n" if suffix == "tsv" else json.dumps({"id": "9", "contents": "good text"}) + "\n"
    path = _write(tmp_path / f"c.{suffix}", good + bad + good)
    with pytest.raises(CorpusError, match=rf"c\.{suffix}:2: .*{reason}.*--skip-bad-lines"):
        list(read_corpus(path))
    stats = ReadStats()
    assert [p.id for p in read_corpus(path, stats, skip_bad_lines=True)] == ["9", "9"]
    assert (stats.n_read, stats.n_skipped) == (2, 1)
    assert stats.skipped[0].startswith(f"{path}:2:")


def test_gzip_and_streaming(tmp_path):
    path = tmp_path / "c.tsv.gz"
    with gzip.open(path, "wt", encoding="utf-8") as f:
        for i in range(1000):
            f.write(f"{i}\ttext {i}\tT{i}\n")
    stream = read_corpus(path)
    assert next(stream) == CorpusPassage("0", "T0", "text 0")  # a generator: nothing read past what is asked
    assert sum(1 for _ in stream) == 999


@pytest.mark.parametrize("suffix, bad", [("tsv", b"2\ttext \xff\xfe here\ttitle\n"),
                                         ("jsonl", b'{"id": "2", "contents": "x \xff"}\n')])
def test_non_utf8_line_is_one_bad_line(tmp_path, suffix, bad):
    good = b"1\tfine\tT\n" if suffix == "tsv" else b'{"id": "1", "contents": "fine"}\n'
    path = _write(tmp_path / f"c.{suffix}", good + bad + good)
    with pytest.raises(CorpusError, match=rf"c\.{suffix}:2: not valid UTF-8"):
        list(read_corpus(path))
    stats = ReadStats()
    assert len(list(read_corpus(path, stats, skip_bad_lines=True))) == 2 and stats.n_skipped == 1


def test_missing_file_and_unknown_format(tmp_path):
    with pytest.raises(CorpusError, match="no such corpus file"):
        list(read_corpus(tmp_path / "absent.tsv"))
    with pytest.raises(CorpusError, match="unknown corpus format"):
        list(read_corpus(_write(tmp_path / "c.csv", "1,a,b\n")))
