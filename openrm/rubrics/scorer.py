"""Rubric scorers: who rates a report against a rubric item (and judges rubrics, and runs the no-rubric baselines).

    scorer = ChatScorer(ClientConfig("http://127.0.0.1:8000/v1", "Qwen/Qwen3-8B"), "runs/x/scorer_cache.jsonl")
    scores = score_reports(scorer, [(query, rubric, report), ...])    # Eq. 2 per report, one concurrent batch

`ChatScorer` speaks to any OpenAI-compatible server through `plumbing.llm_client` (bounded concurrency,
retries with `plumbing.retry`'s policy, a JSONL cache that makes a killed run resume without resending anything
answered, one repair turn for a reply without JSON). A rating that cannot be had comes back as a `Rating` with
`error` set, and a report with any such item gets no score (`ReportScore.score is None`): never a default value.
`toy.rubric_scorer.ToyScorer` is the same interface computed in process from the toy task's hidden rule.
"""

from __future__ import annotations

import asyncio
import logging
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple, Protocol

from openrm.rubrics import prompts
from openrm.rubrics.record import Rubric, RubricItem
from openrm.rubrics.scoring import rubric_score

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Rating:
    value: int | str | None  # a 1-10 rating, or "A"/"B" from `compare`; None when it failed
    error: str | None = None  # why no value came back

    @property
    def ok(self) -> bool:
        return self.error is None


class ItemAsk(NamedTuple):
    query: str
    item: RubricItem
    report: str


class RubricAsk(NamedTuple):
    query: str
    rubric: Rubric


class ReportAsk(NamedTuple):
    query: str
    report: str
    rubric: Rubric | None = None  # shown whole: one holistic rating against every item (implicit scoring)


class PairAsk(NamedTuple):
    query: str
    report_a: str
    report_b: str


class Scorer(Protocol):
    def rate_items(self, asks: Sequence[ItemAsk]) -> list[Rating]: ...
    def judge_rubrics(self, asks: Sequence[RubricAsk]) -> list[Rating]: ...
    def rate_reports(self, asks: Sequence[ReportAsk]) -> list[Rating]: ...
    def compare(self, asks: Sequence[PairAsk]) -> list[Rating]: ...


@dataclass(frozen=True)
class ReportScore:
    score: float | None  # Eq. 2: at most 1, below 0 only through penalty items; None when any rating failed
    ratings: tuple[int | None, ...]
    errors: tuple[str, ...] = ()  # "item <k>: <why>" for every failed item


def score_reports(scorer: Scorer, asks: Sequence[tuple[str, Rubric, str]]) -> list[ReportScore]:
    """Eq. 2 for every (query, rubric, report), all item ratings asked of the scorer in one batch."""
    flat = [ItemAsk(query, item, report) for query, rubric, report in asks for item in rubric.items]
    ratings = scorer.rate_items(flat) if flat else []
    if len(ratings) != len(flat):
        raise RuntimeError(f"the scorer returned {len(ratings)} ratings for {len(flat)} items")
    out, start = [], 0
    for _, rubric, _ in asks:
        mine = ratings[start:start + len(rubric.items)]
        start += len(rubric.items)
        values = tuple(r.value if r.ok else None for r in mine)
        errors = tuple(f"item {k}: {r.error}" for k, r in enumerate(mine) if not r.ok)
        out.append(ReportScore(rubric_score(rubric, values), values, errors))
    return out


@dataclass
class ScorerStats:
    requests: int = 0
    ok: int = 0
    failed: int = 0
    failures: Counter = field(default_factory=Counter)  # reason -> count
    retries: Counter = field(default_factory=Counter)  # HTTP retries by reason (http 429, timeout, ...)
    client: Counter = field(default_factory=Counter)  # summed llm_client counters (http attempts, cache hits, ...)


class ChatScorer:
    """A `Scorer` over an OpenAI-compatible chat server. `client`: plumbing.llm_client.ClientConfig;
    `cache_path`: the request cache (JSONL; held open, one live run per file). Call `close()` when done."""

    def __init__(self, client, cache_path: str | Path, temperature: float = 0.0, top_p: float | None = None,
                 max_tokens: int = 64, seed: int | None = 0):
        from plumbing.llm_client import RequestCache

        self.client_cfg = client
        self.cache = RequestCache(cache_path)
        self.params = {"temperature": temperature, "top_p": top_p, "max_tokens": max_tokens, "seed": seed}
        self.stats = ScorerStats()

    def rate_items(self, asks: Sequence[ItemAsk]) -> list[Rating]:
        return self._run([(prompts.rate_item_messages(a.query, a.item, a.report), prompts.read_rating)
                          for a in asks])

    def judge_rubrics(self, asks: Sequence[RubricAsk]) -> list[Rating]:
        return self._run([(prompts.judge_rubric_messages(a.query, a.rubric), prompts.read_rating) for a in asks])

    def rate_reports(self, asks: Sequence[ReportAsk]) -> list[Rating]:
        return self._run([(prompts.rate_report_messages(a.query, a.report, a.rubric), prompts.read_rating)
                          for a in asks])

    def compare(self, asks: Sequence[PairAsk]) -> list[Rating]:
        return self._run([(prompts.compare_messages(a.query, a.report_a, a.report_b), prompts.read_choice)
                          for a in asks])

    def _run(self, chats: list[tuple[list[dict[str, str]], Callable]]) -> list[Rating]:
        if not chats:
            return []
        return asyncio.run(self._gather(chats))

    async def _gather(self, chats: list[tuple[list[dict[str, str]], Callable]]) -> list[Rating]:
        from plumbing.llm_client import ChatClient

        async with ChatClient(self.client_cfg, self.cache) as client:
            out = await asyncio.gather(*(self._one(client, messages, read) for messages, read in chats))
        for key, value in client.stats.summary().items():
            if isinstance(value, int | float) and not isinstance(value, bool) and key != "cache_hit_rate":
                self.stats.client[key] += value
        self.stats.retries.update(client.stats.retries)
        failed = [r.error for r in out if not r.ok]
        self.stats.requests += len(out)
        self.stats.ok += len(out) - len(failed)
        self.stats.failed += len(failed)
        self.stats.failures.update(e.split(":")[0] for e in failed)
        if failed:
            logger.warning("scorer: %d of %d ratings failed (%s)", len(failed), len(out),
                           dict(Counter(e.split(":")[0] for e in failed)))
        return out

    async def _one(self, client, messages, read) -> Rating:
        obj, result, problem = await client.chat_json(messages, **self.params)
        if obj is None:
            return Rating(None, f"{problem}: {result.error}" if result.error else problem)
        try:
            return Rating(read(obj))
        except ValueError as exc:
            return Rating(None, f"bad_value: {exc}")

    def close(self) -> None:
        self.cache.close()

    def __enter__(self) -> ChatScorer:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
