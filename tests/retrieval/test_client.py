"""The HTTP client: same answers as in-process, batching, retries on faults, immediate 4xx errors."""

from __future__ import annotations

import time

import pytest
from fastapi import FastAPI
from fastapi.responses import JSONResponse

from retrieval.client import RetrievalClient, RetrievalError
from retrieval.retriever import Index, Retriever, load_index, open_retriever
from retrieval.server import create_app


@pytest.fixture(scope="module")
def wiki(bm25_indexes):
    return load_index(bm25_indexes["wiki"])


def test_client_equals_in_process_and_batches(wiki, serve, entity_queries):
    queries, _ = entity_queries("wiki")
    queries = queries[:50]
    with serve(create_app({"wiki": wiki})) as url:
        client = open_retriever(url, corpus="wiki", batch_size=7)
        assert isinstance(client, RetrievalClient) and isinstance(client, Retriever)
        assert client.search(queries, 3) == wiki.search(queries, 3)
        assert client.health()["corpora"] == ["wiki"]
        client.close()
    assert isinstance(open_retriever(str(wiki.path)), Index)


def test_caller_mistakes_are_raised_at_once_with_the_server_message(wiki, serve):
    with serve(create_app({"wiki": wiki})) as url:
        client = RetrievalClient(url, corpus="pubmed", retries=5, backoff=10)
        started = time.monotonic()
        with pytest.raises(RetrievalError, match="HTTP 404: unknown corpus 'pubmed'"):
            client.search(["x"], 3)
        assert time.monotonic() - started < 5  # no backoff on a 4xx
        with pytest.raises(RetrievalError, match="topk must be between"):
            RetrievalClient(url, corpus="wiki").search(["x"], 0)


def _fault_app(schedule: list[str], wiki: Index) -> FastAPI:
    """Answers /retrieve according to `schedule` (one entry per call), then normally."""
    app = FastAPI()
    calls = {"n": 0}

    @app.post("/retrieve")
    async def retrieve(body: dict):
        step = schedule[calls["n"]] if calls["n"] < len(schedule) else "ok"
        calls["n"] += 1
        if step == "503":
            return JSONResponse({"detail": "busy"}, status_code=503)
        if step == "429":
            return JSONResponse({"detail": "slow down"}, status_code=429)
        if step == "hang":
            import asyncio

            await asyncio.sleep(3)
        if step == "garbage":
            return {"result": "not a list"}
        hits = wiki.search(body["queries"], body["topk"])
        return {"result": [[{"document": {"id": p.id, "contents": p.contents}, "score": p.score} for p in h]
                           for h in hits]}

    app.state.calls = calls
    return app


def test_retries_503_429_and_timeouts_then_succeeds(wiki, serve):
    app = _fault_app(["503", "429", "hang"], wiki)
    with serve(app) as url:
        client = RetrievalClient(url, timeout=0.5, retries=3, backoff=0.01)
        assert client.search(["Lomoix length"], 2) == wiki.search(["Lomoix length"], 2)
    assert app.state.calls["n"] == 4


def test_gives_up_after_the_last_retry_with_the_last_error(wiki, serve):
    with serve(_fault_app(["503"] * 10, wiki)) as url:
        with pytest.raises(RetrievalError, match="failed after 3 attempts; last error: HTTP 503: busy"):
            RetrievalClient(url, retries=2, backoff=0.01).search(["x"], 1)
    with serve(_fault_app(["garbage"], wiki)) as url:
        with pytest.raises(RetrievalError, match="malformed response"):
            RetrievalClient(url).search(["x"], 1)


def test_connection_refused_is_retried_then_reported(serve):
    with serve(FastAPI()) as url:
        pass  # the server is gone now: its port refuses connections
    with pytest.raises(RetrievalError, match="ConnectError"):
        RetrievalClient(url, retries=1, backoff=0.01).search(["x"], 1)
