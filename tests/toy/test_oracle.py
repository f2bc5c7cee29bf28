"""The toy-world oracle match judge: it agrees with the gold label of every toy judge pair (short and long), a
hedge naming a rival value agrees with nothing, equal answers tie, and unknown questions are logged failures."""

from __future__ import annotations

import logging

import numpy as np
import pytest

from openrm.tournament import Arena, RoundRobin
from toy.oracle import ToyOracle, toy_prompts
from toy.world import ToyWorld


@pytest.fixture(scope="module")
def world():
    return ToyWorld(0)


@pytest.mark.parametrize("style,n", [("short", 300), ("long", 150)])
@pytest.mark.parametrize("split", ["train", "test"])
def test_oracle_agrees_with_every_toy_label(world, style, n, split):
    examples = world.examples(n, split, style=style)
    oracle = ToyOracle.from_rows(world, examples)
    got = oracle.compare_many([(e["question"], e["answer_a"], e["answer_b"]) for e in examples])
    assert got == [1.0 if e["label"] == "A" else 0.0 for e in examples]


def fact(world, row):
    doc = world.by_id[row["meta"]["doc_ids"][0]]
    key = row["meta"]["facts"][0]["attribute"]
    rival = next(d for d in world.documents if d.kind == doc.kind and dict(d.facts)[key] != dict(doc.facts)[key])
    return dict(doc.facts)[key], dict(rival.facts)[key]


def test_truth_beats_silence_and_a_rival_hedges_and_ties_are_even(world):
    rows = toy_prompts(world, 40)
    oracle = ToyOracle.from_rows(world, rows)
    row = next(r for r in rows if r["meta"]["facts"][0]["attribute"] == "founded")
    q = row["question"]
    true, wrong = fact(world, row)
    items = [(q, f"It was founded in {true}.", "I do not know."),
             (q, "No idea.", f"Founded in {true.upper()}, I think."),
             (q, f"Either {true} or {wrong}.", "No idea."),  # a hedge agrees with nothing
             (q, f"In {true}.", f"Surely in {true}!"),
             (q, f"In 1{true}.", "No idea."),  # a longer number is not the value
             ("a question nobody asked", f"In {true}.", "No idea.")]
    assert oracle.compare_many(items) == [1.0, 0.0, 0.5, 0.5, 0.5, None]


def test_rows_carry_their_document_and_fact(world):
    rows = toy_prompts(world, 20, "test")
    assert len({r["id"] for r in rows}) == 20
    for r in rows:
        doc = world.by_id[r["meta"]["doc_ids"][0]]
        assert world.split_of[doc.id] == "test" and doc.subject in r["question"] and r["prompt"] == r["question"]
        assert r["meta"]["facts"][0]["value"] == dict(doc.facts)[r["meta"]["facts"][0]["attribute"]]


def test_rows_from_another_world_are_refused(world):
    rows = toy_prompts(ToyWorld(1), 30)
    with pytest.raises(ValueError, match="world seed|lacks|no fact"):
        ToyOracle.from_rows(world, rows)


def test_oracle_in_an_arena_ranks_the_true_answers_first_and_logs_unknown_questions(world, caplog):
    caplog.set_level(logging.WARNING, logger="openrm.tournament")
    row = toy_prompts(world, 1)[0]
    oracle = ToyOracle.from_rows(world, [row])
    true, wrong = fact(world, row)
    answers = [f"It is {wrong}.", f"It is {true}.", "Pass.", f"Definitely {true}."]
    result = Arena(oracle).run(RoundRobin(), row["question"], answers)
    assert set(result.ranking[:2]) == {1, 3} and result.scores[1] == result.scores[3]
    assert result.scores[0] == result.scores[2] < result.scores[1]
    unknown = Arena(oracle).run(RoundRobin(), "unknown?", answers)
    assert unknown.failures == len(unknown.matches) and np.ptp(unknown.scores) == 0
    assert "no facts for" in caplog.text
