"""Loopback servers for the data-synthesis tests and bench: a scripted OpenAI-compatible chat app (replies are a
pure function of the request, steered by MARK_* words in document titles), optionally with faults on a schedule
(429, 500, a hang past the client's timeout, a malformed body) and a gate that holds requests after the n-th.
"""

from __future__ import annotations

import asyncio
import json
import random
import threading
from collections import Counter
from pathlib import Path

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response
from loopback import serve, transformers_serve  # noqa: F401  (re-exported to the tests here)

from plumbing.llm_client import request_key

FAULTS = ("429", "500", "hang", "malformed")
# title marker -> the reject reason the pipeline must give that document's slot
MARKERS = {
    "MARKFAIL": "query_llm_failed",
    "MARKGARBAGE": "query_bad_json",
    "MARKYESNO": "question_yes_no",
    "MARKREFUSE": "positive_refusal",
    "MARKTRUNC": "positive_truncated",
    "MARKEMPTY": "negative_empty",
    "MARKLEAK": "positive_mentions_source",
    "MARKSAME": "pair_too_similar",
}

_SYLLABLES = ("ka", "lo", "mir", "ven", "ta", "su", "rel", "dor", "qui", "ne", "bas", "fo", "gri", "hul", "ze")


def _word(rng: random.Random) -> str:
    return "".join(rng.choice(_SYLLABLES) for _ in range(rng.randint(2, 4)))


def write_corpus(path: Path, n: int, seed: int = 0, markers: tuple[str, ...] = ()) -> Path:
    """A JSONL corpus of `n` plain documents (distinct titles and vocabulary) plus one document per marker."""
    rng = random.Random(f"synth-corpus:{seed}")
    rows = []
    for i in range(n + len(markers)):
        title = f"{_word(rng).capitalize()} {_word(rng).capitalize()}"
        if i >= n:
            title = f"{markers[i - n]} {title}"
        body = " ".join(_word(rng) for _ in range(60)) + "."
        rows.append({"id": f"doc-{i:04d}", "title": title, "contents": body})
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def _doc_words(text: str) -> list[str]:
    """Words of the first rendered document in a prompt ("[1] Title\\nbody")."""
    start = text.find("[1] ")
    body = text[start:].split("\n", 2)[1] if start != -1 else ""
    return [w.strip(".") for w in body.split()]


def _topic(text: str) -> str:
    start = text.find("[1] ")
    return text[start + 4:].split("\n", 1)[0] if start != -1 else ""


def scripted_reply(body: dict) -> tuple[str, str]:
    """(content, finish_reason) for a chat request, deterministic in the request."""
    messages = body["messages"]
    system = next((m["content"] for m in messages if m["role"] == "system"), "")
    user = next(m["content"] for m in messages if m["role"] == "user")
    every = " ".join(m["content"] for m in messages)
    if "question mark" in system:  # question generation, plain-text format: a small model's habits
        topic = _topic(user)
        if "MARKGARBAGE" in every:
            return "Question:\n\n[1] zq zq zq", "length"
        words = random.Random(f"q:{body.get('seed')}").sample(sorted(set(_doc_words(user))), 6)
        return f"Question:\n\n[1] Explain {topic}: how do {', '.join(words)} relate, and why?\n\nJSON:", "stop"
    if '"question"' in system:  # question generation
        topic = _topic(user)
        if "MARKGARBAGE" in every:
            return "zq zq zq", "stop"
        if "MARKREPAIR" in topic and not any(m["role"] == "assistant" for m in messages):
            return "Here is my question: not json at all", "stop"
        words = random.Random(f"q:{body.get('seed')}").sample(sorted(set(_doc_words(user))), 6)
        if "MARKYESNO" in topic:
            return json.dumps({"question": f"Is {topic} older than {words[0]}?"}), "stop"
        return json.dumps({"question": f"Explain {topic}: how do {', '.join(words)} relate, and why?"}), "stop"
    question = user.split("Question: ", 1)[-1]
    if "[1] " in user:  # positive: with documents
        if "MARKREFUSE" in question:
            return "I'm sorry, but I can't help with that request.", "stop"
        words = _doc_words(user)
        text = " ".join(f"{question.split(':')[0].removeprefix('Explain ')} connects {a} with {b} and {c}."
                        for a, b, c in zip(words[0:30:3], words[1:30:3], words[2:30:3], strict=True))
        if "MARKLEAK" in question:
            text = "According to the provided document, " + text
        if "MARKSAME" in question:
            return _negative(question), "stop"
        return text, ("length" if "MARKTRUNC" in question else "stop")
    if "MARKEMPTY" in question:
        return "", "stop"
    return _negative(question), "stop"


def _negative(question: str) -> str:
    words = [_word(random.Random(f"neg:{question}:{i}")) for i in range(24)]
    return (f"Generally speaking, the subject of this question is broad. Commonly cited ideas include "
            f"{', '.join(words[:12])}. Others point to {', '.join(words[12:])}, though accounts differ widely.")


class ScriptedLLM:
    """The app plus what it saw: `keys` (cache key of every request, in arrival order), `faults` served."""

    def __init__(self, schedule: dict[int, str] | None = None, period: int = 10, hang_s: float = 2.0,
                 gate_after: int | None = None, delay_s: float = 0.0) -> None:
        self.schedule, self.period, self.hang_s, self.delay_s = schedule or {}, period, hang_s, delay_s
        self.gate_after, self.gate = gate_after, threading.Event()
        self.keys: list[str] = []
        self.users: list[str] = []  # the last user message of every request, in arrival order
        self.faults: Counter = Counter()
        self.lock = threading.Lock()
        self.app = self._build()

    def _build(self) -> FastAPI:
        app = FastAPI()

        @app.post("/v1/chat/completions")
        async def chat(request: Request):
            body = await request.json()
            with self.lock:
                n = len(self.keys)
                self.keys.append(request_key(body))
                self.users.append(next((m["content"] for m in reversed(body["messages"]) if m["role"] == "user"), ""))
            fault = self.schedule.get(n % self.period)
            if "MARKFAIL" in json.dumps(body):
                fault = "500"
            if fault:
                self.faults[fault] += 1
            if fault == "429":
                return JSONResponse({"error": {"message": "slow down"}}, status_code=429, headers={"Retry-After": "0"})
            if fault == "500":
                return JSONResponse({"error": {"message": "injected"}}, status_code=500)
            if fault == "hang":
                await asyncio.sleep(self.hang_s)
            if fault == "malformed":
                return Response('{"choices": [{"message": ', media_type="application/json")
            if self.gate_after is not None and n >= self.gate_after:
                while not self.gate.is_set():
                    await asyncio.sleep(0.01)
            if self.delay_s:
                await asyncio.sleep(self.delay_s)
            content, finish = scripted_reply(body)
            return {"id": f"chat-{n}", "object": "chat.completion", "model": body["model"],
                    "choices": [{"index": 0, "message": {"role": "assistant", "content": content},
                                 "finish_reason": finish}],
                    "usage": {"prompt_tokens": len(json.dumps(body["messages"]).split()),
                              "completion_tokens": len(content.split())}}

        return app
