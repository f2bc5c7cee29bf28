"""`transformers serve` and the llama.cpp server as child processes: each starts, answers the OpenAI API, and is
gone after the block; a model it cannot serve is a clear error quoting its log; `build_dataset --serve` brings its
own server."""

from __future__ import annotations

import importlib.util
import json

import httpx
import pytest

from data_synthesis.build_dataset import main
from data_synthesis.builder import BuildDatasetArguments
from openrm.models import PACKAGED, gguf_path
from plumbing import serve
from plumbing.serve import ServerError, llama_cpp_server, transformers_server
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
    with pytest.raises(ValueError, match="not llama.cpp's"):
        BuildDatasetArguments(out="x", corpus=["wiki=w.jsonl"], serve="smollm2-135m-instruct",
                              serve_engine="llama.cpp", serve_continuous_batching=True)


def test_the_llama_cpp_server_refuses_a_missing_file_and_a_missing_package(tmp_path, monkeypatch):
    with pytest.raises(ServerError, match="no such GGUF file"):
        with llama_cpp_server(tmp_path / "missing.gguf"):
            pass
    (tmp_path / "m.gguf").write_bytes(b"GGUF")
    monkeypatch.setattr(serve.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(ServerError, match="not installed: pip install 'llama-cpp-python"):
        with llama_cpp_server(tmp_path / "m.gguf"):
            pass


needs_llama_cpp = pytest.mark.skipif(importlib.util.find_spec("llama_cpp") is None,
                                     reason="llama-cpp-python[server] is not installed (make llama-cpp)")


@needs_llama_cpp
def test_the_llama_cpp_server_answers_on_the_packaged_gguf_and_is_gone_after(tmp_path):
    gguf = gguf_path(PACKAGED["smollm2-135m-instruct"])
    with llama_cpp_server(gguf, log=tmp_path / "server.log", threads=1, n_ctx=512, alias="smollm2") as url:
        assert [m["id"] for m in httpx.get(f"{url}/v1/models").json()["data"]] == ["smollm2"]
        reply = httpx.post(f"{url}/v1/chat/completions", timeout=60, json={
            "model": "smollm2", "messages": [{"role": "user", "content": "Name a colour."}], "max_tokens": 8,
            "temperature": 0})
        assert reply.status_code == 200 and reply.json()["choices"][0]["message"]["content"].strip()
    with pytest.raises(httpx.HTTPError):
        httpx.get(f"{url}/v1/models", timeout=2)


@needs_llama_cpp
def test_a_file_llama_cpp_cannot_load_is_an_error_that_quotes_its_log(tmp_path):
    (tmp_path / "broken.gguf").write_bytes(b"GGUF" + b"\0" * 64)
    with pytest.raises(ServerError, match="exited with status") as failed:
        with llama_cpp_server(tmp_path / "broken.gguf", log=tmp_path / "server.log", startup_timeout_s=60):
            pass
    assert "its log" in str(failed.value)


def test_build_dataset_serves_its_own_model(tiny, tmp_path):
    corpora = ToyWorld(0).write_corpora(tmp_path / "corpora")
    out = tmp_path / "out"
    main(["--corpus", f"wiki={corpora['wiki']['jsonl']}", "--serve", str(tiny), "--serve-threads", "1",
          "--serve-replicas", "2", "--n-train", "1", "--n-test", "1", "--out", str(out), "--concurrency", "2",
          "--max-rounds", "1", "--oversample", "1", "--query-max-tokens", "8", "--answer-max-tokens", "8",
          "--progress", "false"])
    summary = json.loads((out / "summary.json").read_text())
    assert summary["client"]["answered"] == summary["client"]["requests"] > 0
    assert summary["slots"] == 2 and (out / "server.log").exists() and (out / "server-2.log").exists()
    per_server = summary["client"]["per_server"]
    assert len(per_server) == 2 and all(per_server) and sum(per_server) == summary["client"]["http_attempts"]


@needs_llama_cpp
def test_build_dataset_serves_the_packaged_gguf_with_llama_cpp(tmp_path):
    corpora = ToyWorld(0).write_corpora(tmp_path / "corpora")
    out = tmp_path / "out"
    main(["--corpus", f"wiki={corpora['wiki']['jsonl']}", "--serve", "smollm2-135m-instruct",
          "--serve-engine", "llama.cpp", "--serve-threads", "1", "--serve-replicas", "2", "--n-train", "1",
          "--n-test", "1",
          "--out", str(out), "--concurrency", "2", "--max-rounds", "1", "--oversample", "1",
          "--query-max-tokens", "8", "--answer-max-tokens", "8", "--progress", "false"])
    summary = json.loads((out / "summary.json").read_text())
    assert summary["client"]["answered"] == summary["client"]["requests"] > 0
    assert all("llama" in (out / log).read_text().lower() for log in ("server.log", "server-2.log"))
    assert all(summary["client"]["per_server"])
