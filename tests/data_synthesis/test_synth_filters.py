"""Filters, question checks, document grouping/splitting and A/B placement: table-driven, pure."""

from __future__ import annotations

import random

import pytest

from data_synthesis.builder import BuildDatasetArguments, split_needs
from data_synthesis.documents import GroupCycle, group_passages, reservoir, sample_window, split_by_title
from data_synthesis.filters import DuplicateIndex, FilterConfig, answer_problem, pair_problem, shares_ngram
from data_synthesis.pairs import balanced_labels
from data_synthesis.queries import QuestionRules, parse_question, query_messages, question_problem
from retrieval.corpus import CorpusPassage

CFG = FilterConfig()
LONG = " ".join(f"word{i}" for i in range(40))  # 40 distinct words
OTHER = " ".join(f"other{i}" for i in range(40))
DOC = CorpusPassage("d1", "Kalon", "The river Kalon rises in the Vess mountains and flows north for three hundred "
                                   "kilometres before it empties into the Marn sea near the old port town of Ostra.")


@pytest.mark.parametrize("text,finish,expected", [
    ("", "stop", "empty"),
    ("   \n", "stop", "empty"),
    (LONG, "length", "truncated"),
    ("I'm sorry, but I cannot help with that. " + LONG, "stop", "refusal"),
    ("I cannot provide medical advice. " + LONG, "stop", "refusal"),
    ("As an AI language model I do not know. " + LONG, "stop", "refusal"),
    ("Too short to be a long-form answer.", "stop", "too_short"),
    (LONG, "stop", None),
    (LONG, None, None),
    ("Sorry tales are a genre of folk story. " + LONG, "stop", None),  # not a refusal: no "sorry," opener
])
def test_answer_problem(text, finish, expected):
    assert answer_problem(text, finish, CFG) == expected


@pytest.mark.parametrize("positive,negative,documents,expected", [
    (LONG, OTHER, [], None),
    ("", OTHER, [], "positive_empty"),
    (LONG, "I apologise, I do not know. " + OTHER, [], "negative_refusal"),
    ("According to the provided document, " + LONG, OTHER, [], "positive_mentions_source"),
    ("As described in the passage, " + LONG, OTHER, [], "positive_mentions_source"),
    (LONG, "Based on the context, " + OTHER, [], "negative_mentions_source"),
    (LONG + " " + DOC.text, OTHER + " " + OTHER, [DOC.text], "positive_copies_document"),
    (LONG, LONG + " extra", [], "pair_too_similar"),
    (LONG + " " + " ".join(f"more{i}" for i in range(200)), OTHER, [], "pair_length_ratio"),
])
def test_pair_problem(positive, negative, documents, expected):
    cfg = FilterConfig(max_length_ratio=5.0)
    assert pair_problem(positive, "stop", negative, "stop", documents, cfg) == expected


def test_truncated_side_is_named():
    assert pair_problem(LONG, "stop", OTHER, "length", [], CFG) == "negative_truncated"


@pytest.mark.parametrize("question,expected", [
    ("How did the Kalon river shape trade in the port town of Ostra over the centuries?", None),
    ("Explain the course of the Kalon river and its role for the Marn sea region.", None),
    ("Is the Kalon river longer than the Vess?", "yes_no"),
    ("Does Ostra still use its port?", "yes_no"),
    ("What does this passage say about the river?", "not_self_contained"),
    ("Summarise the document about the Kalon river and its sources.", "not_self_contained"),
    ("What is the river mentioned above known for, historically?", "not_self_contained"),
    ("Why?", "too_short"),
    ("Why " + "very " * 90 + "long?", "too_long"),
    ("Why is it said that the river Kalon rises in the Vess mountains and flows north for three hundred "
     "kilometres?", "quotes_document"),
])
def test_question_problem(question, expected):
    assert question_problem(question, [DOC], QuestionRules()) == expected


@pytest.mark.parametrize("obj,ok", [({"question": "  Why   so? "}, "Why so?"), ({"q": "x"}, None),
                                    ({"question": ""}, None), ({"question": 3}, None)])
def test_parse_question(obj, ok):
    if ok is None:
        with pytest.raises(ValueError):
            parse_question(obj)
    else:
        assert parse_question(obj) == ok


@pytest.mark.parametrize("domain", ["wiki", "science", "medical"])
def test_query_messages_per_domain_differ_and_hold_every_document(domain):
    docs = [DOC, CorpusPassage("d2", "Kalon", "Second passage body.")]
    messages = query_messages(domain, docs)
    others = {d: query_messages(d, docs)[0]["content"] for d in ("wiki", "science", "medical") if d != domain}
    assert all(messages[0]["content"] != o for o in others.values())
    assert "[1] Kalon" in messages[1]["content"] and "Second passage body." in messages[1]["content"]
    assert "more than one" in messages[0]["content"]  # the multi-document instruction
    assert "more than one" not in query_messages(domain, docs[:1])[0]["content"]


def test_near_duplicates_are_found_and_distinct_questions_kept():
    index = DuplicateIndex(0.8)
    questions = ["How did the Kalon river shape trade in the port town of Ostra?",
                 "How did the Kalon river shape the trade in the port town of Ostra?",
                 "What treatments exist for Varn fever and how well do they work?",
                 "how did the kalon river shape trade in the port town of ostra",
                 "Compare sparse mixture-of-experts routing with dense transformers for translation."]
    assert [index.add(q) for q in questions] == [None, 0, None, 0, None]


def test_shares_ngram():
    assert shares_ngram("a b c d e", ["x a b c d y"], 4)
    assert not shares_ngram("a b c d e", ["x a b c y d e"], 4)


def test_balanced_labels_are_balanced_seeded_and_not_constant():
    for n in (1, 2, 7, 100, 101):
        labels = balanced_labels(n, 0, "train:wiki")
        assert abs(labels.count("A") - labels.count("B")) <= 1
    assert balanced_labels(50, 0, "s") == balanced_labels(50, 0, "s")
    assert balanced_labels(50, 0, "s") != balanced_labels(50, 1, "s")
    assert len({tuple(balanced_labels(50, 0, "s")[i:i + 4]) for i in range(0, 48, 2)}) > 1


def _passages():
    titles = ["A"] * 5 + ["B"] + ["C"] * 2 + ["D", "E", "F", "G", "H"]
    return [CorpusPassage(f"p{i}", t, f"text {i}") for i, t in enumerate(titles)]


def test_groups_are_consecutive_same_title_runs_capped():
    groups = list(group_passages(_passages(), "wiki", max_group=3))
    assert [[p.id for p in g.passages] for g in groups][:4] == [["p0", "p1", "p2"], ["p3", "p4"], ["p5"],
                                                                  ["p6", "p7"]]
    window = sample_window(groups[0], 3, random.Random(0))
    ids = [int(p.id[1:]) for p in window]
    assert 1 <= len(ids) <= 3 and ids == list(range(ids[0], ids[0] + len(ids)))  # neighbours, in order


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_split_by_title_is_disjoint_and_reservoir_keeps_k(seed):
    groups = list(group_passages(_passages(), "wiki", max_group=2))
    sample = reservoir(iter(groups), 8, random.Random(seed))
    assert len(sample) == 8 and len({id(g) for g in sample}) == 8
    sides = split_by_title(groups, 0.25, seed)
    train_titles, test_titles = {g.title for g in sides["train"]}, {g.title for g in sides["test"]}
    assert train_titles and test_titles and not train_titles & test_titles
    assert len(sides["train"]) + len(sides["test"]) == len(groups)
    cycle = GroupCycle(sides["train"], seed, "k")
    first = [cycle[i].passages for i in range(len(sides["train"]))]
    assert sorted(map(str, first)) == sorted(str(g.passages) for g in sides["train"])  # each once per cycle


def test_merge_repeated_and_needs():
    from transformers import HfArgumentParser

    argv = ["--corpus", "wiki=a", "--out", "o", "--corpus", "arxiv=b", "--corpus=medical=c", "--oracle", "toyworld"]
    (args,) = HfArgumentParser(BuildDatasetArguments).parse_args_into_dataclasses(args=argv)
    assert args.corpus == ["wiki=a", "arxiv=b", "medical=c"]  # every repeat kept (plumbing.arguments.Collect)
    needs = split_needs(["wiki", "science", "medical"], 10, 2)
    assert list(needs)[:2] == [("test", "wiki"), ("test", "science")]  # test first; medical gets no test pair
    assert sum(v for (s, _), v in needs.items() if s == "train") == 10 and needs[("train", "wiki")] == 4


def test_trim_truncated_keeps_complete_sentences_only_when_asked():
    from data_synthesis.filters import trimmed

    cut = 'Gorillas live in Africa. They eat "plants." The eastern gorilla is the larg'
    assert trimmed(cut, "length", FilterConfig()) == (cut, "length")
    assert trimmed(cut, "length", FilterConfig(trim_truncated=True)) == (
        'Gorillas live in Africa. They eat "plants."', "stop")
    assert trimmed("no sentence ends here", "length", FilterConfig(trim_truncated=True))[1] == "length"
    assert trimmed(cut, "stop", FilterConfig(trim_truncated=True)) == (cut, "stop")
