"""Benchmark-shaped files from Wikipedia lead sections: every loader reads them with the chosen answer as the label,
the rejected answer really differs in the way its kind says, and articles are not reused across files."""

import json
import random
from pathlib import Path

import pytest

from data_synthesis.wiki_articles import alter_numbers, make_pairs, read_articles
from data_synthesis.wiki_benchmarks import WRITERS, write_files
from eval import loaders

TOPICS = ("Geography", "People")


def summaries(tmp_path: Path, n: int = 120) -> Path:
    rows = {}
    rng = random.Random(0)
    for k in range(n):
        title = f"Place{k:03d}"
        words = " ".join(rng.choice(("river", "hill", "town", "market", "bridge")) for _ in range(70))
        rows[title] = {"title": title, "topic": TOPICS[k % 2], "description": f"Town number {k}",
                       "extract": f"{title} is a town founded in {1500 + k} with {1000 + 37 * k} people. {words}. "
                                  f"It has {k + 3} bridges."}
    path = tmp_path / "summaries.json"
    path.write_text(json.dumps(rows), encoding="utf-8")
    return path


def test_alter_numbers_changes_every_number_and_keeps_the_rest():
    text = "Born in 1889, she sold 1,234,567 copies of 3.5 books; the 1990s were 12 years."
    changed, count = alter_numbers(text, random.Random(1))
    assert count == 4  # "1990s" is a word, not a number
    old = [t for t in text.replace(",", " ").replace(";", " ").split()]
    new = [t for t in changed.replace(",", " ").replace(";", " ").split()]
    assert changed != text and "1990s" in changed and changed.startswith("Born in ")
    year = int(changed.split()[2].rstrip(","))
    assert 5 <= abs(year - 1889) <= 60
    assert len(old) == len(new)


def test_pairs_are_disjoint_and_of_the_kind_they_name(tmp_path):
    articles = read_articles(summaries(tmp_path))
    used: set[str] = set()
    first = make_pairs(articles, 6, seed=0, used=used)
    second = make_pairs(articles, 6, seed=1, long=1, used=used)
    titles = [p.title for p in first + second if p.kind != "long"]
    assert len(titles) == len(set(titles)) == 12
    for p in first + second:
        assert p.chosen != p.rejected
        if p.kind == "numbers":
            assert p.rejected.split()[:3] == p.chosen.split()[:3]  # the same text, other numbers
        elif p.kind == "swap":
            assert p.title in p.rejected and p.rejected != p.chosen
    assert [p.kind for p in second].count("long") == 1


def test_too_few_articles_is_a_clear_error(tmp_path):
    with pytest.raises(ValueError, match="could be built"):
        make_pairs(read_articles(summaries(tmp_path, n=8)), 20, seed=0)


@pytest.mark.parametrize("benchmark", sorted(WRITERS))
def test_every_loader_reads_the_chosen_answer_as_the_label(tmp_path, benchmark):
    path = summaries(tmp_path)
    files = write_files(tmp_path / "out", n=6, long=0, seed=3, path=path, benchmarks=(benchmark,))
    loaded = loaders.load_benchmark(benchmark, files[benchmark])
    assert len(loaded.examples) == 6 and not loaded.skipped
    chosen = {a.text for a in read_articles(path)}
    for e in loaded.examples:
        right = e["answer_a"] if e["label"] == "A" else e["answer_b"]
        wrong = e["answer_b"] if e["label"] == "A" else e["answer_a"]
        assert right in chosen and wrong not in chosen
    assert {e["label"] for e in loaded.examples} <= {"A", "B"}


def test_judge_dataset_has_disjoint_splits_balanced_labels_and_loads_as_in_domain(tmp_path):
    from data_synthesis.wiki_dataset import write_dataset

    counts = write_dataset(tmp_path / "ds", n_train=20, n_test=10, seed=0, path=summaries(tmp_path))
    assert counts == {"train": 20, "test": 10}
    test = loaders.load_benchmark("in-domain", tmp_path / "ds", split="test").examples
    train = loaders.load_benchmark("in-domain", tmp_path / "ds", split="train").examples
    assert len(test) == 10 and len(train) == 20
    assert not {t for e in test for t in e["meta"]["doc_ids"]} & {t for e in train for t in e["meta"]["doc_ids"]}
    for rows in (test, train):
        labels = [e["label"] for e in rows]
        assert abs(labels.count("A") - labels.count("B")) <= 1
        assert all(e["gold_tool"] == "WIKI" and e["domain"] == "wiki" for e in rows)
        for e in rows:  # the label's answer is the article's own text, cut at a sentence end
            right = e["answer_a"] if e["label"] == "A" else e["answer_b"]
            assert e["meta"]["documents"][0]["text"].startswith(right) and right.endswith(".")
    assert (tmp_path / "ds" / "stats.md").is_file()
