"""The retrieval server under a real uvicorn on loopback: response shape, bad input, failures, load."""

from __future__ import annotations

import asyncio

import httpx
import pytest

from retrieval.retriever import load_index
from retrieval.server import ServerLimits, create_app


@pytest.fixture(scope="module")
def indexes(bm25_indexes):
    return {name: load_index(path) for name, path in bm25_indexes.items()}


@pytest.fixture
def url(indexes, serve):
    with serve(create_app(indexes, ServerLimits(max_queries=64, max_topk=50, max_body_bytes=1 << 20))) as url:
        yield url


def _good(client: httpx.Client) -> None:
    r = client.post("/retrieve", json={"queries": ["Lomoix length"], "topk": 2, "corpus": "wiki"})
    assert r.status_code == 200 and len(r.json()["result"][0]) == 2


def test_response_shape_matches_search_r1_plus_corpus(url, indexes, world):
    doc = world.corpus("wiki")[0]
    paper = world.corpus("arxiv")[0]
    with httpx.Client(base_url=url) as client:
        r = client.post("/retrieve", json={"queries": [doc.subject, "x y z"], "topk": 3, "corpus": "wiki",
                                           "return_scores": True})
        assert r.status_code == 200
        result = r.json()["result"]
        assert len(result) == 2
        top = result[0][0]
        assert top["document"] == {"id": doc.id, "contents": f"{doc.title}\n{doc.text}"}
        assert isinstance(top["score"], float)
        expected = indexes["wiki"].search([doc.subject], 3)[0]
        assert [h["document"]["id"] for h in result[0]] == [p.id for p in expected]

        plain = client.post("/retrieve", json={"queries": [paper.subject], "topk": 1, "corpus": "arxiv",
                                               "return_scores": False}).json()["result"]
        assert plain == [[{"id": paper.id, "contents": f"{paper.title}\n{paper.text}"}]]

        assert client.get("/health").json() == {"status": "ok", "corpora": ["arxiv", "wiki"]}
        corpora = client.get("/corpora").json()
        assert corpora["wiki"]["n_passages"] == 280 and corpora["arxiv"]["backend"] == "bm25"


BAD_REQUESTS = [
    ("empty query list", {"json": {"queries": [], "corpus": "wiki"}}, 422, "queries is empty"),
    ("empty string", {"json": {"queries": ["ok", "  "], "corpus": "wiki"}}, 422, "query 1 is empty"),
    ("100 KB query", {"json": {"queries": ["a" * 100_000], "corpus": "wiki"}}, 422, "limit is 4096"),
    ("non-UTF-8 body", {"content": b'{"queries": ["\xff\xfe"], "corpus": "wiki"}',
                        "headers": {"content-type": "application/json"}}, 400, "error parsing the body"),
    ("malformed JSON", {"content": b'{"queries": [', "headers": {"content-type": "application/json"}}, 422, "JSON"),
    ("unknown corpus", {"json": {"queries": ["x"], "corpus": "pubmed"}}, 404, "unknown corpus 'pubmed'"),
    ("no corpus named", {"json": {"queries": ["x"]}}, 422, "name one in 'corpus'"),
    ("topk 0", {"json": {"queries": ["x"], "corpus": "wiki", "topk": 0}}, 422, "between 1 and 50"),
    ("topk negative", {"json": {"queries": ["x"], "corpus": "wiki", "topk": -3}}, 422, "between 1 and 50"),
    ("topk huge", {"json": {"queries": ["x"], "corpus": "wiki", "topk": 10**12}}, 422, "between 1 and 50"),
    ("too many queries", {"json": {"queries": ["x"] * 65, "corpus": "wiki"}}, 422, "limit is 64"),
    ("queries is a string", {"json": {"queries": "x", "corpus": "wiki"}}, 422, "queries"),
    ("query not a string", {"json": {"queries": ["x", 3], "corpus": "wiki"}}, 422, "queries.1"),
    ("topk as string", {"json": {"queries": ["x"], "corpus": "wiki", "topk": "3"}}, 422, "topk"),
    ("return_scores not bool", {"json": {"queries": ["x"], "corpus": "wiki", "return_scores": "yes"}}, 422,
     "return_scores"),
    ("missing queries", {"json": {"corpus": "wiki"}}, 422, "queries: Field required"),
    ("unknown field", {"json": {"queries": ["x"], "corpus": "wiki", "k": 3}}, 422, "k: Extra inputs"),
    ("array body", {"json": [["x"]]}, 422, ""),
    ("body over the limit", {"json": {"queries": ["x"] * 300_000, "corpus": "wiki"}}, 413, "request body over"),
]


@pytest.mark.parametrize("name, kwargs, status, message", BAD_REQUESTS, ids=[b[0] for b in BAD_REQUESTS])
def test_bad_input_is_a_4xx_with_a_message_and_the_server_carries_on(url, name, kwargs, status, message):
    with httpx.Client(base_url=url) as client:
        r = client.post("/retrieve", **kwargs)
        assert r.status_code == status, r.text
        detail = r.json()["detail"]
        assert isinstance(detail, str) and detail and message in detail
        _good(client)


def test_wrong_method_and_path(url):
    with httpx.Client(base_url=url) as client:
        assert client.get("/retrieve").status_code == 405
        assert client.post("/search", json={}).status_code == 404
        _good(client)


class _Flaky:
    """A backend that fails on one query: the request fails with 500, the server lives on."""

    def __init__(self, inner):
        self.inner = inner

    def search(self, queries, topk):
        if "explode" in queries:
            raise RuntimeError("disk on fire")
        return self.inner.search(queries, topk)


def test_backend_failure_is_a_500_for_that_request_only(indexes, serve):
    with serve(create_app({"wiki": _Flaky(indexes["wiki"])})) as url, httpx.Client(base_url=url) as client:
        r = client.post("/retrieve", json={"queries": ["explode"]})
        assert r.status_code == 500 and "disk on fire" in r.json()["detail"]
        _good(client)


@pytest.mark.slow
def test_thousand_concurrent_requests_no_errors_batched_and_cached(indexes, serve, entity_queries):
    queries, _ = entity_queries("wiki")
    expected = dict(zip(queries, indexes["wiki"].search(queries, 3), strict=True))
    asked = [queries[i % 400] for i in range(1000)]  # 400 distinct, the rest repeats (as in a GRPO group)

    async def fire(url):
        limits = httpx.Limits(max_connections=1000, max_keepalive_connections=1000)
        async with httpx.AsyncClient(base_url=url, limits=limits, timeout=60) as client:
            return await asyncio.gather(*(client.post("/retrieve", json={"queries": [q], "corpus": "wiki"})
                                          for q in asked), return_exceptions=True)

    with serve(create_app(indexes)) as url:
        responses = asyncio.run(fire(url))
        stats = httpx.get(f"{url}/corpora").json()["wiki"]
    errors = [r for r in responses if isinstance(r, Exception) or r.status_code != 200]
    assert errors == []
    for q, r in zip(asked, responses, strict=True):
        assert [h["document"]["id"] for h in r.json()["result"][0]] == [p.id for p in expected[q]]
    assert stats["batches"] < 1000 and stats["queries_searched"] <= 1000  # requests were merged into batches
    assert stats["cache_hits"] + stats["cache_misses"] == 1000
    # every repeat is answered from the cache or by awaiting its first copy's in-flight search: 400 searches
    assert stats["queries_searched"] == 400 and stats["cache_hits"] + stats["shared_in_flight"] == 600


def test_limits_are_validated():
    with pytest.raises(ValueError, match="default_topk"):
        ServerLimits(max_topk=2, default_topk=3)
    with pytest.raises(ValueError, match="at least one corpus"):
        create_app({})


def test_repeated_index_flags_keep_every_corpus():
    from transformers import HfArgumentParser

    from retrieval.server import ServerArguments

    parser = HfArgumentParser(ServerArguments)
    (args,) = parser.parse_args_into_dataclasses(args=["--index", "wiki=/a", "--index", "arxiv=/b"])
    assert args.index == ["wiki=/a", "arxiv=/b"]
    (args,) = parser.parse_args_into_dataclasses(args=["--index", "wiki=/a", "arxiv=/b"])
    assert args.index == ["wiki=/a", "arxiv=/b"]
