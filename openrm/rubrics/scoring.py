"""Eq. 2 of the query-specific rubrics paper: a report's rubric score is the weighted mean of its item ratings,
each 1-10 rating mapped linearly onto [0, 1]. Pure functions; a missing rating is never filled in.

    rubric_score(rubric, [8, 3])      # sum_k w_k (r_k - 1) / 9 over the sum of the positive w_k

A penalty item (negative weight) is rated by how much the report commits the mistake it names, so its term
lowers the score; the score then lies in [-(sum of |penalty weights|) / (sum of positive weights), 1].
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from openrm.rubrics.prompts import RATING_MAX, RATING_MIN
from openrm.rubrics.record import Rubric


def normalise_rating(rating: float) -> float:
    """A 1-10 rating on [0, 1]: 1 -> 0, 10 -> 1."""
    if not RATING_MIN <= rating <= RATING_MAX:
        raise ValueError(f"rating {rating} is outside {RATING_MIN}-{RATING_MAX}")
    return (rating - RATING_MIN) / (RATING_MAX - RATING_MIN)


def rubric_score(rubric: Rubric, ratings: Sequence[float | None]) -> float | None:
    """S(report | rubric): in [0, 1] without penalty items, at most 1 with them; None when any item's rating is
    missing (the scorer failed on it)."""
    if len(ratings) != len(rubric.items):
        raise ValueError(f"{len(ratings)} ratings for a rubric of {len(rubric.items)} items")
    if any(r is None for r in ratings):
        return None
    return math.fsum(w * normalise_rating(r) for w, r in zip(rubric.weights, ratings, strict=True))
