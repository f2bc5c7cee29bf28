"""The one HTTP retry policy: what is retried, how long it waits, and that each of its three callers (retrieval
client, served-judge generator, synthesis chat client) retries by it, a 409 included, and gives up on a plain 4xx."""

from __future__ import annotations

import asyncio
import random

import httpx
import pytest

from plumbing.retry import RETRY_STATUS, RetriesExhausted, RetryPolicy, send_with_retries


def scripted(statuses: list[int], body: dict):
    """An httpx transport answering the statuses in turn (then 200 with `body`); records every request."""
    seen: list[httpx.Request] = []

    def handle(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        status = statuses[len(seen) - 1] if len(seen) <= len(statuses) else 200
        return httpx.Response(status, json=body if status == 200 else {"detail": f"scripted {status}"})

    return httpx.MockTransport(handle), seen


def test_retryable_statuses_are_retried_and_others_returned():
    transport, seen = scripted([503, 429, 409], {"ok": True})
    with httpx.Client(transport=transport, base_url="http://x") as http:
        response = send_with_retries(lambda: http.get("/"), RetryPolicy(3, 0.0, 0.0), "x", sleep=lambda s: None)
    assert response.status_code == 200 and len(seen) == 4
    transport, seen = scripted([404], {})
    with httpx.Client(transport=transport, base_url="http://x") as http:
        assert send_with_retries(lambda: http.get("/"), RetryPolicy(3), "x").status_code == 404
    assert len(seen) == 1 and 404 not in RETRY_STATUS


def test_gives_up_after_the_last_retry_with_the_last_error():
    transport, seen = scripted([502] * 10, {})
    with httpx.Client(transport=transport, base_url="http://x") as http, \
            pytest.raises(RetriesExhausted, match="failed after 3 attempts.*HTTP 502: scripted 502"):
        send_with_retries(lambda: http.get("/"), RetryPolicy(2, 0.0, 0.0), "x", sleep=lambda s: None)
    assert len(seen) == 3


def test_waits_double_with_jitter_up_to_the_cap_and_honour_retry_after():
    policy = RetryPolicy(retries=6, backoff=1.0, max_backoff=4.0, rng=random.Random(0))
    waits = [policy.delay(r) for r in range(1, 6)]
    for r, wait in enumerate(waits, start=1):
        base = min(4.0, 2 ** (r - 1))
        assert 0.5 * base <= wait < 1.5 * base
    assert policy.delay(1, retry_after=30.0) == 30.0  # the server's wait lengthens ours
    assert policy.delay(1, retry_after=1e6) == policy.max_retry_after
    with pytest.raises(ValueError):
        RetryPolicy(retries=-1)


def test_retrieval_client_retries_by_the_policy():
    from retrieval.client import RetrievalClient, RetrievalError

    hit = {"document": {"id": "1", "contents": "T\ntext"}, "score": 1.0}
    transport, seen = scripted([409, 503], {"result": [[hit]]})
    client = RetrievalClient("http://x", retries=2, backoff=0.001, transport=transport)
    assert client.search(["q"], 1)[0][0].title == "T" and len(seen) == 3
    transport, seen = scripted([400], {})
    with pytest.raises(RetrievalError, match="HTTP 400"):
        RetrievalClient("http://x", retries=3, transport=transport).search(["q"], 1)
    assert len(seen) == 1


def test_generator_retries_by_the_policy():
    from openrm.generation import GenerationError, OpenAIGenerator

    choice = {"index": 0, "logprobs": {"tokens": ["token_id:5"], "token_logprobs": [-0.1]}, "finish_reason": "length"}
    transport, seen = scripted([409, 500], {"choices": [choice]})
    generator = OpenAIGenerator("http://x/v1", "m", max_retries=2, backoff=0.001)
    generator._http = httpx.Client(base_url="http://x/v1", transport=transport)
    assert generator._post("/completions", {})["choices"] == [choice] and len(seen) == 3
    transport, seen = scripted([422], {})
    generator._http = httpx.Client(base_url="http://x/v1", transport=transport)
    with pytest.raises(GenerationError, match="HTTP 422"):
        generator._post("/completions", {})
    assert len(seen) == 1


def test_chat_client_retries_by_the_policy(tmp_path):
    from plumbing.llm_client import ChatClient, ClientConfig, RequestCache

    answer = {"choices": [{"message": {"content": "hi"}, "finish_reason": "stop"}], "usage": {}}
    transport, seen = scripted([409, 503], answer)

    async def ask():
        cfg = ClientConfig("http://x/v1", "m", max_retries=2, backoff_base_s=0.001, backoff_max_s=0.01)
        async with ChatClient(cfg, RequestCache(tmp_path / "c.jsonl")) as client:
            client._http = [httpx.AsyncClient(base_url=cfg.api_url, transport=transport)]
            return await client.chat([{"role": "user", "content": "x"}], max_tokens=4), client.stats

    result, stats = asyncio.run(ask())
    assert result.ok and result.content == "hi" and len(seen) == 3
    assert stats.retries == {"http 409": 1, "http 503": 1}
