"""Toy world: determinism, A/B balance, facts grounded in documents, negatives that contradict them."""

import json

import pytest

from openrm.parsing import parse_response
from openrm.reward import RewardConfig, score
from toy.world import CORPUS_OF_DOMAIN, DOMAINS, GOLD_TOOL, ToyWorld, WorldSize, write_dataset


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


def test_hedged_train_pairs_name_both_values_keep_the_label_and_never_reach_the_test_split(tmp_path):
    from datasets import load_from_disk

    from toy.world import hedge_every

    world = ToyWorld(seed=1)
    write_dataset(world, tmp_path, n_train=40, n_test=12, style="short", granularity="fact", hedge_share=0.25)
    ds = load_from_disk(str(tmp_path / "dataset"))
    plain = world.examples(40, "train", style="short")
    hedged = [i for i, row in enumerate(ds["train"]) if row["id"].endswith("-hedge")]
    assert hedged == [i for i in range(40) if hedge_every(0.25)(i)] and len(hedged) == 10
    for i in hedged:
        row, before = ds["train"][i], plain[i]
        fact = before["meta"]["corrupted"][0]
        right, wrong = ("answer_a", "answer_b") if row["label"] == "A" else ("answer_b", "answer_a")
        assert row["label"] == before["label"] and row[right] == before[right] and row["meta"]["hedge"]
        assert fact["true"] in row[wrong] and fact["wrong"] in row[wrong] and row[wrong] != before[wrong]
    assert not any(row["id"].endswith("-hedge") for row in ds["test"])
    assert [row["id"] for row in ds["test"]] == [e["id"] for e in world.examples(12, "test", style="short")]
    # the audit's own hedge wording (eval.hostile) is not among the training wordings
    assert not any("Some sources say otherwise" in row[k] for row in ds["train"] for k in ("answer_a", "answer_b"))
    with pytest.raises(ValueError, match="hedge_share"):
        write_dataset(world, tmp_path / "bad", 4, 2, style="short", hedge_share=1.5)
    with pytest.raises(ValueError, match="short"):
        write_dataset(world, tmp_path / "long", 4, 2, hedge_share=0.5)
    with pytest.raises(ValueError, match="short or recombined"):
        world.hedged(world.example(0))


def test_wide_hedges_cover_both_shapes_and_never_use_the_audits_connective(tmp_path):
    from eval.hostile import KINDS
    from toy.world import HEDGE_WORDINGS, HEDGES

    wide = HEDGE_WORDINGS["wide"]
    assert set(HEDGES) < set(wide) and len(wide) == 18
    # the whole wrong answer beside the whole right one, in either order, as well as bare values
    assert any(w.index("{right}") < w.index("{wrong}") for w in wide if "{right}" in w and "{wrong}" in w)
    assert any(w.index("{wrong}") < w.index("{right}") for w in wide if "{right}" in w and "{wrong}" in w)
    assert "{true_value} or {wrong_value}" in wide and "{wrong_value} or {true_value}" in wide
    audit = KINDS["hedge"]("Q?", "RIGHT", "WRONG", None)
    connective = audit.removeprefix("RIGHT").removesuffix("WRONG").strip()
    assert connective and not any(connective.lower() in w.lower() for w in wide)
    world = ToyWorld(seed=1)
    write_dataset(world, tmp_path, n_train=200, n_test=4, style="short", granularity="fact", hedge_share=0.5,
                  hedge_wordings="wide")
    rows = [json.loads(line) for line in (tmp_path / "train.jsonl").read_text().splitlines()]
    hedges = [r for r in rows if r["meta"].get("hedge")]
    assert len(hedges) == 100
    for row in hedges:
        fact = row["meta"]["corrupted"][0]
        wrong = row["answer_b"] if row["label"] == "A" else row["answer_a"]
        assert fact["true"] in wrong and fact["wrong"] in wrong
    # 100 hedges draw on more than the six older wordings: some hold a whole sentence of each answer
    assert sum(wrong.count(" ") > 8 for wrong in (r["answer_b"] if r["label"] == "A" else r["answer_a"]
                                                  for r in hedges)) > 10
    with pytest.raises(ValueError, match="hedge_wordings"):
        write_dataset(world, tmp_path / "bad", 4, 2, style="short", hedge_share=0.5, hedge_wordings="many")
    with pytest.raises(ValueError, match="wordings"):
        world.hedged(world.example(0, style="short"), wordings="many")


@pytest.mark.parametrize("bad", [{"cities": 0}, {"test_share": 1.0}])
def test_bad_world_size_is_rejected(bad):
    with pytest.raises(ValueError):
        WorldSize(**bad)


def test_unknown_domain_and_split_are_rejected(world):
    with pytest.raises(ValueError, match="domains"):
        world.examples(3, domains=("legal",))
    with pytest.raises(ValueError, match="split"):
        world.example(0, split="dev")


def test_short_pairs_differ_in_one_single_word_value_and_balance_labels():
    from toy.world import SHORT_FACTS

    world = ToyWorld(0)
    examples = world.examples(60, "train", style="short")
    assert sum(e["label"] == "A" for e in examples) == 30
    assert {e["domain"] for e in examples} == {"wiki", "science", "medical"}
    for e in examples:
        fact = e["meta"]["corrupted"][0]
        doc = world.by_id[e["meta"]["doc_ids"][0]]
        assert fact["attribute"] in SHORT_FACTS[doc.kind] and dict(doc.facts)[fact["attribute"]] == fact["true"]
        assert " " not in fact["true"] and " " not in fact["wrong"] and fact["true"] != fact["wrong"]
        right, wrong = (e["answer_a"], e["answer_b"]) if e["label"] == "A" else (e["answer_b"], e["answer_a"])
        assert right.replace(fact["true"], fact["wrong"]) == wrong
    assert world.examples(5, "test", style="short") == world.examples(5, "test", style="short")
    assert world.examples(3) == [world.example(i) for i in range(3)]  # the long style is untouched
    with pytest.raises(ValueError, match="style"):
        world.example(0, style="tiny")


def test_compact_trajectory_is_a_correct_well_formed_judgment_on_the_fact_passage():
    from openrm.parsing import parse_response
    from openrm.reward import RewardConfig, score

    world = ToyWorld(0)
    passages = {p.id: p for name in ("wiki", "arxiv") for p in world.fact_passages(name)}
    for e in world.examples(30, "train", style="short"):
        text = world.compact_trajectory(e)
        parsed = parse_response(text)
        assert parsed.well_formed and parsed.answer == e["label"]
        assert score(parsed, e, RewardConfig()).total == 1.5
        (call,) = parsed.searches
        assert call.tool == e["gold_tool"] and call.query.startswith(e["meta"]["subject"])
        fact = e["meta"]["corrupted"][0]
        passage = passages[f"{e['meta']['doc_ids'][0]}-{fact['attribute']}"]
        assert fact["true"] in passage.text and passage.text in text
        assert f"{fact['true']} {e['label']}</think>" in text  # the letter follows the value: a copy to learn
        other = "ARXIV" if e["gold_tool"] == "WIKI" else "WIKI"
        assert parse_response(world.compact_trajectory(e, tool=other)).searches[0].tool == other
    with pytest.raises(ValueError, match="short"):
        world.compact_trajectory(world.example(0))


def test_fact_corpus_has_one_passage_per_fact(tmp_path):
    world = ToyWorld(0)
    paths = world.write_corpora(tmp_path, granularity="fact")
    rows = (tmp_path / "wiki.tsv").read_text(encoding="utf-8").splitlines()
    wiki_docs = world.corpus("wiki")
    assert len(rows) - 1 == sum(len(d.facts) for d in wiki_docs) and paths["wiki"]["tsv"].exists()
    with pytest.raises(ValueError, match="granularity"):
        world.write_corpora(tmp_path, granularity="sentence")
