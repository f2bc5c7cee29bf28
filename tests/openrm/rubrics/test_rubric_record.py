"""Rubric parsing: a valid rubric reads back exactly, each malformation is a RubricError naming its field, and no
input makes the parser raise anything else."""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from openrm.rubrics import Rubric, RubricError, RubricItem, is_valid, parse_rubric

GOOD = [{"title": "Names Velaen", "description": "Says who Velaen was.", "weight": 3},
        {"title": "Clarity", "description": "Easy to follow.", "weight": 1.0}]


def test_valid_rubric_reads_back_with_normalised_weights():
    rubric = parse_rubric(json.dumps(GOOD))
    assert rubric.items == (RubricItem("Names Velaen", "Says who Velaen was.", 3.0),
                            RubricItem("Clarity", "Easy to follow.", 1.0))
    assert rubric.weights == (0.75, 0.25)
    assert parse_rubric(rubric.to_json()) == rubric
    assert "1. [weight 0.75] Names Velaen: Says who Velaen was." in rubric.render()


def test_one_code_fence_and_surrounding_whitespace_are_accepted():
    assert parse_rubric("\n```json\n" + json.dumps(GOOD) + "\n```\n").weights == (0.75, 0.25)


def _without(i, key):
    return [{k: v for k, v in it.items() if not (n == i and k == key)} for n, it in enumerate(GOOD)]


def _with(i, key, value):
    return [{**it, key: value} if n == i else it for n, it in enumerate(GOOD)]


@pytest.mark.parametrize("text,field,words", [
    (json.dumps(_without(1, "weight")), "items[1].weight", "missing"),
    (json.dumps(_without(0, "title")), "items[0].title", "missing"),
    (json.dumps(_without(0, "description")), "items[0].description", "missing"),
    (json.dumps(_with(0, "weight", 0)), "items[0].weight", "other than 0"),
    (json.dumps(_with(1, "weight", float("inf"))), "items[1].weight", "finite"),
    (json.dumps(_with(0, "weight", "3")), "items[0].weight", "number"),
    (json.dumps(_with(0, "weight", True)), "items[0].weight", "number"),
    (json.dumps(_with(0, "weight", None)), "items[0].weight", "number"),
    (json.dumps(_with(0, "weight", float("nan"))), "items[0].weight", "finite"),
    ('[{"title": "a", "description": "b", "weight": 1e999}]', "items[0].weight", "finite"),
    ('[{"title": "a", "description": "b", "weight": 1' + "0" * 400 + "}]", "items[0].weight", "finite"),
    (json.dumps(_with(1, "title", "  ")), "items[1].title", "empty"),
    (json.dumps(_with(1, "description", 7)), "items[1].description", "string"),
    (json.dumps(_with(1, "id", 7)), "items[1].id", "unknown field"),
    (json.dumps(_with(1, "title", "names VELAEN")), "items[1].title", "repeats"),
    ("not json at all", "rubric", "not JSON"),
    ("", "rubric", "empty"),
    ("```json\n```", "rubric", "empty"),
    (json.dumps(GOOD)[:-5], "rubric", "not JSON"),
    ("Here is the rubric: " + json.dumps(GOOD), "rubric", "text before the JSON"),
    (json.dumps(GOOD) + " Hope this helps!", "rubric", "extra text after"),
    (json.dumps(GOOD) + json.dumps(GOOD), "rubric", "extra text after"),
    ("[]", "rubric", "empty"),
    ('{"rubric": []}', "rubric", "JSON array"),
    ('"a string"', "rubric", "JSON array"),
    ("[1, 2]", "items[0]", "object"),
    ("[" * 100000, "rubric", "JSON"),
])
def test_each_malformation_names_its_field(text, field, words):
    with pytest.raises(RubricError) as info:
        parse_rubric(text)
    assert info.value.field == field and words in info.value.message, str(info.value)
    assert not is_valid(text)


def test_too_many_items_and_non_text_inputs():
    items = [{"title": f"t{i}", "description": "d", "weight": 1} for i in range(5)]
    with pytest.raises(RubricError, match="at most 4"):
        parse_rubric(json.dumps(items), max_items=4)
    for thing in (None, 3, b"[]", GOOD):
        with pytest.raises(RubricError) as info:
            parse_rubric(thing)
        assert info.value.field == "rubric"


def test_the_record_itself_refuses_bad_values():
    with pytest.raises(RubricError):
        Rubric(())
    with pytest.raises(RubricError, match=r"items\[0\].weight"):
        Rubric.of([("a", "b", 0.0)])
    assert math.isclose(sum(Rubric.of([("a", "b", 0.1), ("c", "d", 0.2), ("e", "f", 0.3)]).weights), 1.0)


_json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(
        st.sampled_from(["title", "description", "weight", "x"]), inner, max_size=4),
    max_leaves=12)


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.text(max_size=80), _json_values.map(json.dumps),
                 _json_values.map(lambda v: "noise " + json.dumps(v))))
def test_never_raises_outside_its_documented_error(text):
    try:
        rubric = parse_rubric(text)
    except RubricError:
        return
    assert rubric.items and math.isclose(sum(w for w in rubric.weights if w > 0), 1.0)
    assert all(w != 0 for w in rubric.weights)


def test_penalty_items_take_off_their_share_and_are_marked_for_the_rater():
    from openrm.rubrics.prompts import rate_item_messages
    from openrm.rubrics.scoring import rubric_score

    text = json.dumps([{"title": "Names Kalon", "description": "Says what Kalon is.", "weight": 3},
                       {"title": "Gives the year", "description": "States the founding year.", "weight": 1},
                       {"title": "Wrong year", "description": "States a founding year other than 1541.", "weight": -2}])
    rubric = parse_rubric(text)
    assert rubric.weights == (0.75, 0.25, -0.5) and rubric.penalties == (2,)
    assert rubric_score(rubric, [10, 10, 1]) == 1.0  # every positive item met, no mistake made
    assert rubric_score(rubric, [10, 10, 10]) == 0.5  # the penalty's share taken off
    assert rubric_score(rubric, [1, 1, 10]) == -0.5  # the floor: -(sum of |penalties|) / (sum of positives)
    assert "[penalty 0.50] Wrong year" in rubric.render() and "[weight 0.75] Names Kalon" in rubric.render()
    user = rate_item_messages("q", rubric.items[2], "r")[-1]["content"]
    assert "[penalty] Wrong year" in user and "makes this mistake" in user
    assert "[penalty]" not in rate_item_messages("q", rubric.items[0], "r")[-1]["content"]


def test_zero_weights_penalty_only_rubrics_and_many_items():
    with pytest.raises(RubricError, match=r"items\[1\].weight.*other than 0"):
        parse_rubric(json.dumps([{"title": "a", "description": "b", "weight": 1},
                                 {"title": "c", "description": "d", "weight": 0}]))
    with pytest.raises(RubricError, match="positive weight"):
        parse_rubric(json.dumps([{"title": "a", "description": "b", "weight": -1}]))
    with pytest.raises(RubricError, match="positive weight"):
        Rubric.of([("a", "b", -1.0)])
    with pytest.raises(RubricError, match="must be a number"):
        parse_rubric(json.dumps([{"title": "a", "description": "b", "weight": "3"}]))
    many = [{"title": f"t{i}", "description": "d", "weight": 1 + i % 3} for i in range(100)]
    assert len(parse_rubric(json.dumps(many)).items) == 100  # no cap unless the caller sets one
