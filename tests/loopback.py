"""Loopback servers shared by tests: a real uvicorn in a thread, and the subset of vLLM's /v1/completions that
`openrm.generation.OpenAIGenerator` speaks, backed by an in-process generator on the tiny model."""

from __future__ import annotations

import contextlib
import os
import threading
import time

from fastapi import FastAPI
from fastapi.responses import JSONResponse

from openrm.generation import HFGenerator, SamplingParams
from plumbing.serve import free_port


def decode(tok, ids) -> str:
    return tok.decode(list(ids), skip_special_tokens=False, clean_up_tokenization_spaces=False)


@contextlib.contextmanager
def serve(app, **config):
    """Run `app` under a real uvicorn on loopback in a thread (`config`: more `uvicorn.Config` options); yields its
    base URL."""
    import uvicorn

    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=free_port(), log_level="warning",
                                           access_log=False, **config))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("uvicorn did not start")
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{server.config.port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)


def vllm_completions_app(gen: HFGenerator, tok, calls: list, fail: int = 0, fail_status: int = 503) -> FastAPI:
    """The subset of vLLM's /v1/completions that OpenAIGenerator uses, on the tiny model: token-id prompts,
    `return_tokens_as_token_ids`, sampled-token log-probs, `stop_reason`; like vLLM, a request's seed seeds each
    of its prompts alike, and one request runs at a time. The first `fail` calls fail."""
    app = FastAPI()
    lock = threading.Lock()

    def error(status: int, message: str) -> JSONResponse:
        return JSONResponse({"object": "error", "message": message, "code": status}, status_code=status)

    @app.post("/v1/completions")
    def completions(body: dict):
        calls.append(body)
        if len(calls) <= fail:
            return error(fail_status, "injected failure")
        prompts = body["prompt"]
        if prompts and isinstance(prompts[0], int):
            prompts = [prompts]
        if not all(isinstance(p, list) and p and all(isinstance(t, int) for t in p) for p in prompts):
            return error(400, "this test server takes token-id prompts only")
        if body.get("return_tokens_as_token_ids") is not True or body.get("logprobs") != 0:
            return error(400, "this test server always returns token ids and the sampled token's log-prob")
        if body.get("include_stop_str_in_output") is not True or body.get("skip_special_tokens") is not False:
            return error(400, "this test server keeps stop strings and special tokens")
        params = SamplingParams(max_new_tokens=body["max_tokens"], temperature=body["temperature"],
                                top_p=body["top_p"], top_k=max(body["top_k"], 0), stop=tuple(body["stop"]),
                                seed=body.get("seed"))
        with lock:
            if params.seed is None:
                generations = gen.generate(prompts, params)
            else:
                generations = [gen.generate([p], params)[0] for p in prompts]
        choices = []
        for i, g in enumerate(generations):
            choices.append({
                "index": i, "text": decode(tok, g.token_ids), "token_ids": g.token_ids,
                "logprobs": {"tokens": [f"token_id:{t}" for t in g.token_ids], "token_logprobs": g.logprobs,
                             "top_logprobs": [{f"token_id:{t}": lp}
                                              for t, lp in zip(g.token_ids, g.logprobs, strict=True)]},
                "finish_reason": "length" if g.finish_reason == "length" else "stop",
                "stop_reason": g.stop_string if g.finish_reason == "stop" else None,
            })
        return {"id": "cmpl-test", "object": "text_completion", "model": body["model"], "choices": choices[::-1]}

    return app


@contextlib.contextmanager
def transformers_serve(model_dir: str | os.PathLike):
    """The real `transformers serve` on loopback with a local model; yields its base URL."""
    import httpx
    from transformers.cli.serve import Serve

    port = free_port()
    server = Serve(force_model=str(model_dir), host="127.0.0.1", port=port, device="cpu", non_blocking=True)
    try:
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 60
        while True:
            try:
                httpx.get(f"{url}/health").raise_for_status()
                break
            except httpx.HTTPError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)
        yield url
    finally:
        server.kill_server()
