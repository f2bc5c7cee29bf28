"""The toy search-agent task: entities split three ways with no overlap, gold trajectories that search the right
corpus and answer the passage's value, guesses that are wrong, an exact search share, and the oracle's hedge
detection."""

from __future__ import annotations

import random

import pytest

from openrm.agent import final_answer
from openrm.protocol import GOLD_TOOL
from toy.agent_task import PARTS, ToyAgentTask
from toy.oracle import ToyOracle
from toy.world import ToyWorld


@pytest.fixture(scope="module")
def task():
    return ToyAgentTask(ToyWorld(0))


def test_entities_are_split_three_ways_without_overlap(task):
    entities = {part: {r["meta"]["doc_ids"][0] for r in task.rows(part)} for part in PARTS}
    assert all(len(e) > 50 for e in entities.values())
    assert not entities["warmup"] & entities["grpo"] and not entities["grpo"] & entities["heldout"]
    assert not entities["warmup"] & entities["heldout"]
    assert [r["id"] for r in ToyAgentTask(ToyWorld(0)).rows("heldout")] == [r["id"] for r in task.rows("heldout")]
    with pytest.raises(ValueError, match="part"):
        task.rows("test")


def test_warmup_records_search_the_gold_corpus_or_guess_wrong_in_an_exact_share(task):
    records = task.sft_records(200, 0.3, random.Random(0))
    warm = {r["question"]: r for r in task.rows("warmup")}
    oracle = ToyOracle.from_rows(task.world, list(warm.values()))
    searched = 0
    for record in records:
        row = warm[record["prompt"][1]["content"]]
        text = record["completion"][0]["content"]
        answer = final_answer(text)
        if "<search>" in text:
            searched += 1
            assert text.startswith(f'<search>{GOLD_TOOL[row["domain"]]}("{row["meta"]["subject"]} ')
            assert answer == row["answer"] and row["answer"] in text.split("<information>")[1]
            assert oracle.agreements(row["question"], answer) == 1
        else:
            assert oracle.agreements(row["question"], answer) == 0 and text == f"<answer>{answer}</answer>"
    assert searched == 60  # exactly 3 in every 10
    assert all("<search>" in r["completion"][0]["content"] for r in task.sft_records(20, 1.0, random.Random(1)))
    with pytest.raises(ValueError, match="search_share"):
        task.sft_records(5, 1.5, random.Random(0))


def test_the_oracle_names_every_value_a_hedge_holds(task):
    row = task.rows("heldout")[0]
    oracle = ToyOracle.from_rows(task.world, [row])
    rival = task._rivals[row["id"]][0]
    assert oracle.named(row["question"], f"{row['answer']} or {rival}") == {row["answer"].lower(), rival.lower()}
    assert oracle.named(row["question"], "I do not know") == set()
    assert oracle.named("not a question?", row["answer"]) == set()
