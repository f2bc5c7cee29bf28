"""The synthesis loop: plan query slots per (split, domain), run them concurrently, filter in slot order.

Every slot is a pure function of (seed, split, domain, n) and the corpus, and every LLM reply comes from the
request cache on a rerun, so an interrupted run resumed with the same arguments yields the same records. Slots
that fall short (drops) are made up in further rounds; each slot ends as a Candidate or a Reject with a reason.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import math
from collections import Counter
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from data_synthesis.filters import DuplicateIndex, FilterConfig, pair_problem, positive_problem, trimmed
from data_synthesis.pairs import Candidate, answer_messages, balanced_labels, to_record
from data_synthesis.queries import (
    QUESTION_FORMATS,
    QuestionRules,
    parse_question,
    parse_text_question,
    query_messages,
    question_problem,
)
from plumbing.llm_client import ChatClient
from retrieval.corpus import CorpusPassage

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Slot:
    split: str
    domain: str
    corpus: str
    n: int
    documents: tuple[CorpusPassage, ...]

    @property
    def id(self) -> str:
        return f"syn-{self.split}-{self.domain}-{self.n:06d}"


@dataclass(frozen=True)
class Reject:
    slot: Slot
    reason: str
    detail: str = ""
    question: str = ""
    positive: str = ""
    negative: str = ""

    def to_json(self) -> dict[str, Any]:
        return {"id": self.slot.id, "split": self.slot.split, "domain": self.slot.domain, "reason": self.reason,
                "detail": self.detail, "doc_ids": [d.id for d in self.slot.documents], "question": self.question,
                "positive": self.positive, "negative": self.negative}


Outcome = Candidate | Reject


@dataclass(frozen=True)
class SynthesisConfig:
    seed: int = 0
    max_doc_chars: int = 4000
    query_max_tokens: int = 256
    answer_max_tokens: int = 1024
    query_temperature: float = 0.8
    answer_temperature: float = 0.7
    send_seed: bool = True  # pass a per-request `seed` (vLLM, OpenAI and transformers serve accept it)
    question_format: str = "json"  # or "text": one plain line ending with "?" (small generators)
    oversample: float = 1.15  # slots planned per missing record in the first round
    max_rounds: int = 3
    rules: QuestionRules = field(default_factory=QuestionRules)
    filters: FilterConfig = field(default_factory=FilterConfig)

    def __post_init__(self) -> None:
        if self.oversample < 1 or self.max_rounds < 1:
            raise ValueError(f"need oversample >= 1 and max_rounds >= 1; got {self}")
        if self.question_format not in QUESTION_FORMATS:
            raise ValueError(f"question_format must be one of {QUESTION_FORMATS}, got {self.question_format!r}")


def request_seed(seed: int, slot_id: str, role: str) -> int:
    return int.from_bytes(hashlib.sha256(f"{seed}:{slot_id}:{role}".encode()).digest()[:4], "little") >> 1


async def synthesize(client: ChatClient, slot: Slot, cfg: SynthesisConfig) -> Outcome:
    """Question, then the answer with the documents, then (if that one passes its filters) the answer without,
    for one slot (LLM path)."""
    def params(role: str, max_tokens: int, temperature: float) -> dict[str, Any]:
        seed = request_seed(cfg.seed, slot.id, role) if cfg.send_seed else None
        return {"max_tokens": max_tokens, "temperature": temperature, "seed": seed}

    asked = query_messages(slot.domain, slot.documents, cfg.max_doc_chars, cfg.question_format)
    query = params("query", cfg.query_max_tokens, cfg.query_temperature)
    if cfg.question_format == "text":
        q_result = await client.chat(asked, **query)
        if not q_result.ok:
            return Reject(slot, "query_llm_failed", q_result.error or "")
        try:
            question = parse_text_question(q_result.content)
        except ValueError:
            return Reject(slot, "query_no_question", q_result.content[:500])
    else:
        obj, q_result, problem = await client.chat_json(asked, **query)
        if obj is None:
            detail = q_result.error if problem == "llm_failed" else q_result.content[:500]
            return Reject(slot, f"query_{problem}", detail or "")
        try:
            question = parse_question(obj)
        except ValueError as exc:
            return Reject(slot, "query_bad_schema", str(exc))
    problem = question_problem(question, slot.documents, cfg.rules)
    if problem:
        return Reject(slot, f"question_{problem}", question=question)
    answer = params("answer", cfg.answer_max_tokens, cfg.answer_temperature)
    pos = await client.chat(answer_messages(slot.domain, question, slot.documents, cfg.max_doc_chars), **answer)
    if not pos.ok:
        return Reject(slot, "positive_llm_failed", pos.error or "", question=question)
    # the answer without documents is only worth its tokens when the positive can be kept
    problem = positive_problem(*trimmed(pos.content.strip(), pos.finish_reason, cfg.filters),
                               [d.text for d in slot.documents], cfg.filters)
    if problem:
        return Reject(slot, problem, question=question, positive=pos.content.strip())
    neg = await client.chat(answer_messages(slot.domain, question, None), **answer)
    if not neg.ok:
        return Reject(slot, "negative_llm_failed", neg.error or "", question=question, positive=pos.content.strip())
    return Candidate(id=slot.id, split=slot.split, domain=slot.domain, corpus=slot.corpus, question=question,
                     positive=pos.content.strip(), negative=neg.content.strip(), documents=slot.documents,
                     source="llm", generator=client.cfg.model, positive_finish=pos.finish_reason,
                     negative_finish=neg.finish_reason, request_keys=(q_result.key, pos.key, neg.key))


class Selection:
    """Accepts outcomes in slot order: pair filters, then near-duplicate questions across both splits."""

    def __init__(self, filters: FilterConfig) -> None:
        self.filters = filters
        self.duplicates = DuplicateIndex(filters.duplicate_jaccard)
        self.kept_ids: list[str] = []
        self.accepted: dict[tuple[str, str], list[Candidate]] = {}
        self.rejects: list[Reject] = []

    def offer(self, slot: Slot, outcome: Outcome) -> None:
        if isinstance(outcome, Reject):
            self.rejects.append(outcome)
            return
        c = outcome
        if self.filters.trim_truncated:
            (positive, pos_finish), (negative, neg_finish) = (trimmed(c.positive, c.positive_finish, self.filters),
                                                              trimmed(c.negative, c.negative_finish, self.filters))
            c = replace(c, positive=positive, positive_finish=pos_finish, negative=negative,
                        negative_finish=neg_finish)
        problem = pair_problem(c.positive, c.positive_finish, c.negative, c.negative_finish,
                               [d.text for d in c.documents], self.filters)
        if problem is None:
            earlier = self.duplicates.add(c.question)
            if earlier is not None:
                problem = "duplicate_question"
                c_detail = f"near-duplicate of {self.kept_ids[earlier]}"
            else:
                self.kept_ids.append(c.id)
                self.accepted.setdefault((c.split, c.domain), []).append(c)
                return
        else:
            c_detail = ""
        self.rejects.append(Reject(slot, problem, c_detail, c.question, c.positive, c.negative))

    def drops(self) -> Counter:
        return Counter(r.reason for r in self.rejects)


async def run_rounds(plan: Callable[[str, str, int], Slot], outcome: Callable[[Slot], Awaitable[Outcome]],
                     needs: dict[tuple[str, str], int], cfg: SynthesisConfig, progress: bool = True) -> Selection:
    """Plan and run slots until every (split, domain) has its records or `max_rounds` is spent.

    `needs` is ordered (test first, so near-duplicates are dropped from train rather than test)."""
    from tqdm.auto import tqdm

    selection = Selection(cfg.filters)
    planned = dict.fromkeys(needs, 0)
    for round_no in range(cfg.max_rounds):
        todo: list[Slot] = []
        for key, need in needs.items():
            have = len(selection.accepted.get(key, []))
            if have >= need:
                continue
            # later rounds plan by the yield seen so far, at most 4 slots per missing record
            factor = cfg.oversample if planned[key] == 0 else min(4.0, max(cfg.oversample, planned[key] / max(have, 1)))
            count = math.ceil((need - have) * factor)
            todo += [plan(key[0], key[1], n) for n in range(planned[key], planned[key] + count)]
            planned[key] += count
        if not todo:
            break
        bar = tqdm(total=len(todo), desc=f"round {round_no + 1}", unit="slot", disable=not progress)

        async def run_one(slot: Slot, bar=bar) -> Outcome:
            try:
                return await outcome(slot)
            except Exception as exc:  # one bad slot must not end a run of thousands; it is kept as a reject
                logger.exception("slot %s failed", slot.id)
                return Reject(slot, "internal_error", f"{type(exc).__name__}: {exc}")
            finally:
                bar.update(1)

        results = await asyncio.gather(*(run_one(slot) for slot in todo))
        bar.close()
        for slot, result in zip(todo, results, strict=True):
            selection.offer(slot, result)
    return selection


def final_records(selection: Selection, needs: dict[tuple[str, str], int], seed: int) -> dict[str, list[dict]]:
    """Per split, the first `need` accepted candidates of each domain with balanced A/B placement."""
    records: dict[str, list[dict]] = {}
    for (split, domain), need in needs.items():
        chosen: Sequence[Candidate] = selection.accepted.get((split, domain), [])[:need]
        labels = balanced_labels(len(chosen), seed, f"{split}:{domain}")
        records.setdefault(split, []).extend(to_record(c, lab, seed) for c, lab in zip(chosen, labels, strict=True))
    return records
