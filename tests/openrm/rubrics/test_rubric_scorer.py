"""The rating client over real HTTP: against a loopback fault server (429, 500, a hang past the timeout, a malformed
body, a reply that is not JSON) every rating comes back equal to the rule's, or as a recorded failure with its
reason; a rerun is served from the cache; against the real `transformers serve` (a random tiny model writes no JSON)
every rating is a recorded failure, never a default."""

from __future__ import annotations

import asyncio
import json
import threading
from collections import Counter

import pytest
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response
from loopback import serve, transformers_serve

from openrm.rubrics import ChatScorer, PairAsk, ReportAsk, Rubric, RubricAsk
from openrm.rubrics.scorer import score_reports
from plumbing.llm_client import ClientConfig
from toy.rubric_scorer import ToyScorer, chat_completion

FAST = {"timeout_s": 0.5, "backoff_base_s": 0.001, "backoff_max_s": 0.01}
ENTITIES = frozenset({"Velaen", "Thedaeth", "Zanniar", "Lomoix"})


class FaultyScorerServer:
    """The toy scorer's app with faults by arrival order (n % period); a report holding MARKFAIL always gets 500,
    and one holding MARKPROSE always gets a prose reply (no JSON, even after the repair turn); the scheduled prose fault
    spares repair turns, so that only MARKPROSE exhausts the repair."""

    def __init__(self, scorer: ToyScorer, schedule: dict[int, str], period: int = 7, hang_s: float = 1.0):
        self.scorer, self.schedule, self.period, self.hang_s = scorer, schedule, period, hang_s
        self.n, self.faults, self.lock = 0, Counter(), threading.Lock()
        self.app = FastAPI()
        self.app.post("/v1/chat/completions")(self.chat)

    async def chat(self, request: Request):
        body = await request.json()
        with self.lock:
            n, self.n = self.n, self.n + 1
        text = json.dumps(body["messages"])
        fault = "500" if "MARKFAIL" in text else self.schedule.get(n % self.period)
        self.faults[fault] += 1
        if fault == "429":
            return JSONResponse({"error": {"message": "slow down"}}, status_code=429, headers={"Retry-After": "0"})
        if fault == "500":
            return JSONResponse({"error": {"message": "injected"}}, status_code=500)
        if fault == "hang":
            await asyncio.sleep(self.hang_s)
        if fault == "malformed":
            return Response('{"choices": [{"message": ', media_type="application/json")
        repair = any(m["role"] == "assistant" for m in body["messages"])
        if (fault == "prose" and not repair) or "MARKPROSE" in text:
            return chat_completion("I would rate it quite highly overall.", "m", n)
        return chat_completion(self.scorer.reply(body["messages"]), "m", n)


def _asks():
    specific = Rubric.of([("Covers Velaen", "Says who Velaen was.", 3), ("Covers Lomoix", "Mentions Lomoix.", 1),
                          ("Clarity", "Easy to read.", 1)])
    reports = [f"Velaen was born in {1700 + i}. Lomoix is a river." if i % 3 == 0 else
               f"Zanniar was born in {1900 + i}." if i % 3 == 1 else f"Velaen and Thedaeth, case {i}."
               for i in range(18)]
    reports += ["Velaen MARKFAIL.", "Velaen MARKPROSE."]
    return [("Write a report on Velaen.", specific, r) for r in reports]


@pytest.mark.slow
def test_fault_server_loses_nothing_and_a_rerun_sends_nothing(tmp_path):
    rule = ToyScorer(ENTITIES)
    server = FaultyScorerServer(rule, {1: "429", 2: "500", 3: "hang", 4: "malformed", 5: "prose"})
    asks = _asks()
    expected = score_reports(rule, asks)
    with serve(server.app) as url:
        cfg = ClientConfig(f"{url}/v1", "m", concurrency=4, max_retries=30, **FAST)
        with ChatScorer(cfg, tmp_path / "cache.jsonl") as scorer:
            got = score_reports(scorer, asks)
            extra = (scorer.judge_rubrics([RubricAsk(q, r) for q, r, _ in asks[:3]]),
                     scorer.rate_reports([ReportAsk("q", "one two three")]),
                     scorer.compare([PairAsk("q", "short", "a much longer report")]))
            stats = scorer.stats
        sent = server.n
        assert {"429", "500", "hang", "malformed", "prose"} <= set(server.faults)
        assert {"http 429", "http 500", "timeout", "malformed response"} <= set(stats.retries)
        for g, e, (_, _, report) in zip(got, expected, asks, strict=True):
            if "MARKFAIL" in report:
                assert g.score is None and len(g.errors) == 3 and all("http 500" in x for x in g.errors)
            elif "MARKPROSE" in report:
                assert g.score is None and all("bad_json" in x for x in g.errors)
            else:
                assert g == e  # every other rating arrived, equal to the rule's
        assert [r.value for r in extra[0]] == [10] * 3 and extra[1][0].value == 1 and extra[2][0].value == "B"
        assert stats.failed == 6 and stats.failures == Counter({"llm_failed": 3, "bad_json": 3})

        with ChatScorer(cfg, tmp_path / "cache.jsonl") as again:  # the rerun: answered requests come from the cache
            assert score_reports(again, asks[:-2]) == got[:-2]
            assert again.stats.client["http_attempts"] == 0 and again.stats.client["cache_hits"] > 0
        assert server.n == sent


@pytest.fixture(scope="module")
def served_tiny(tmp_path_factory):
    from toy.tiny import build

    model_dir = build(tmp_path_factory.mktemp("tiny"))
    with transformers_serve(model_dir) as url:
        yield url, str(model_dir)


def test_transformers_serve_random_model_gives_recorded_failures(served_tiny, tmp_path):
    url, model = served_tiny
    rubric = Rubric.of([("Covers Velaen", "Says who Velaen was.", 1), ("Clarity", "Easy to read.", 1)])
    cfg = ClientConfig(f"{url}/v1", model, concurrency=2, timeout_s=60)
    with ChatScorer(cfg, tmp_path / "c.jsonl", max_tokens=6) as scorer:
        got = score_reports(scorer, [("Write a report on Velaen.", rubric, "Velaen was born in 1750.")])
        stats = scorer.stats
    assert got[0].score is None and got[0].ratings == (None, None)
    assert all("bad_json" in e for e in got[0].errors) and len(got[0].errors) == 2
    # each item: the question and one repair turn, both answered by the real server
    assert stats.client["answered"] == 4 and stats.client["failed"] == 0 and stats.client["json_repairs"] == 2
    assert stats.client["completion_tokens"] > 0
