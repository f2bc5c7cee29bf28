"""Async chat client for any OpenAI-compatible server (vLLM, `transformers serve`, an API), built to be killed.

Every finished request (answered, or given up with its reason) is appended as one line to a JSONL cache keyed by
sha256 of the request body (model, messages, parameters), so a rerun after kill -9 sends nothing twice.
Replicas of one model (`ClientConfig.replica_urls`) share the load: each attempt goes to the least busy server.

    async with ChatClient(ClientConfig(base_url, model), RequestCache(path)) as client:
        result = await client.chat(messages, max_tokens=512, temperature=0.7, seed=1)
"""

from __future__ import annotations

import asyncio
import fcntl
import hashlib
import json
import logging
import os
import random
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from plumbing.retry import RETRY_STATUS, RetryPolicy, parse_retry_after, retryable_errors

logger = logging.getLogger(__name__)

Messages = Sequence[Mapping[str, str]]


def request_key(body: Mapping[str, Any]) -> str:
    """The cache key of a request body: sha256 of its canonical JSON (key order does not matter)."""
    canonical = json.dumps(body, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def parse_json_object(text: str) -> dict[str, Any]:
    """The first JSON object in a model's reply, tolerating code fences and prose around it; ValueError if none."""
    decoder = json.JSONDecoder()
    start = text.find("{")
    while start != -1:
        try:
            obj, _ = decoder.raw_decode(text, start)
        except json.JSONDecodeError:
            start = text.find("{", start + 1)
            continue
        if isinstance(obj, dict):
            return obj
        start = text.find("{", start + 1)
    raise ValueError("no JSON object in the reply")


@dataclass(frozen=True)
class ClientConfig:
    base_url: str  # ends in /v1 (or not: it is added)
    model: str
    api_key: str | None = None
    concurrency: int = 8
    timeout_s: float = 120.0
    max_retries: int = 5  # retries after the first attempt
    backoff_base_s: float = 1.0
    backoff_max_s: float = 60.0
    retry_after_max_s: float = 300.0  # never sleep longer than this on a server's Retry-After
    retry_failed: bool = True  # on a rerun, send again requests the cache records as failed
    seed: int = 0  # jitter
    # more servers of the same model (replicas): each attempt goes to the server with the fewest requests in flight
    replica_urls: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        for url in (self.base_url, *self.replica_urls):
            if not url.startswith(("http://", "https://")):
                raise ValueError(f"base_url must be an http(s) URL, got {url!r}")
        if self.concurrency < 1 or self.max_retries < 0 or self.timeout_s <= 0:
            raise ValueError(f"need concurrency >= 1, max_retries >= 0, timeout_s > 0; got {self}")
        if self.backoff_base_s < 0 or self.backoff_max_s < self.backoff_base_s:
            raise ValueError(f"need 0 <= backoff_base_s <= backoff_max_s; got {self}")

    @property
    def api_url(self) -> str:
        return self.api_urls[0]

    @property
    def api_urls(self) -> list[str]:
        """The OpenAI API root of every server: base_url first, then the replicas."""
        return [url if url.endswith("/v1") else url + "/v1"
                for url in (u.rstrip("/") for u in (self.base_url, *self.replica_urls))]


@dataclass(frozen=True)
class ChatResult:
    key: str
    ok: bool
    content: str = ""
    finish_reason: str | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    error: str | None = None  # why it failed, when not ok
    attempts: int = 0
    cached: bool = False


@dataclass
class ClientStats:
    requests: int = 0  # logical requests asked of the client
    http_attempts: int = 0  # POSTs sent
    cache_hits: int = 0
    deduplicated: int = 0  # identical requests already in flight, awaited instead of sent
    answered: int = 0
    failed: int = 0
    prompt_tokens: int = 0  # spent in this run
    completion_tokens: int = 0
    cached_prompt_tokens: int = 0  # saved by the cache
    cached_completion_tokens: int = 0
    json_repairs: int = 0
    per_server: list[int] = field(default_factory=list)  # POSTs sent to each server (base_url, then replicas)
    retries: Counter = field(default_factory=Counter)  # reason -> count
    failures: Counter = field(default_factory=Counter)  # reason -> count

    def summary(self) -> dict[str, Any]:
        out = {k: v for k, v in vars(self).items() if not isinstance(v, Counter)}
        out["retries"], out["failures"] = dict(self.retries), dict(self.failures)
        asked = self.requests - self.deduplicated
        out["cache_hit_rate"] = round(self.cache_hits / asked, 4) if asked else 0.0
        return out


class RequestCache:
    """Append-only JSONL of finished requests, one line written per request with a single O_APPEND write.

    A kill -9 can only leave a torn last line; it is ignored on load and fenced off with a newline. An exclusive
    flock keeps two live runs from sharing one cache (the kernel drops it when a process dies)."""

    def __init__(self, path: str | Path, fsync: bool = False) -> None:
        self.path, self.fsync = Path(path), fsync
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._entries: dict[str, dict[str, Any]] = {}
        self.n_torn = 0
        self._fd = os.open(self.path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            fcntl.flock(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(self._fd)
            raise RuntimeError(f"{self.path} is in use by another live run") from None
        self._load()

    def _load(self) -> None:
        data = self.path.read_bytes()
        for line in data.split(b"\n"):
            if not line.strip():
                continue
            try:
                entry = json.loads(line)
                key = entry["key"]
            except (ValueError, KeyError, TypeError):
                self.n_torn += 1
                continue
            if self._entries.get(key, {}).get("status") != "ok":  # an answer is never replaced by a failure
                self._entries[key] = entry
        if data and not data.endswith(b"\n"):
            os.write(self._fd, b"\n")
        if self.n_torn:
            logger.warning("%s: ignored %d unreadable line(s) (a killed run's last write)", self.path, self.n_torn)

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, key: str) -> dict[str, Any] | None:
        return self._entries.get(key)

    def put(self, entry: dict[str, Any]) -> None:
        line = (json.dumps(entry, ensure_ascii=False) + "\n").encode("utf-8")
        view = memoryview(line)
        while view:
            view = view[os.write(self._fd, view):]
        if self.fsync:
            os.fsync(self._fd)
        self._entries[entry["key"]] = entry

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)  # also releases the flock
            self._fd = -1


class ChatClient:
    """Bounded-concurrency chat completions with retries, a persistent cache and token accounting."""

    def __init__(self, cfg: ClientConfig, cache: RequestCache) -> None:
        self.cfg, self.cache = cfg, cache
        self.stats = ClientStats()
        self._retry = RetryPolicy(cfg.max_retries, cfg.backoff_base_s, cfg.backoff_max_s, cfg.retry_after_max_s,
                                  rng=random.Random(f"llm_client:{cfg.seed}"))
        self._inflight: dict[str, asyncio.Future] = {}
        self._semaphore: asyncio.Semaphore | None = None
        self._http: list = []  # one httpx.AsyncClient per server
        self._busy: list[int] = []  # requests in flight per server

    async def __aenter__(self) -> ChatClient:
        import httpx

        headers = {"Authorization": f"Bearer {self.cfg.api_key}"} if self.cfg.api_key else {}
        limits = httpx.Limits(max_connections=self.cfg.concurrency, max_keepalive_connections=self.cfg.concurrency)
        self._http = [httpx.AsyncClient(base_url=url, headers=headers, limits=limits,
                                        timeout=httpx.Timeout(self.cfg.timeout_s)) for url in self.cfg.api_urls]
        self._busy = [0] * len(self._http)
        self.stats.per_server = [0] * len(self._http)
        self._semaphore = asyncio.Semaphore(self.cfg.concurrency)
        return self

    async def __aexit__(self, *exc) -> None:
        for http in self._http:
            await http.aclose()

    def body(self, messages: Messages, **params: Any) -> dict[str, Any]:
        return {"model": self.cfg.model, "messages": [dict(m) for m in messages],
                **{k: v for k, v in params.items() if v is not None}}

    async def chat(self, messages: Messages, **params: Any) -> ChatResult:
        """One chat completion (`max_tokens`, `temperature`, `seed`, ... as the server takes them); never raises
        for server trouble: a request that cannot be answered comes back with ok=False and `error`."""
        body = self.body(messages, **params)
        key = request_key(body)
        self.stats.requests += 1
        entry = self.cache.get(key)
        if entry is not None and (entry["status"] == "ok" or not self.cfg.retry_failed):
            self.stats.cache_hits += 1
            self.stats.cached_prompt_tokens += entry.get("prompt_tokens", 0)
            self.stats.cached_completion_tokens += entry.get("completion_tokens", 0)
            return _result(entry, cached=True)
        if key in self._inflight:  # the same request twice at once: send it once
            self.stats.deduplicated += 1
            return await asyncio.shield(self._inflight[key])
        future = asyncio.get_running_loop().create_future()
        self._inflight[key] = future
        try:
            async with self._semaphore:
                entry = await self._send(key, body)
            self.cache.put(entry)
            result = _result(entry, cached=False)
            future.set_result(result)
            return result
        except BaseException as exc:  # cancelled or a bug: waiters must not hang
            if isinstance(exc, asyncio.CancelledError):
                future.cancel()
            else:
                future.set_exception(exc)
                future.exception()  # retrieved, so asyncio does not warn when nobody waits
            raise
        finally:
            del self._inflight[key]

    async def chat_json(self, messages: Messages, **params: Any) -> tuple[dict[str, Any] | None, ChatResult, str]:
        """A chat whose reply must hold a JSON object; one repair request shows the model its error.

        Returns (object or None, the last result, "" or why no object came back)."""
        result = await self.chat(messages, **params)
        if not result.ok:
            return None, result, "llm_failed"
        try:
            return parse_json_object(result.content), result, ""
        except ValueError as exc:
            problem = str(exc)
        self.stats.json_repairs += 1
        repair = [*messages, {"role": "assistant", "content": result.content},
                  {"role": "user", "content": f"That reply could not be read ({problem}). Send the same content "
                                              "again as a single JSON object and nothing else."}]
        result = await self.chat(repair, **params)
        if not result.ok:
            return None, result, "llm_failed"
        try:
            return parse_json_object(result.content), result, ""
        except ValueError:
            return None, result, "bad_json"

    async def _send(self, key: str, body: dict[str, Any]) -> dict[str, Any]:
        import httpx

        started = time.monotonic()
        reason = "never sent"
        failed_on = -1
        for attempt in range(self.cfg.max_retries + 1):
            retry_after = None
            self.stats.http_attempts += 1
            # the least busy server, not the one that just failed this request (a dead replica fails fast, so it
            # would otherwise stay the least busy); ties: the first
            server = min(range(len(self._http)), key=lambda i: (i == failed_on, self._busy[i], i))
            failed_on = server
            self._busy[server] += 1
            self.stats.per_server[server] += 1
            try:
                try:
                    response = await self._http[server].post("/chat/completions", json=body)
                finally:
                    self._busy[server] -= 1
            except httpx.TimeoutException:
                reason = "timeout"
            except retryable_errors() as exc:
                reason = f"connection: {type(exc).__name__}"
            except httpx.TransportError as exc:  # e.g. an unsupported URL scheme: another try cannot help
                reason = f"connection: {type(exc).__name__}"
                break
            else:
                if response.status_code == 200:
                    try:
                        entry = _answer(response.json())
                    except (ValueError, KeyError, IndexError, TypeError) as exc:
                        reason = f"malformed response: {type(exc).__name__}"
                    else:
                        entry.update(key=key, status="ok", attempts=attempt + 1,
                                     seconds=round(time.monotonic() - started, 3))
                        self.stats.answered += 1
                        self.stats.prompt_tokens += entry["prompt_tokens"]
                        self.stats.completion_tokens += entry["completion_tokens"]
                        return entry
                else:
                    reason = f"http {response.status_code}"
                    if response.status_code not in RETRY_STATUS:  # our request is wrong: retrying cannot help
                        reason += f": {response.text[:300]}"
                        break
                    retry_after = parse_retry_after(response.headers.get("retry-after"))
            if attempt == self.cfg.max_retries:
                break
            self.stats.retries[reason.split(":")[0]] += 1
            await asyncio.sleep(self._retry.delay(attempt + 1, retry_after))
        self.stats.failed += 1
        self.stats.failures[reason.split(":")[0]] += 1
        logger.debug("request %s failed after %d attempt(s): %s", key[:12], attempt + 1, reason)
        return {"key": key, "status": "failed", "reason": reason, "attempts": attempt + 1,
                "seconds": round(time.monotonic() - started, 3)}


def _answer(data: Any) -> dict[str, Any]:
    choice = data["choices"][0]
    content = choice["message"]["content"]
    if content is not None and not isinstance(content, str):
        raise TypeError("message content is not a string")
    usage = data.get("usage") or {}
    return {"content": content or "", "finish_reason": choice.get("finish_reason"),
            "prompt_tokens": int(usage.get("prompt_tokens") or 0),
            "completion_tokens": int(usage.get("completion_tokens") or 0)}


def _result(entry: Mapping[str, Any], cached: bool) -> ChatResult:
    ok = entry["status"] == "ok"
    return ChatResult(key=entry["key"], ok=ok, content=entry.get("content", ""),
                      finish_reason=entry.get("finish_reason"), prompt_tokens=entry.get("prompt_tokens", 0),
                      completion_tokens=entry.get("completion_tokens", 0),
                      error=None if ok else entry.get("reason", "unknown"), attempts=entry.get("attempts", 0),
                      cached=cached)
