"""openrm.evidence: whether shown evidence separates two answers, and the lexical reference."""

import pytest

from openrm.evidence import differing_quotes, lexical_verdict, overlap, separates

EVIDENCE = "Ulm is a city in Germany. Albert Einstein was born in Ulm in 1879 and died in Princeton in 1955."
RIGHT = "Albert Einstein was born in Ulm in 1879."


def example(right, wrong, label="A"):
    a, b = (right, wrong) if label == "A" else (wrong, right)
    return {"answer_a": a, "answer_b": b, "label": label}


@pytest.mark.parametrize("wrong, separated", [
    ("Albert Einstein was born in Ulm in 1884.", True),  # a number the evidence gives
    ("Albert Einstein was born in Bern in 1879.", True),  # "born in Ulm" only in the right one
    ("Albert Einstein was not born in Ulm in 1879.", True),  # "was born in" only in the right one
    (RIGHT, False),  # nothing separates identical answers
])
def test_separates_needs_a_span_the_evidence_shares_with_the_right_answer_only(wrong, separated):
    for label in "AB":
        assert separates(EVIDENCE, example(RIGHT, wrong, label)) is separated
    assert not separates("", example(RIGHT, wrong))
    assert not separates("Paris is the capital of France.", example(RIGHT, "Albert Einstein was born in Bern."))


def test_lexical_reference_picks_the_answer_the_evidence_holds_more_of():
    assert overlap(EVIDENCE, RIGHT) == 1.0
    assert overlap(EVIDENCE, "Einstein was born in Bern.") == pytest.approx(4 / 5)
    for label in "AB":
        assert lexical_verdict(EVIDENCE, example(RIGHT, "Albert Einstein was born in Bern in 1879.", label)) == label
    # exchanging two facts keeps every word: the lexical reference cannot tell them apart
    swapped = "Albert Einstein was born in Ulm in 1955 and died in Princeton in 1879."
    original = "Albert Einstein was born in Ulm in 1879 and died in Princeton in 1955."
    assert lexical_verdict(EVIDENCE, example(original, swapped)) == "tie"


@pytest.mark.parametrize("a,b,quotes", [
    ("It was first published on 40 April 1738 in London.", "It was first published on 25 April 1719 in London.",
     ("published on 40 April 1738 in London", "published on 25 April 1719 in London")),
    ("Paris is the capital of France.", "Paris is not the capital of France.",
     ("Paris is the capital", "Paris is not the capital")),
    ("In 1990 the town had 2,000 people.", "In 2,000 the town had 1990 people.",  # exchange: both numbers in view
     ("In 1990 the town had 2,000 people", "In 2,000 the town had 1990 people")),
    ("Tokyo is a big city in Japan with many people living there today.",
     "Tokyo is a river of Brazil flowing into the Atlantic ocean near the coast.",  # at most 8 words each
     ("is a big city in Japan with many", "is a river of Brazil flowing into the")),
])
def test_differing_quotes_show_where_the_answers_part_as_written(a, b, quotes):
    assert differing_quotes(a, b) == quotes
    assert differing_quotes(b, a) == quotes[::-1]


def test_differing_quotes_of_the_same_words_are_none():
    assert differing_quotes("Same words here.", "same words, here") is None
