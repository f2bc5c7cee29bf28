"""`ToyOracle`: a pairwise match judge that knows the toy world's facts (tests and the policy learning proof), and
`toy_prompts`, the policy prompt rows it judges. Pure Python; no model.

    world = ToyWorld(0)
    rows = toy_prompts(world, 200, "train")
    judge = ToyOracle.from_rows(world, rows)     # keyed by each row's question
    Arena(pairwise=judge).run(RoundRobin(), rows[0]["question"], answers)

A policy prompt row (a dataset row for `train/grpo_policy.py`; TRL hands every column to the reward as a list):
    {"id": str, "prompt": str, "question": str,
     "meta": {"source": "toyworld", "world_seed": int, "doc_ids": [str], "facts": [{"attribute": str, "value": str}]}}
`meta.doc_ids[0]` names the document the question is about and each `facts[*].attribute` a fact of it that the
answer should state; the truth is read from the document itself (`value` is only checked against it).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping, Sequence
from typing import Any

from toy.world import ToyWorld

logger = logging.getLogger(__name__)


class ToyOracle:
    """An answer *agrees* with a fact when it states the document's value for it and no other value that the world
    holds for the same attribute (naming every city does not agree with anything). The answer agreeing with more of
    the question's facts wins (1.0 / 0.0); equal counts are a tie (0.5). A question it has no facts for is a
    failure (None), logged. Symmetric in its two answers, so `orders = 2`: one item per pair is enough."""

    orders = 2

    def __init__(self, world: ToyWorld, facts_of: Mapping[str, Sequence[tuple[str, str]]]):
        """`facts_of`: question -> [(document id, attribute key)]."""
        values: dict[tuple[str, str], set[str]] = {}
        for doc in world.documents:
            for key, value in doc.facts:
                values.setdefault((doc.kind, key), set()).add(value)
        self._facts: dict[str, list[tuple[str, re.Pattern]]] = {}
        for question, facts in facts_of.items():
            checks = []
            for doc_id, key in facts:
                if doc_id not in world.by_id:
                    raise ValueError(f"question {question!r} is about {doc_id!r}, which world {world.seed} lacks")
                doc = world.by_id[doc_id]
                truth = dict(doc.facts).get(key)
                if truth is None:
                    raise ValueError(f"document {doc_id} has no fact {key!r} (it has {[k for k, _ in doc.facts]})")
                rivals = sorted(values[(doc.kind, key)] | {truth}, key=len, reverse=True)  # longest match first
                pattern = re.compile(r"(?<!\w)(" + "|".join(map(re.escape, rivals)) + r")(?!\w)", re.IGNORECASE)
                checks.append((truth.lower(), pattern))
            self._facts[question] = checks

    @classmethod
    def from_rows(cls, world: ToyWorld, rows: Sequence[Mapping[str, Any]]) -> ToyOracle:
        """Key the oracle by the rows' questions (policy prompt rows or toy judge examples)."""
        facts_of: dict[str, list[tuple[str, str]]] = {}
        for row in rows:
            meta = row["meta"]
            doc_id = meta["doc_ids"][0]
            truth = dict(world.by_id[doc_id].facts) if doc_id in world.by_id else {}
            for fact in meta["facts"]:
                if fact["attribute"] in truth and fact["value"] != truth[fact["attribute"]]:
                    raise ValueError(f"row {row.get('id')!r} says {fact['attribute']} is {fact['value']!r} but "
                                     f"{doc_id} says {truth[fact['attribute']]!r}: is it from another world seed?")
            pairs = [(doc_id, f["attribute"]) for f in meta["facts"]]
            if facts_of.setdefault(row["question"], pairs) != pairs:
                raise ValueError(f"question {row['question']!r} appears with different facts")
        return cls(world, facts_of)

    def agreements(self, question: str, answer: str) -> int | None:
        """How many of the question's facts `answer` agrees with; None for an unknown question."""
        checks = self._facts.get(question)
        if checks is None:
            return None
        return sum({m.lower() for m in pattern.findall(answer)} == {truth} for truth, pattern in checks)

    def named(self, question: str, answer: str) -> set[str]:
        """The values of the question's attributes that `answer` names (lower-cased); empty for an unknown
        question. More than one for a single-fact question is a hedge."""
        return {m.lower() for _, pattern in self._facts.get(question, []) for m in pattern.findall(answer)}

    def compare_many(self, items: Sequence[tuple[str, str, str]]) -> list[float | None]:
        out: list[float | None] = []
        for question, x, y in items:
            sx, sy = self.agreements(question, x), self.agreements(question, y)
            out.append(None if sx is None or sy is None else 1.0 if sx > sy else 0.0 if sx < sy else 0.5)
        unknown = sum(p is None for p in out)
        if unknown:
            logger.warning("toy oracle: %d of %d items ask about questions it has no facts for (failures)", unknown,
                           len(out))
        return out


def toy_prompts(world: ToyWorld, n: int, split: str = "train", style: str = "short") -> list[dict[str, Any]]:
    """`n` policy prompt rows from the world's judge examples of `split` (their questions and facts; the answer
    pairs are dropped). The prompt is the bare question: a policy writes the answer."""
    rows = []
    for example in world.examples(n, split, style=style):
        meta = example["meta"]
        rows.append({"id": example["id"], "prompt": example["question"], "question": example["question"],
                     "meta": {"source": "toyworld", "world_seed": world.seed, "doc_ids": list(meta["doc_ids"]),
                              "facts": [dict(f) for f in meta["facts"]]}})
    return rows


KNOWN_PROMPTS = 2000  # per split and style: the questions `match_judge` knows when its rows carry no facts


def match_judge(spec: Any, rows: Sequence[Mapping[str, Any]] = ()) -> ToyOracle:
    """The `toy-oracle` match judge kind (entry point group `openrm.match_judges`) for toy world `spec.world_seed`.
    Rows with `meta.facts` (policy prompt rows) key it; rows without (best-of-N candidate sets, preference rows)
    must ask questions of the world's first KNOWN_PROMPTS prompts of each split and style."""
    world = ToyWorld(spec.world_seed)
    keyed = [r for r in rows if isinstance(r.get("meta"), Mapping) and "facts" in r["meta"]]
    if keyed:
        return ToyOracle.from_rows(world, keyed)
    oracle = ToyOracle.from_rows(world, [r for split in ("train", "test") for style in ("long", "short")
                                         for r in toy_prompts(world, KNOWN_PROMPTS, split, style)])
    unknown = [r["question"] for r in rows if oracle.agreements(r["question"], "") is None]
    if unknown:
        raise ValueError(f"{len(unknown)} of {len(rows)} questions are not toy questions of world {world.seed} "
                         f"(first: {unknown[0]!r}): check the world seed")
    return oracle

