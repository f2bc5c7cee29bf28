"""The pipeline against the real `transformers serve` running the tiny random model on loopback: it completes,
the model's garbage is dropped with reasons, and a rerun is served from the cache."""

from __future__ import annotations

import asyncio
import json

import pytest
from synth_servers import transformers_serve

from data_synthesis.build_dataset import main
from data_synthesis.filters import FilterConfig, pair_problem
from data_synthesis.pairs import answer_messages
from plumbing.llm_client import ChatClient, ClientConfig, RequestCache
from toy.tiny import build
from toy.world import ToyWorld


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    model_dir = build(tmp_path_factory.mktemp("tiny"))
    with transformers_serve(model_dir) as url:
        yield url, str(model_dir)


def test_pipeline_completes_and_drops_garbage_with_reasons(served, tmp_path):
    url, model = served
    corpora = ToyWorld(0).write_corpora(tmp_path / "corpora")
    args = ["--corpus", f"wiki={corpora['wiki']['jsonl']}", "--corpus", f"arxiv={corpora['arxiv']['tsv']}",
            "--base-url", f"{url}/v1", "--model", model, "--n-train", "2", "--n-test", "2", "--out",
            str(tmp_path / "out"), "--concurrency", "2", "--max-rounds", "1", "--oversample", "1",
            "--query-max-tokens", "12", "--answer-max-tokens", "12", "--progress", "false"]
    main(args)
    out = tmp_path / "out"
    summary = json.loads((out / "summary.json").read_text())
    rejects = [json.loads(line) for line in (out / "rejects.jsonl").read_text().splitlines()]
    assert summary["slots"] == 4 == len(rejects) + sum(summary["pairs"].values())
    assert all(r["reason"] for r in rejects)
    # a random model writes no JSON object: each question is asked, repaired once, then dropped
    assert {r["reason"] for r in rejects} == {"query_bad_json"}
    client = summary["client"]
    assert client["failed"] == 0 and client["answered"] == client["requests"] == 8 and client["json_repairs"] == 4
    assert client["completion_tokens"] > 0 and "query_bad_json" in (out / "stats.md").read_text()

    main(args)  # the same command again: everything from the cache
    again = json.loads((out / "summary.json").read_text())["client"]
    assert again["cache_hits"] == again["requests"] == 8 and again["http_attempts"] == 0


def test_real_answers_go_through_the_answer_filters(served, tmp_path):
    url, model = served
    doc = ToyWorld(0).documents[0].passage()
    question = f"What is known about {doc.title} and its history?"

    async def answers():
        cache = RequestCache(tmp_path / "c.jsonl")
        try:
            async with ChatClient(ClientConfig(f"{url}/v1", model, timeout_s=60), cache) as client:
                return await asyncio.gather(
                    client.chat(answer_messages("wiki", question, [doc]), max_tokens=8, seed=1),
                    client.chat(answer_messages("wiki", question, None), max_tokens=8, seed=2))
        finally:
            cache.close()

    pos, neg = asyncio.run(answers())
    assert pos.ok and neg.ok and pos.finish_reason == "length" and pos.completion_tokens == 8
    problem = pair_problem(pos.content, pos.finish_reason, neg.content, neg.finish_reason, [doc.text], FilterConfig())
    assert problem in ("positive_empty", "positive_truncated")  # cut at max_tokens: never a training pair
