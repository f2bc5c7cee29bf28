"""The chat client against a real loopback fault server: retries, failures with reasons, cache, JSON repair."""

from __future__ import annotations

import asyncio
import json

import pytest
from synth_servers import ScriptedLLM, serve

from data_synthesis.queries import query_messages
from plumbing.llm_client import (
    ChatClient,
    ClientConfig,
    RequestCache,
    parse_json_object,
    request_key,
)
from plumbing.retry import parse_retry_after
from retrieval.corpus import CorpusPassage

FAST = {"timeout_s": 0.3, "backoff_base_s": 0.001, "backoff_max_s": 0.01}


@pytest.mark.parametrize("text,expected", [
    ('{"question": "Why?"}', {"question": "Why?"}),
    ('```json\n{"question": "Why?"}\n```', {"question": "Why?"}),
    ('Sure! {"a": {"b": 1}} hope that helps {"c": 2}', {"a": {"b": 1}}),
    ('[1, 2] then {"a": 1}', {"a": 1}),
    ('{broken {"a": 1}', {"a": 1}),
])
def test_parse_json_object(text, expected):
    assert parse_json_object(text) == expected


@pytest.mark.parametrize("text", ["", "no json here", '{"a": ', "[1, 2]"])
def test_parse_json_object_rejects(text):
    with pytest.raises(ValueError):
        parse_json_object(text)


@pytest.mark.parametrize("value,expected", [
    (None, None), ("", None), ("3", 3.0), ("0.5", 0.5), ("-2", 0.0), ("soon", None),
    ("Wed, 21 Oct 2015 07:28:10 GMT", 10.0),  # an HTTP date, 10 s after `now`
])
def test_parse_retry_after(value, expected):
    assert parse_retry_after(value, now=1445412480.0) == expected


def test_request_key_ignores_key_order_but_not_content():
    a = {"model": "m", "messages": [{"role": "user", "content": "x"}], "seed": 1}
    assert request_key(a) == request_key(dict(reversed(list(a.items()))))
    assert request_key(a) != request_key({**a, "seed": 2})
    assert request_key(a) != request_key({**a, "model": "n"})


def test_cache_survives_a_torn_last_line_and_refuses_a_second_run(tmp_path):
    path = tmp_path / "cache.jsonl"
    cache = RequestCache(path)
    cache.put({"key": "k1", "status": "ok", "content": "one"})
    cache.put({"key": "k2", "status": "failed", "reason": "http 500"})
    with pytest.raises(RuntimeError, match="in use"):
        RequestCache(path)
    cache.close()
    with path.open("ab") as f:
        f.write(b'{"key": "k3", "status": "ok", "cont')  # what kill -9 mid-write can leave
    cache = RequestCache(path)
    assert cache.n_torn == 1 and cache.get("k1")["content"] == "one" and cache.get("k3") is None
    cache.put({"key": "k3", "status": "ok", "content": "three"})
    cache.put({"key": "k1", "status": "failed", "reason": "late"})  # an answer is never replaced by a failure
    cache.close()
    reread = RequestCache(path)
    assert reread.get("k3")["content"] == "three" and reread.get("k1")["status"] == "ok" and len(reread) == 3
    reread.close()


async def _ask(url, cache_path, prompts, **cfg):
    cache = RequestCache(cache_path)
    try:
        async with ChatClient(ClientConfig(url, "m", **{**FAST, **cfg}), cache) as client:
            results = await asyncio.gather(*(client.chat([{"role": "user", "content": p}], max_tokens=8)
                                             for p in prompts))
        return results, client.stats
    finally:
        cache.close()


def test_every_request_is_answered_after_retries_or_failed_with_its_reason(tmp_path):
    llm = ScriptedLLM(schedule={1: "429", 3: "500", 5: "hang", 7: "malformed"}, period=10, hang_s=1.0)
    prompts = [f"Question: topic {i}" for i in range(30)] + ["Question: MARKFAIL always breaks"]
    with serve(llm.app) as url:
        results, stats = asyncio.run(_ask(url, tmp_path / "c.jsonl", prompts, concurrency=4, max_retries=12))
    assert set(llm.faults) == {"429", "500", "hang", "malformed"}  # every fault was served
    assert {"http 429", "http 500", "timeout", "malformed response"} <= set(stats.retries)
    by_prompt = dict(zip(prompts, results, strict=True))
    failed = by_prompt.pop("Question: MARKFAIL always breaks")
    assert not failed.ok and failed.error == "http 500" and failed.attempts == 13
    assert all(r.ok and r.content and r.attempts >= 1 for r in by_prompt.values())
    assert stats.http_attempts == len(llm.keys)  # every POST the client counted reached the server
    lines = [json.loads(line) for line in (tmp_path / "c.jsonl").read_text().splitlines()]
    assert len(lines) == len(prompts) == len({line["key"] for line in lines})  # one final line per request
    assert all(line["status"] == "ok" or line["reason"] for line in lines)
    assert stats.prompt_tokens > 0 and stats.completion_tokens > 0


def test_rerun_sends_nothing_answered_again_and_retries_failures(tmp_path):
    llm = ScriptedLLM()
    prompts = [f"Question: topic {i}" for i in range(6)] + ["Question: MARKFAIL"]
    with serve(llm.app) as url:
        first, _ = asyncio.run(_ask(url, tmp_path / "c.jsonl", prompts, max_retries=1))
        sent = len(llm.keys)
        again, stats = asyncio.run(_ask(url, tmp_path / "c.jsonl", prompts, max_retries=1))
        assert [r.content for r in again] == [r.content for r in first]
        assert stats.cache_hits == 6 and len(llm.keys) == sent + 2  # only the failed one, twice (1 retry)
        _, stats = asyncio.run(_ask(url, tmp_path / "c.jsonl", prompts, max_retries=1, retry_failed=False))
        assert stats.cache_hits == 7 and len(llm.keys) == sent + 2


def test_identical_requests_in_flight_are_sent_once(tmp_path):
    llm = ScriptedLLM(delay_s=0.05)
    with serve(llm.app) as url:
        results, stats = asyncio.run(_ask(url, tmp_path / "c.jsonl", ["Question: same"] * 5, concurrency=5))
    assert len(llm.keys) == 1 and stats.deduplicated == 4 and len({r.content for r in results}) == 1


def test_json_reply_is_repaired_once(tmp_path):
    doc = CorpusPassage("d", "MARKREPAIR Kalon", "kalo ven ta su rel dor qui ne bas fo.")

    async def ask(url):
        cache = RequestCache(tmp_path / "c.jsonl")
        try:
            async with ChatClient(ClientConfig(url, "m", **FAST), cache) as client:
                good = await client.chat_json(query_messages("wiki", [doc]), max_tokens=8)
                garbage = await client.chat_json(query_messages("wiki", [doc._replace(title="MARKGARBAGE")]))
                return good, garbage, client.stats
        finally:
            cache.close()

    with serve(ScriptedLLM().app) as url:
        (obj, _, problem), (bad, _, bad_problem), stats = asyncio.run(ask(url))
    assert obj["question"].startswith("Explain MARKREPAIR Kalon") and problem == ""
    assert bad is None and bad_problem == "bad_json" and stats.json_repairs == 2 and stats.requests == 4
