"""`transformers serve` as a child process: it starts, answers the OpenAI API, and is gone after the block; a
folder it cannot serve is a clear error quoting its log; `build_dataset --serve` brings its own server."""

from __future__ import annotations

import json

import httpx
import pytest

from data_synthesis.build_dataset import BuildDatasetArguments, main
from plumbing.serve import ServerError, transformers_server
from toy.tiny import build
from toy.world import ToyWorld

pytestmark = pytest.mark.slow  # each test starts a server process


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    return build(tmp_path_factory.mktemp("tiny"))


def test_the_server_answers_and_is_gone_after_the_block(tiny, tmp_path):
    log = tmp_path / "server.log"
    with transformers_server(tiny, log=log, threads=1) as url:
        assert httpx.get(f"{url}/health").status_code == 200
        reply = httpx.post(f"{url}/v1/chat/completions", timeout=60, json={
            "model": str(tiny), "messages": [{"role": "user", "content": "hello"}], "max_tokens": 3})
        assert reply.status_code == 200 and reply.json()["choices"][0]["message"]["content"] is not None
    with pytest.raises(httpx.HTTPError):
        httpx.get(f"{url}/health", timeout=2)
    assert log.exists()  # the caller's log is kept


def test_a_folder_it_cannot_serve_is_an_error_that_quotes_its_log(tmp_path):
    (tmp_path / "not-a-model").mkdir()
    with pytest.raises(ServerError, match="exited with status") as failed:
        with transformers_server(tmp_path / "not-a-model", log=tmp_path / "server.log", startup_timeout_s=120):
            pass
    assert "its log" in str(failed.value) and (tmp_path / "server.log").read_text()
    with pytest.raises(ServerError, match="not a model folder"):
        with transformers_server(tmp_path / "missing"):
            pass


def test_serve_excludes_a_given_server():
    with pytest.raises(ValueError, match="leave out --base-url"):
        BuildDatasetArguments(out="x", corpus=["wiki=w.jsonl"], serve="smollm2-135m-instruct",
                              base_url="http://127.0.0.1:1/v1")
    with pytest.raises(ValueError, match="either --serve MODEL or --base-url and --model"):
        BuildDatasetArguments(out="x", corpus=["wiki=w.jsonl"])


def test_build_dataset_serves_its_own_model(tiny, tmp_path):
    corpora = ToyWorld(0).write_corpora(tmp_path / "corpora")
    out = tmp_path / "out"
    main(["--corpus", f"wiki={corpora['wiki']['jsonl']}", "--serve", str(tiny), "--serve-threads", "1",
          "--n-train", "1", "--n-test", "1", "--out", str(out), "--concurrency", "2", "--max-rounds", "1",
          "--oversample", "1", "--query-max-tokens", "8", "--answer-max-tokens", "8", "--progress", "false"])
    summary = json.loads((out / "summary.json").read_text())
    assert summary["client"]["answered"] == summary["client"]["requests"] > 0
    assert summary["slots"] == 2 and (out / "server.log").exists()
