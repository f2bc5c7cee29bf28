"""Preference pairs: the answer written with the source documents (positive) against the one written without
(negative), placed as A/B by a seeded coin, in the judge-example record of DESIGN.md.

Both answers get the same instructions, so the documents are the only difference between them; the positive is
told not to mention its sources, which would hand the judge a cue unrelated to answer quality.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from data_synthesis.queries import MEDICAL, PROMPTS_VERSION, SCIENCE, WIKI, render_documents
from openrm.dataset import check_example
from openrm.protocol import GOLD_TOOL
from retrieval.corpus import CorpusPassage

_STYLE = {
    WIKI: "Write like a careful encyclopedia contributor: concrete names, dates and figures, organised by theme.",
    SCIENCE: "Write like a technical overview for a researcher: the problem, the approach, the evidence and how "
             "it compares with related work.",
    MEDICAL: "Write clearly and accurately for a general reader: what it is, causes, symptoms, diagnosis and "
             "treatment, as far as the question asks.",
}
_ANSWER_SYSTEM = (
    "You are a knowledgeable assistant. Answer the user's question in a complete, well-organised answer of "
    "several paragraphs. {style} Write the answer itself: no preamble, and do not say where your information "
    "comes from."
)


def answer_messages(domain: str, question: str, documents: Sequence[CorpusPassage] | None,
                    max_doc_chars: int = 4000) -> list[dict]:
    """The chat for one answer: with `documents` as reference material (positive) or without (negative)."""
    if domain not in _STYLE:
        raise ValueError(f"unknown domain {domain!r}; expected one of {sorted(_STYLE)}")
    system = _ANSWER_SYSTEM.format(style=_STYLE[domain])
    if documents:
        user = ("Reference material you may rely on for facts (do not mention it or copy it verbatim):\n\n"
                f"{render_documents(documents, max_doc_chars)}\n\nQuestion: {question}")
    else:
        user = f"Question: {question}"
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


@dataclass(frozen=True)
class Candidate:
    """A question with its two answers, before filtering and A/B placement."""

    id: str
    split: str
    domain: str
    corpus: str
    question: str
    positive: str
    negative: str
    documents: tuple[CorpusPassage, ...]
    source: str  # "llm" or "toyworld"
    generator: str  # model name, or "oracle:toyworld"
    positive_finish: str | None = None
    negative_finish: str | None = None
    request_keys: tuple[str, ...] = ()
    oracle: dict[str, Any] = field(default_factory=dict)  # toy-world facts/corrupted, for gold trajectories


def balanced_labels(n: int, seed: int, stream: str) -> list[str]:
    """Where the positive goes, for `n` records: consecutive pairs share one seeded coin and take opposite sides,
    so the counts of A and B differ by at most one."""
    labels = []
    for i in range(n):
        coin = random.Random(f"{seed}:{stream}:ab:{i // 2}").random() < 0.5
        labels.append("A" if coin == (i % 2 == 0) else "B")
    return labels


def to_record(c: Candidate, label: str, seed: int) -> dict[str, Any]:
    """The judge example for `c` with the positive placed at `label`; validated."""
    if label not in ("A", "B"):
        raise ValueError(f"label must be 'A' or 'B', got {label!r}")
    a, b = (c.positive, c.negative) if label == "A" else (c.negative, c.positive)
    record = {
        "id": c.id, "domain": c.domain, "question": c.question, "answer_a": a, "answer_b": b, "label": label,
        "gold_tool": GOLD_TOOL[c.domain],
        "meta": {
            "source": c.source, "generator": c.generator, "prompts_version": PROMPTS_VERSION, "seed": seed,
            "split": c.split, "corpus": c.corpus, "doc_ids": [d.id for d in c.documents],
            "documents": [{"id": d.id, "title": d.title, "text": d.text} for d in c.documents],
            "positive_finish": c.positive_finish, "negative_finish": c.negative_finish,
            "request_keys": list(c.request_keys),
            "facts": list(c.oracle.get("facts", [])), "corrupted": list(c.oracle.get("corrupted", [])),
        },
    }
    check_example(record, c.id)
    return record


def features():
    """Arrow column types of a record, fixed so empty splits and every run share one schema."""
    from datasets import Features, Value

    text = Value("string")
    return Features({
        "id": text, "domain": text, "question": text, "answer_a": text, "answer_b": text, "label": text,
        "gold_tool": text,
        "meta": {
            "source": text, "generator": text, "prompts_version": text, "seed": Value("int64"), "split": text,
            "corpus": text, "doc_ids": [text], "documents": [{"id": text, "title": text, "text": text}],
            "positive_finish": text, "negative_finish": text, "request_keys": [text],
            "facts": [{"attribute": text, "value": text}],
            "corrupted": [{"attribute": text, "true": text, "wrong": text}],
        },
    })


def preference_rows(folder: str | Path, split: str, limit: int = 0) -> list[dict[str, Any]]:
    """A build_dataset output split (`<folder>/<split>.jsonl`) as binarized preference rows (`prompt_id`, `prompt`,
    `chosen`, `rejected`, `metadata`), the answer written with the documents as `chosen`: the shape
    `train.select_preferences` and TRL's DPO read. `limit`: the first N records (0: all)."""
    import json

    rows = []
    for line in (Path(folder) / f"{split}.jsonl").read_text(encoding="utf-8").splitlines():
        r = json.loads(line)
        if r.get("label") not in ("A", "B"):
            raise ValueError(f"{folder}/{split}.jsonl: record {r.get('id')!r} has no A/B label")
        good, bad = (r["answer_a"], r["answer_b"]) if r["label"] == "A" else (r["answer_b"], r["answer_a"])
        rows.append({"prompt_id": r["id"], "prompt": r["question"], "chosen": good, "rejected": bad,
                     "metadata": {"source": "build_dataset", "domain": r.get("domain")}})
        if limit and len(rows) == limit:
            break
    return rows
