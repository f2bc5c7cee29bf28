"""The Wikipedia judge dataset: for every kind the chosen answer is the article's own text cut to its length class and
the rejected one differs by exactly the recorded change, within 10 % of the words; splits share no article (swap
partners included), labels are balanced, runs repeat byte for byte, and every skipped article is counted."""

import json
import random
import re
from pathlib import Path

import pytest

from data_synthesis.wiki_articles import NUMBER, Article
from data_synthesis.wiki_changes import KINDS, LENGTHS, Change, Edit, Skip, apply_edits, build, cut, index, name, replay
from data_synthesis.wiki_changes import sentence_ends as ends_of
from data_synthesis.wiki_dataset import write_dataset
from eval import loaders

TOWNS = [a + b for a in ("Al", "Bel", "Cor", "Dun", "Esk", "Fal", "Gar", "Hol")
         for b in ("ton", "mere", "by", "ford", "wick", "stead", "holm", "gate")]
PEOPLE = [f"{a} {b}" for a in ("Ada", "Bram", "Cleo", "Dirk", "Edda", "Finn")
          for b in ("Brennan", "Castell", "Dorrin", "Ellery", "Fenwick", "Garrow")]
SONGS = [f"The {a} {b}" for a in ("Grey", "Silver", "Quiet") for b in ("Gull", "Heron", "Wren", "Swift")]
FILLER = ("The town is known for its stone bridges, its weekly fairs and the old mill that stands beside the river. "
          "Its people work in farming, weaving and trade, and many visitors come in summer to walk in the hills.")


def summaries(tmp_path: Path) -> Path:
    """Towns (Geography) naming a neighbour, painters (People) naming a town and a teacher, songs (Arts) without a
    number, and three rows no pair can come from."""
    rows: dict = {}
    for k, town in enumerate(TOWNS):
        rows[town] = {"title": town, "topic": "Geography", "description": "Market town in Northland",
                      "extract": f"{town} is a market town in the hills of Northland, founded in {1500 + k}. It lies "
                                 f"near {TOWNS[(k + 1) % len(TOWNS)]} and had {1000 + 37 * k} people at the census "
                                 f"of {1900 + k}. {FILLER}"}
    for k, person in enumerate(PEOPLE):
        rows[person] = {"title": person, "topic": "People", "description": "Painter from Northland",
                        "extract": f"{person} was a painter born in {TOWNS[k]} in {1800 + k}, died {1860 + k}. They "
                                   f"were a pupil of {PEOPLE[(k + 1) % len(PEOPLE)]} and painted {20 + k} large "
                                   f"canvases of the northern coast. {FILLER}"}
    for song in SONGS:
        rows[song] = {"title": song, "topic": "Arts", "description": "Folk song of Northland",
                      "extract": f"{song} is a folk song of the northern coast. It is sung slowly by choirs at "
                                 "weddings and at the end of the harvest. The words tell of a sailor who waits for "
                                 "the tide to turn and the wind to fall. Singers often add verses of their own, so "
                                 "that no two villages sing it quite the same way."}
    rows["Broken"] = "not an object"
    rows["Empty"] = {"title": "Empty", "topic": "Arts", "description": "", "extract": "  "}
    rows["Tiny"] = {"title": "Tiny", "topic": "Arts", "description": "", "extract": "Tiny is small."}
    path = tmp_path / "summaries.json"
    path.write_text(json.dumps(rows), encoding="utf-8")
    return path


def records(folder: Path, split: str) -> list[dict]:
    return [json.loads(line) for line in (folder / f"{split}.jsonl").read_text(encoding="utf-8").splitlines()]


def answers(r: dict) -> tuple[str, str]:
    return (r["answer_a"], r["answer_b"]) if r["label"] == "A" else (r["answer_b"], r["answer_a"])


def words(text: str) -> int:
    return len(text.split())


def check_length_class(text: str, chosen: str, length: str) -> None:
    """Independently of `cut`: the synthetic texts end sentences only at '. '."""
    sentences = [s if s.endswith(".") else s + "." for s in text.split(". ")]
    counts = [words(" ".join(sentences[:k])) for k in range(1, len(sentences) + 1)]
    k = chosen.count(". ") + 1
    assert text.startswith(chosen) and chosen == " ".join(sentences[:k])
    if length == "sentence":
        assert k == 1 and words(chosen) >= 8
    elif length == "short":
        assert k in (2, 3) and words(chosen) <= 70 and (k == 3 or len(counts) < 3 or counts[2] > 70)
    else:
        assert 60 <= words(chosen) <= 150 and (k == len(counts) or counts[k] > 150)


def check_change(r: dict, chosen: str, rejected: str, rows: dict) -> None:
    kind, length = r["meta"]["source"].split("/")[1], r["meta"]["facts"][0]["value"]
    title = r["meta"]["doc_ids"][0]
    changes = [Change(**c) for c in r["meta"]["corrupted"]]
    assert rejected != chosen and abs(words(rejected) - words(chosen)) <= 0.1 * words(chosen)
    if kind == "swap":
        partner = r["meta"]["doc_ids"][1]
        assert changes == [Change("swap", title, partner)] and rows[partner]["topic"] == rows[title]["topic"]
        assert rejected == re.sub(rf"\b{re.escape(name(partner))}\b", title, cut(rows[partner]["extract"], length))
        return
    assert r["meta"]["doc_ids"] == [title] and replay(chosen, changes) == rejected
    if kind == "numbers":
        before, after = NUMBER.findall(chosen), NUMBER.findall(rejected)
        assert len(changes) == len(before) == len(after) and all(x != y for x, y in zip(before, after, strict=True))
    elif kind == "date":
        (change,) = changes
        old, new = int(change.true.split()[-1]), int(change.wrong.split()[-1])
        assert 5 <= abs(new - old) <= 60
        changed = [(x, y) for x, y in zip(NUMBER.findall(chosen), NUMBER.findall(rejected), strict=True) if x != y]
        assert changed == [(str(old), str(new))]
    elif kind in ("entity", "place"):
        (change,) = changes
        named = next(t for t in rows if isinstance(rows[t], dict) and change.true.endswith(t))
        stand_in = change.wrong[len(change.true) - len(named):]
        assert stand_in in rows and stand_in not in rows[title]["extract"] and stand_in != named
        assert rows[stand_in]["topic"] == rows[named]["topic"]
        assert kind == "entity" or rows[named]["topic"] == "Geography"
    elif kind == "exchange":  # two numbers in each other's place: the same words, another order
        before, after = NUMBER.findall(chosen), NUMBER.findall(rejected)
        moved = [(x, y) for x, y in zip(before, after, strict=True) if x != y]
        assert len(changes) == 2 and len(moved) == 2 and moved[0] == moved[1][::-1]
        assert sorted(NUMBER.findall(rejected)) == sorted(before)
    else:
        (change,) = changes
        verb = change.true.split()[-1]
        assert verb in ("is", "was", "are", "were", "can")
        assert change.wrong == change.true[:-len(verb)] + ("cannot" if verb == "can" else f"{verb} not")


@pytest.mark.parametrize("kind", KINDS)
def test_every_kind_is_right_by_construction_and_of_its_length(tmp_path, kind):
    path = summaries(tmp_path)
    rows = json.loads(path.read_text(encoding="utf-8"))
    counts = write_dataset(tmp_path / "ds", n_train=9, n_test=6, seed=1, path=path, kinds=(kind,))
    assert counts == {"train": 9, "test": 6}
    seen_lengths = set()
    for split in ("train", "test"):
        for r in records(tmp_path / "ds", split):
            chosen, rejected = answers(r)
            title, length = r["meta"]["doc_ids"][0], r["meta"]["facts"][0]["value"]
            assert r["meta"]["source"] == f"wiki_pairs/{kind}" and r["id"].startswith(f"wiki-{kind}-{length}-{split}")
            assert r["meta"]["documents"] == [{"id": title, "title": title, "text": rows[title]["extract"]}]
            assert r["meta"]["facts"][1] == {"attribute": "topic", "value": rows[title]["topic"]}
            assert r["question"].startswith(f"Write a short encyclopedia entry about {title} (")
            check_length_class(rows[title]["extract"], chosen, length)
            check_change(r, chosen, rejected, rows)
            seen_lengths.add(length)
    assert seen_lengths == set(LENGTHS)


def test_splits_share_no_article_or_partner_and_cells_are_even(tmp_path):
    cells = len(KINDS) * len(LENGTHS)
    counts = write_dataset(tmp_path / "ds", n_train=2 * cells, n_test=cells, seed=0, path=summaries(tmp_path))
    assert counts == {"train": 2 * cells, "test": cells}
    used = {}
    for split in ("test", "train"):
        asked = [r["meta"]["doc_ids"][0] for r in records(tmp_path / "ds", split)]
        assert len(asked) == len(set(asked))  # each article asked about once per split
        used[split] = {t for r in records(tmp_path / "ds", split) for t in r["meta"]["doc_ids"]}
    assert any(len(r["meta"]["doc_ids"]) == 2 for r in records(tmp_path / "ds", "test"))  # partners were checked
    assert not used["test"] & used["train"]
    stats = json.loads((tmp_path / "ds" / "wiki_stats.json").read_text(encoding="utf-8"))
    assert set(stats["pairs"]["test"]["cell"].values()) == {1} and len(stats["pairs"]["test"]["cell"]) == cells
    assert set(stats["pairs"]["train"]["cell"].values()) == {2}
    assert stats["pairs"]["train"]["kind"] == {k: 6 for k in KINDS}
    assert "| train | place | 2 | 2 | 2 | 6 |" in (tmp_path / "ds" / "stats.md").read_text(encoding="utf-8")
    for split in ("test", "train"):
        loaded = loaders.load_benchmark("in-domain", tmp_path / "ds", split=split).examples
        labels = [e["label"] for e in loaded]
        assert len(loaded) == counts[split] and abs(labels.count("A") - labels.count("B")) <= 1


def test_swap_partners_of_the_test_split_are_never_asked_about_in_train(tmp_path):
    # a town's or painter's first sentence has a same-topic partner of the same length (the songs' are alike but
    # for the title, so a swap would change nothing), and the 100 of them make exactly 50 swap pairs: the train split
    # can only reach its count with articles the test split has not used, as asked or as partner
    path = summaries(tmp_path)
    counts = write_dataset(tmp_path / "ds", n_train=30, n_test=20, seed=0, path=path, kinds=("swap",),
                           lengths=("sentence",))
    assert counts == {"train": 30, "test": 20}
    used = {split: [t for r in records(tmp_path / "ds", split) for t in r["meta"]["doc_ids"]] for split in counts}
    assert len(used["test"]) == len(set(used["test"])) == 40 and len(set(used["train"])) == 60
    assert not set(used["test"]) & set(used["train"])
    with pytest.raises(ValueError, match="only 30 of 31"):
        write_dataset(tmp_path / "ds2", n_train=31, n_test=20, seed=0, path=path, kinds=("swap",),
                      lengths=("sentence",))


def test_skipped_articles_are_counted_by_reason(tmp_path):
    write_dataset(tmp_path / "ds", n_train=6, n_test=6, seed=0, path=summaries(tmp_path))
    skipped = json.loads((tmp_path / "ds" / "wiki_stats.json").read_text(encoding="utf-8"))["skipped"]
    assert skipped["article"] == {"row is not an object": 1, "no text": 1, "under 8 words": 1}
    assert skipped["numbers"] == {"no number in the cut": 3 * len(SONGS)}  # songs have every length, no number
    assert skipped["date"] == {"no year in the cut": 3 * len(SONGS)}
    assert skipped["place"] == {"no other Geography article named in the cut": 3 * len(SONGS) + len(TOWNS)}
    assert "| numbers: no number in the cut | 36 |" in (tmp_path / "ds" / "stats.md").read_text(encoding="utf-8")


def test_same_arguments_give_the_same_bytes_and_another_seed_does_not(tmp_path):
    path = summaries(tmp_path)
    for out, seed in (("a", 3), ("b", 3), ("c", 4)):
        write_dataset(tmp_path / out, n_train=12, n_test=6, seed=seed, path=path)
    for file in ("train.jsonl", "test.jsonl", "wiki_stats.json", "stats.md", "summary.json"):
        assert (tmp_path / "a" / file).read_bytes() == (tmp_path / "b" / file).read_bytes()
    assert (tmp_path / "a" / "train.jsonl").read_bytes() != (tmp_path / "c" / "train.jsonl").read_bytes()


def test_asking_for_more_pairs_than_articles_is_a_clear_error(tmp_path):
    with pytest.raises(ValueError, match=r"train: only \d+ of 500 pairs could be built; every cell ran out"):
        write_dataset(tmp_path / "ds", n_train=500, n_test=6, seed=0, path=summaries(tmp_path))
    with pytest.raises(ValueError, match="unknown"):
        write_dataset(tmp_path / "ds", n_train=1, n_test=1, path=summaries(tmp_path), kinds=("order",))


def test_a_negative_count_takes_every_article_a_cell_can_use(tmp_path):
    counts = write_dataset(tmp_path / "ds", n_train=-1, n_test=6, seed=0, path=summaries(tmp_path),
                           kinds=("negation",))
    assert counts["test"] == 6 and counts["train"] == len(TOWNS) + len(PEOPLE) + len(SONGS) - 6


@pytest.mark.parametrize(("text", "sentences"), [
    ("John F. Kennedy was a president. He was born in 1917.",
     ["John F. Kennedy was a president.", "He was born in 1917."]),
    ("It lies in the U.S. It was founded c. 1450 by monks.", ["It lies in the U.S. It was founded c. 1450 by monks."]),
    ('He said "No." Then he left. (It rained.) Then he came.',
     ['He said "No."', "Then he left.", "(It rained.)", "Then he came."]),
])
def test_sentences_end_at_full_stops_that_are_no_initials(text, sentences):
    ends = ends_of(text)
    assert [text[start:end] for start, end in zip([0] + [e + 1 for e in ends[:-1]], ends, strict=True)] == sentences


def test_cuts_keep_to_their_length_class():
    first = "Alpha is a word of eight words here."
    short = f"{first} " + " ".join(["Beta is a sentence of ten words in all here."] * 2)
    long = f"{short} " + " ".join(["Gamma is a longer sentence that has exactly twelve words in it."] * 12)
    assert cut(long, "sentence") == first
    assert cut(long, "short") == short and words(cut(long, "short")) == 28
    assert 138 <= words(cut(long, "lead")) <= 150 and cut(long, "lead").endswith("in it.")
    assert words(cut(long, "lead", max_words=100)) <= 100
    two = f"{first} Beta is a sentence of ten words in all here."
    assert cut(f"{two} {'Delta is one long sentence of many words' + ', and more words' * 20}.", "short") == two
    for text, length, reason in (("Too short here.", "sentence", "under 8"), (first, "short", "no 2 sentences"),
                                 (short, "lead", "under 60")):
        with pytest.raises(Skip, match=reason):
            cut(text, length)


def test_a_change_reaches_left_until_it_names_one_place():
    text = "This is it. It is big and sells 1,500 cups, then 500 cups."
    rejected, changes = apply_edits(text, "x", [Edit(15, 17, "is not"), Edit(49, 52, "700")])
    assert rejected == "This is it. It is not big and sells 1,500 cups, then 700 cups."
    assert replay(text, changes) == rejected
    assert changes[0] == Change("x", "It is", "It is not")  # "is" alone first names the "is" of "This is"
    assert replay(text, [Change("x", "is", "is not")]) != rejected
    with pytest.raises(ValueError, match="whole words"):
        apply_edits(text, "x", [Edit(1, 4, "at")])


def test_a_swap_puts_the_asked_name_in_place_of_whole_words_only():
    asked = Article("Pipe organ", "The pipe organ is a musical instrument that makes its sound by driving "
                                  "pressurised air through many long pipes.", "Arts", "Wind instrument")
    partner = Article("Annelid", "Annelid is a worm of the phylum Annelida, like the Annelids, and an Annelid lives "
                                 "in mud.", "Arts", "Segmented worm")
    corpus = index([asked, partner], ("sentence",))
    pair = build(asked, "swap", "sentence", corpus, random.Random(0))
    assert pair.partner == "Annelid" and pair.chosen == asked.text
    assert pair.rejected == ("Pipe organ is a worm of the phylum Annelida, like the Annelids, and an pipe organ lives "
                             "in mud.")


def test_a_change_that_moves_the_length_by_over_a_tenth_is_skipped():
    nine = Article("Gorse", "Gorse is a shrub of dry and sunny heaths.", "Biology", "Shrub")
    ten = Article("Broom", "Broom is a shrub of dry and sunny open heaths.", "Biology", "Shrub")
    corpus = index([nine, ten], ("sentence",))
    assert build(ten, "negation", "sentence", corpus, random.Random(0)).rejected.startswith("Broom is not a shrub")
    with pytest.raises(Skip, match="over 10 %"):
        build(nine, "negation", "sentence", corpus, random.Random(0))


def test_the_command_writes_the_dataset_of_the_kinds_and_lengths_named(tmp_path):
    from data_synthesis.wiki_judge_pairs import main

    assert main(["--out", str(tmp_path / "ds"), "--n-train", "4", "--n-test", "2", "--summaries",
                 str(summaries(tmp_path)), "--kinds", "date", "--lengths", "short"]) == 0
    rows = records(tmp_path / "ds", "train") + records(tmp_path / "ds", "test")
    assert len(rows) == 6 and {r["id"].rsplit("-", 2)[0] for r in rows} == {"wiki-date-short"}


@pytest.mark.slow
def test_the_packaged_articles_give_every_kind_at_every_length(tmp_path):
    from data_synthesis.wiki_articles import read_articles
    from retrieval.wikipedia import summaries_file

    rows = {a.title: {"extract": a.text, "topic": a.topic} for a in read_articles()}
    cells = len(KINDS) * len(LENGTHS)
    write_dataset(tmp_path / "ds", n_train=cells, n_test=cells, seed=0, path=summaries_file())
    stats = json.loads((tmp_path / "ds" / "wiki_stats.json").read_text(encoding="utf-8"))
    assert set(stats["pairs"]["train"]["cell"].values()) == {1} and len(stats["pairs"]["train"]["cell"]) == cells
    for r in records(tmp_path / "ds", "train") + records(tmp_path / "ds", "test"):
        chosen, rejected = answers(r)
        title, length = r["meta"]["doc_ids"][0], r["meta"]["facts"][0]["value"]
        assert chosen == cut(rows[title]["extract"], length) and rows[title]["extract"].startswith(chosen)
        assert rejected != chosen and abs(words(rejected) - words(chosen)) <= 0.1 * words(chosen)
        if not r["meta"]["source"].endswith("swap"):
            assert replay(chosen, [Change(**c) for c in r["meta"]["corrupted"]]) == rejected
