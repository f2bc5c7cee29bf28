"""The synthetic benchmark corpus: the same file for the same arguments, DPR tsv columns, stop words as the most
frequent words, and synthetic words that every analyzer keeps whole."""

from __future__ import annotations

import csv
from collections import Counter

from bench.corpus import STOPWORDS, _word, synthetic_corpus


def test_the_corpus_is_deterministic_and_zipf_with_stop_words_on_top(tmp_path):
    a = synthetic_corpus(tmp_path / "a.tsv", 40, vocab=2000, words=50)
    b = synthetic_corpus(tmp_path / "b.tsv", 40, vocab=2000, words=50)
    assert a.read_bytes() == b.read_bytes()
    assert synthetic_corpus(tmp_path / "c.tsv", 40, seed=1, vocab=2000, words=50).read_bytes() != a.read_bytes()
    with a.open(encoding="utf-8") as f:
        rows = list(csv.DictReader(f, delimiter="\t"))
    assert len(rows) == 40 and rows[3]["id"] == "p3" and rows[3]["title"] == "Title 3"
    assert all(len(r["text"].split()) == 50 for r in rows)
    counts = Counter(w for r in rows for w in r["text"].split())
    assert counts.most_common(1)[0][0] == "the"
    assert sum(counts[w] for w in STOPWORDS) > 0.3 * sum(counts.values())


def test_synthetic_words_are_letters_only_unique_and_no_stop_word():
    words = [_word(i) for i in range(5000)]
    assert len(set(words)) == len(words)
    assert all(w.isalpha() for w in words)
    assert not set(words) & set(STOPWORDS)
