"""Best-of-N candidate sets: one prompt and its N candidates with optional gold ratings, read from our JSONL or from
rows shaped like the public `openbmb/UltraFeedback` files. Every adjustment and drop is counted, never silent.

    loaded = load_candidate_sets("ultrafeedback.jsonl", rating="overall_score")
    loaded.sets[0].candidates, loaded.sets[0].ratings

Ours: {"id", "question" | "prompt", "candidates": [str, ...], "ratings": [float | null, ...] (optional)}.
UltraFeedback: {"source", "instruction", "completions": [{"model", "response", "overall_score",
"fine-grained_score", ...}], ...} (no id: the row number is the id).
"""

from __future__ import annotations

import logging
import math
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from eval.loaders import COERCED, BadRow, Skip, answer_text, object_rows

logger = logging.getLogger(__name__)

RATINGS = ("overall_score", "fine-grained_score")  # UltraFeedback's per-completion gold ratings
MISSING = object()  # a completion without the rating field (told apart from an explicit null)


@dataclass(frozen=True)
class CandidateSet:
    id: str
    index: int  # row number in the file: seeds the tournament and the pick's tie-break
    question: str
    candidates: tuple[str, ...]
    ratings: tuple[float, ...] | None  # None: the row has no gold ratings (picks only, no accuracy)

    @property
    def best(self) -> list[int]:
        """Indices sharing the top gold rating (any of them is a correct pick)."""
        if self.ratings is None:
            return []
        top = max(self.ratings)
        return [i for i, r in enumerate(self.ratings) if r == top]


@dataclass
class LoadedSets:
    source: str
    sets: list[CandidateSet]
    skipped: list[Skip] = field(default_factory=list)  # whole rows
    dropped: list[Skip] = field(default_factory=list)  # single candidates (no usable gold rating, no response)
    adjusted: list[Skip] = field(default_factory=list)  # candidates kept after turning a non-text answer into text
    formats: Counter = field(default_factory=Counter)  # usable rows per input shape

    def summary(self) -> dict[str, Any]:
        def count(items: list[Skip]) -> dict[str, int]:
            return dict(Counter(s.reason for s in items).most_common())

        return {"sets": len(self.sets), "formats": dict(self.formats), "skipped_rows": count(self.skipped),
                "dropped_candidates": count(self.dropped), "adjusted_candidates": count(self.adjusted),
                "sets_without_ratings": sum(s.ratings is None for s in self.sets)}


def gold_rating(value: Any) -> tuple[float | None, str | None]:
    """A gold rating as a finite float, or None with the reason it is unusable; a numeric string is read as its
    number (noted). Booleans, "N/A" and other text, NaN and infinities are unusable."""
    if value is MISSING:
        return None, "rating field missing"
    if value is None:
        return None, "rating null"
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        return None, f"rating of type {type(value).__name__}"
    if isinstance(value, str):
        try:
            number = float(value.strip())
        except ValueError:
            return None, f"rating {value.strip()[:20]!r} is not a number"
        return (number, "numeric text rating read as a number") if math.isfinite(number) else (
            None, f"rating {value.strip()[:20]!r} is not finite")
    return (float(value), None) if math.isfinite(value) else (None, f"rating {value!r} is not finite")


def _candidate(value: Mapping[str, Any], key: str, where: str, loaded: LoadedSets) -> str:
    meta: dict[str, Any] = {}
    text = answer_text(value, key, meta)  # the eval loaders' rule: null → "", numbers → str, chat → assistant text
    loaded.adjusted.extend(Skip(where, note) for note in meta[COERCED])
    return text


def read_candidate_set(row: Mapping[str, Any], index: int, where: str, rating: str, loaded: LoadedSets,
                       seen: set[str]) -> CandidateSet:
    """One row (ours or UltraFeedback's) as a candidate set; its drops and adjustments go into `loaded` only when
    the row is usable. A row that cannot be one raises `BadRow`."""
    rid = str(row["id"]) if row.get("id") is not None else str(index)
    if rid in seen:
        raise BadRow("duplicate id")
    pending = LoadedSets(loaded.source, [])  # a skipped row's candidates are not counted as adjusted or dropped
    if "completions" in row:
        shape, question = "ultrafeedback", row.get("instruction")
        completions = row["completions"]
        if not isinstance(completions, list):
            raise BadRow("completions is not a list")
        texts, ratings = [], []
        for c, completion in enumerate(completions):
            at = f"{where} completion {c}"
            if not isinstance(completion, Mapping) or "response" not in completion:
                pending.dropped.append(Skip(at, "completion without a response field"))
                continue
            texts.append(_candidate(completion, "response", at, pending))
            ratings.append(completion[rating] if rating in completion else MISSING)
    elif "candidates" in row:
        shape, question = "jsonl", row["question"] if "question" in row else row.get("prompt")
        if not isinstance(row["candidates"], list):
            raise BadRow("candidates is not a list")
        texts = [_candidate({"c": v}, "c", f"{where} candidate {c}", pending) for c, v in enumerate(row["candidates"])]
        ratings = row.get("ratings")
        if ratings is not None and (not isinstance(ratings, list) or len(ratings) != len(texts)):
            raise BadRow("ratings is not a list as long as candidates")
    else:
        raise BadRow("neither candidates (our JSONL) nor completions (UltraFeedback)")
    if not isinstance(question, str) or not question.strip():
        raise BadRow("no question text")
    if ratings is not None:
        kept_texts, kept = [], []
        for c, (text, value) in enumerate(zip(texts, ratings, strict=True)):
            number, why = gold_rating(value)
            if number is None:
                pending.dropped.append(Skip(f"{where} candidate {c}", f"{why}: candidate dropped"))
                continue
            if why:
                pending.adjusted.append(Skip(f"{where} candidate {c}", why))
            kept_texts.append(text)
            kept.append(number)
        texts, ratings = kept_texts, kept
    if len(texts) < 2:
        raise BadRow("fewer than 2 candidates" + (" with a usable rating" if ratings is not None else ""))
    loaded.formats[shape] += 1
    loaded.dropped += pending.dropped
    loaded.adjusted += pending.adjusted
    return CandidateSet(rid, index, question, tuple(texts), None if ratings is None else tuple(ratings))


def load_candidate_sets(path: str | Path, rating: str = "overall_score", split: str | None = None,
                        limit: int | None = None) -> LoadedSets:
    """The first `limit` usable candidate sets of `path` (JSON, JSONL, parquet or an HF dataset folder).
    `rating`: the UltraFeedback completion field read as the gold rating."""
    if rating not in RATINGS:
        raise ValueError(f"rating must be one of {RATINGS}, got {rating!r}")
    loaded = LoadedSets(str(path), [])
    seen: set[str] = set()
    for index, where, row in object_rows(path, split):
        if limit is not None and len(loaded.sets) >= limit:
            break
        try:
            if isinstance(row, BadRow):
                raise row
            got = read_candidate_set(row, index, where, rating, loaded, seen)
        except BadRow as exc:
            loaded.skipped.append(Skip(where, str(exc)))
            continue
        seen.add(got.id)
        loaded.sets.append(got)
    if not loaded.sets:
        raise ValueError(f"{path}: no usable candidate sets; skipped {len(loaded.skipped)} rows "
                         f"(first: {loaded.skipped[0].reason if loaded.skipped else 'the file is empty'})")
    summary = loaded.summary()
    logger.info("%s: %d candidate sets; skipped rows %s; dropped candidates %s; adjusted candidates %s", path,
                len(loaded.sets), summary["skipped_rows"], summary["dropped_candidates"],
                summary["adjusted_candidates"])
    return loaded
