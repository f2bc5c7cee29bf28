"""The toy-world synthesis oracle: stands in for the LLM with `toy.world`'s procedural questions and answers.

The positive states the document's facts, the negative gets some of them wrong, as an answer written without
the document would. Deterministic and offline: `build_dataset --oracle toyworld` (entry point group
`openrm.synthesis_oracles`) uses it for tests, through the same filters, A/B placement and record schema as the LLM
path.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from data_synthesis.pairs import Candidate
from data_synthesis.pipeline import Slot
from retrieval.corpus import CorpusPassage
from toy.world import DOMAINS, ToyWorld

GENERATOR = "oracle:toyworld"


class ToySynthesisOracle:
    generator = GENERATOR
    domains = DOMAINS
    # toy answers are short and differ only in the corrupted facts; toy questions come from a few templates
    filter_overrides = {"min_answer_words": 5, "max_pair_jaccard": 1.0, "duplicate_jaccard": 1.0}

    def __init__(self, seed: int = 0) -> None:
        self.world = ToyWorld(seed)
        self._examples: dict[str, dict[str, Any]] = {}

    def write_corpora(self, folder: Path) -> None:
        self.world.write_corpora(folder)

    def plan(self, split: str, domain: str, n: int) -> Slot:
        example = self.world.example(n, split, (domain,))
        doc = self.world.by_id[example["meta"]["doc_ids"][0]]
        slot = Slot(split, domain, doc.corpus, n, (CorpusPassage(doc.id, doc.title, doc.text),))
        self._examples[slot.id] = example
        return slot

    async def outcome(self, slot: Slot) -> Candidate:
        ex = self._examples.pop(slot.id)
        positive, negative = (ex["answer_a"], ex["answer_b"]) if ex["label"] == "A" else (ex["answer_b"],
                                                                                         ex["answer_a"])
        return Candidate(id=slot.id, split=slot.split, domain=slot.domain, corpus=slot.corpus,
                         question=ex["question"], positive=positive, negative=negative, documents=slot.documents,
                         source="toyworld", generator=GENERATOR, positive_finish="stop", negative_finish="stop",
                         oracle={"facts": ex["meta"]["facts"], "corrupted": ex["meta"]["corrupted"]})
