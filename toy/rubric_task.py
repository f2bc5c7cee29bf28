"""The toy rubric task: preference triplets over toy-world entities, for tests, the README commands and the rubric
generator's learning proof on a laptop CPU.

A query asks for a report on one entity ("Write a report on Velaen."). The preferred report is drawn from that
entity's document; the rejected one from another entity's document that never names it. The hidden rule of the toy
scorer (toy/rubric_scorer.py) rates an item that names entities by whether the report mentions them, and
an item that names none at a flat 5, so only a rubric naming the query's entity separates the two reports.

A tiny from-scratch generator cannot write JSON at all, so it is first warmed up on a noisy mixture of rubrics
(`MIX`): specific ones (naming the entity), generic ones, ones naming a wrong entity, and broken JSON. GRPO on
half of the queries must then move probability to valid, specific rubrics; the other half is held out of GRPO
(the warm-up saw it the same way), so a gain there is a general skill, not a memorised string.

    task = ToyRubricTask(ToyWorld(0), n_queries=64)
    task.triplets("grpo"), task.triplets("heldout", per_query=2)
    task.sft_records(samples_per_query=40, rng=random.Random(0))
"""

from __future__ import annotations

import hashlib
import json
import random
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from openrm.rubrics.prompts import generation_messages
from toy.world import ToyWorld

PARTS = ("grpo", "heldout")
KINDS = ("person", "city", "river")
MIX = {"specific": 0.25, "generic": 0.25, "wrong_entity": 0.2, "broken": 0.3}
GENERIC_ITEMS = (("Clarity", "Easy to follow."), ("Structure", "Clear order."), ("Accuracy", "Right facts."),
                 ("Depth", "Explains why."))
_WORD = re.compile(r"[A-Za-z0-9]+")
# The JSON between an item's values, and the rubric words, as single tokens of a tiny generator's tokenizer: spelled
# out byte by byte, a two-item rubric is ~130 tokens; with these it is ~30, which a tiny model learns in minutes.
JSON_PIECES = ('[{"title": "', '", "description": "', '", "weight": ', '}, {"title": "', "}]")


def entity_words(text: str, entities: frozenset[str]) -> set[str]:
    """The task's entity names that occur in `text` as whole words."""
    return {w for w in _WORD.findall(text) if w in entities}


def entity_naming(rubrics: list[tuple[str, str]], entities: frozenset[str]) -> dict[str, Any]:
    """Over (query entity, generated rubric text) pairs, among the rubrics that parse: the share naming the query's
    own entity and the share naming another entity of the task (only the first separates the toy reports)."""
    from openrm.rubrics.record import RubricError, parse_rubric, strip_thinking

    valid = own = other = 0
    for entity, text in rubrics:
        try:
            rubric = parse_rubric(strip_thinking(text))
        except RubricError:
            continue
        named = entity_words(" ".join(f"{it.title} {it.description}" for it in rubric.items), entities)
        valid, own, other = valid + 1, own + (entity in named), other + bool(named - {entity})
    return {"valid_rubrics": valid, "names_own_entity": own / valid if valid else None,
            "names_other_entity": other / valid if valid else None}


def add_rubric_tokens(model_dir: str | Path) -> int:
    """Add `JSON_PIECES` and every word of the toy rubrics to the tokenizer in `model_dir` (a tiny model from
    toy/tiny.py), resize the model's embeddings and save both; returns the number of tokens added."""
    from tokenizers import AddedToken
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(model_dir)
    words = sorted({w for t, d in GENERIC_ITEMS for w in _WORD.findall(f"{t} {d}")} | {"Covers", "About"})
    added = tok.add_tokens([AddedToken(p, normalized=False) for p in JSON_PIECES]
                           + [AddedToken(w, single_word=True, normalized=False) for w in words])
    model = AutoModelForCausalLM.from_pretrained(model_dir)
    model.resize_token_embeddings(len(tok))
    model.save_pretrained(model_dir)
    tok.save_pretrained(model_dir)
    return added


def toy_entities(world: ToyWorld) -> frozenset[str]:
    """Every one-word entity a toy rubric query can be about (what the toy scorer recognises in text)."""
    return frozenset(d.subject for d in world.documents if d.kind in KINDS and " " not in d.subject)


class ToyRubricTask:
    """`n_queries` queries, one per distinct toy-world entity (people, cities, rivers), split in two halves by a
    hash of the query: "grpo" and "heldout"."""

    def __init__(self, world: ToyWorld, n_queries: int = 64, seed: int = 0):
        docs = [d for d in world.documents if d.kind in KINDS and " " not in d.subject]
        if n_queries < 4 or n_queries > len(docs):
            raise ValueError(f"n_queries must be in [4, {len(docs)}], got {n_queries}")
        self.world, self.seed = world, seed
        self.entities = toy_entities(world)
        self._docs = docs
        chosen = random.Random(f"rubric-task:{seed}").sample(docs, n_queries)
        ranked = sorted(chosen, key=lambda d: hashlib.sha256(self.query(d.subject).encode()).hexdigest())
        self._parts = {PARTS[0]: ranked[:n_queries // 2], PARTS[1]: ranked[n_queries // 2:]}

    @staticmethod
    def query(entity: str) -> str:
        return f"Write a report on {entity}."

    def _report(self, doc, rng: random.Random) -> str:
        sentences = [s if s.endswith(".") else s + "." for s in doc.text.split(". ") if s]
        return " ".join(sentences[:rng.randint(2, min(4, len(sentences)))])

    def triplets(self, part: str, per_query: int = 1) -> list[dict[str, Any]]:
        """Preference triplets {id, query, preferred, rejected, meta: {entity, part}} for the queries of `part`."""
        if part not in PARTS:
            raise ValueError(f"part must be one of {PARTS}, got {part!r}")
        rows = []
        for doc in self._parts[part]:
            rng = random.Random(f"rubric-triplet:{self.seed}:{doc.subject}")
            others = [d for d in self._docs if d.subject != doc.subject and doc.subject not in _WORD.findall(d.text)]
            for n in range(per_query):
                other = rng.choice(others)
                rows.append({"id": f"{doc.subject}-{n}", "query": self.query(doc.subject),
                             "preferred": self._report(doc, rng), "rejected": self._report(other, rng),
                             "meta": {"entity": doc.subject, "part": part, "rejected_entity": other.subject}})
        return rows

    def rubric(self, entity: str, kind: str, rng: random.Random) -> str:
        """One warm-up rubric of `kind` (a key of MIX) for a query on `entity`, as the generator should write it."""
        generic = [{"title": t, "description": d, "weight": rng.randint(1, 2)}
                   for t, d in rng.sample(GENERIC_ITEMS, rng.randint(1, 2))]
        if kind in ("specific", "wrong_entity", "broken"):
            name = entity if kind != "wrong_entity" else rng.choice(sorted(self.entities - {entity}))
            named = {"title": f"Covers {name}", "description": f"About {name}.",
                     "weight": rng.randint(2, 4)}
            items = [named, *generic]
        elif kind == "generic":
            items = generic + [{"title": t, "description": d, "weight": 1}
                               for t, d in GENERIC_ITEMS if t not in {g["title"] for g in generic}][:1]
        else:
            raise ValueError(f"unknown rubric kind {kind!r}; choose one of {sorted(MIX)}")
        text = json.dumps(items)
        if kind == "broken":
            flaw = rng.choice(("truncated", "no_weight", "zero_weight", "trailing"))
            if flaw == "truncated":  # cut after an item's weight: no closing brackets
                text = text[:text.rindex("}")]
            elif flaw == "no_weight":
                text = json.dumps([{k: v for k, v in it.items() if k != "weight"} for it in items])
            elif flaw == "zero_weight":
                text = json.dumps([{**it, "weight": 0} for it in items])
            else:
                text += " That is the rubric."
        return text

    def sft_records(self, samples_per_query: int, rng: random.Random,
                    mix: Mapping[str, float] | None = None, style: str = "compact") -> list[dict[str, Any]]:
        """Warm-up prompt/completion chat records for every query of both parts, rubrics drawn from `mix`."""
        mix = mix or MIX
        kinds = list(mix)
        records = []
        for part in PARTS:
            for doc in self._parts[part]:
                prompt = generation_messages(self.query(doc.subject), style)
                for kind in rng.choices(kinds, weights=[mix[k] for k in kinds], k=samples_per_query):
                    records.append({"prompt": prompt, "completion": [
                        {"role": "assistant", "content": self.rubric(doc.subject, kind, rng)}]})
        rng.shuffle(records)
        return records

    def grpo_rows(self, style: str = "compact") -> list[dict[str, Any]]:
        """GRPO rows: the triplets of the "grpo" part with the generator's chat prompt."""
        return [{**t, "prompt": generation_messages(t["query"], style)} for t in self.triplets("grpo")]
