"""Toy world: determinism, A/B balance, facts grounded in documents, negatives that contradict them."""

import json

import pytest

from openrm.parsing import parse_response
from openrm.reward import RewardConfig, score
from openrm.toyworld import CORPUS_OF_DOMAIN, DOMAINS, GOLD_TOOL, ToyWorld, WorldSize, write_dataset


@pytest.fixture(scope="module")
def world():
    return ToyWorld(seed=7)


@pytest.fixture(scope="module")
def examples(world):
    return world.examples(1000)


def sides(example):
    positive = example["answer_a"] if example["label"] == "A" else example["answer_b"]
    negative = example["answer_b"] if example["label"] == "A" else example["answer_a"]
    return positive, negative


def test_deterministic_under_a_seed(examples):
    again = ToyWorld(seed=7)
    assert again.examples(1000) == examples
    assert ToyWorld(seed=8).examples(20) != examples[:20]


def test_example_is_stable_whatever_n(world, examples):
    assert world.examples(10) == examples[:10]


def test_ab_balance_within_5_percent(examples):
    share_a = sum(e["label"] == "A" for e in examples) / len(examples)
    assert abs(share_a - 0.5) <= 0.05


def test_records_follow_the_design(examples):
    for e in examples:
        assert set(e) == {"id", "domain", "question", "answer_a", "answer_b", "label", "gold_tool", "meta"}
        assert e["domain"] in DOMAINS and e["label"] in ("A", "B")
        assert e["gold_tool"] == GOLD_TOOL[e["domain"]]
        assert e["answer_a"] != e["answer_b"]
    assert len({e["id"] for e in examples}) == len(examples)
    assert {e["domain"] for e in examples} == set(DOMAINS)


def test_positive_facts_are_in_the_document(world, examples):
    for e in examples:
        doc = world.by_id[e["meta"]["doc_ids"][0]]
        page = f"{doc.title}\n{doc.text}"
        positive, _ = sides(e)
        assert doc.corpus == CORPUS_OF_DOMAIN[e["domain"]]
        for fact in e["meta"]["facts"]:
            assert fact["value"] in page, (e["id"], fact)
            assert fact["value"] in positive, (e["id"], fact)
            assert dict(doc.facts)[fact["attribute"]] == fact["value"]


def test_negatives_contradict_the_document(world, examples):
    for e in examples:
        doc = world.by_id[e["meta"]["doc_ids"][0]]
        page = f"{doc.title}\n{doc.text}"
        _, negative = sides(e)
        assert 1 <= len(e["meta"]["corrupted"]) <= 2
        for c in e["meta"]["corrupted"]:
            assert c["true"] == dict(doc.facts)[c["attribute"]]
            assert c["wrong"] != c["true"]
            assert c["wrong"] in negative and c["wrong"] not in page, (e["id"], c)
            assert c["true"] not in negative, (e["id"], c)


def test_train_and_test_use_disjoint_documents(world):
    train = {e["meta"]["doc_ids"][0] for e in world.examples(300, "train")}
    test = {e["meta"]["doc_ids"][0] for e in world.examples(300, "test")}
    assert train and test and not train & test


def test_gold_trajectories_are_well_formed_and_earn_full_reward(world, examples):
    cfg = RewardConfig()
    for e in examples[:200]:
        parsed = parse_response(world.gold_trajectory(e))
        assert parsed.well_formed, parsed.errors
        assert parsed.answer == e["label"]
        assert [s.tool for s in parsed.searches] == [e["gold_tool"]]
        assert e["meta"]["subject"] in parsed.searches[0].query
        assert e["meta"]["corrupted"][0]["true"] in parsed.evidence[0]
        assert score(parsed, e, cfg).total == 1.5


def test_corpora_in_both_formats(tmp_path):
    world = ToyWorld(seed=1, size=WorldSize(cities=5, people=5, rivers=3, papers=6, conditions=4))
    paths = world.write_corpora(tmp_path)
    for name, files in paths.items():
        docs = world.corpus(name)
        lines = files["tsv"].read_text(encoding="utf-8").splitlines()
        assert lines[0] == "id\ttext\ttitle"
        rows = [line.split("\t") for line in lines[1:]]
        assert [r[0] for r in rows] == [d.id for d in docs] and all(len(r) == 3 for r in rows)
        records = [json.loads(line) for line in files["jsonl"].read_text(encoding="utf-8").splitlines()]
        assert [(r["id"], r["title"], r["contents"]) for r in records] == [(d.id, d.title, d.text) for d in docs]
    assert {d.domain for d in world.corpus("arxiv")} == {"science"}
    with pytest.raises(ValueError, match="unknown corpus"):
        world.corpus("pubmed")


def test_dataset_dict_round_trip(tmp_path):
    from datasets import load_from_disk

    world = ToyWorld(seed=2)
    write_dataset(world, tmp_path, n_train=30, n_test=10)
    ds = load_from_disk(str(tmp_path / "dataset"))
    assert {k: len(v) for k, v in ds.items()} == {"train": 30, "test": 10}
    row = ds["train"][0]
    assert row["question"] == world.examples(1)[0]["question"]
    assert row["meta"]["doc_ids"] == world.examples(1)[0]["meta"]["doc_ids"]
    assert len((tmp_path / "test.jsonl").read_text().splitlines()) == 10


@pytest.mark.parametrize("bad", [{"cities": 0}, {"test_share": 1.0}])
def test_bad_world_size_is_rejected(bad):
    with pytest.raises(ValueError):
        WorldSize(**bad)


def test_unknown_domain_and_split_are_rejected(world):
    with pytest.raises(ValueError, match="domains"):
        world.examples(3, domains=("legal",))
    with pytest.raises(ValueError, match="split"):
        world.example(0, split="dev")
