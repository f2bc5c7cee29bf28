"""`RubricGroupJudge`: a rubric-guided LLM group judge over any OpenAI-compatible chat server (vLLM,
`transformers serve`, ...). It shows the question, the rubric and the numbered candidates and asks for the best k
as JSON `{"winners": [numbers]}`; a reply that is not exactly k distinct valid numbers gets one repair turn, and
a second bad reply (or an HTTP failure) is a logged failure: no winners.

    group = RubricGroupJudge("http://127.0.0.1:8000/v1", "Qwen/Qwen2.5-7B-Instruct")
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

from openrm.rubrics.record import RubricError, parse_rubric
from openrm.tournament.judges import GroupRequest, select_winners

logger = logging.getLogger(__name__)

SYSTEM = ("You rank candidate responses to the same task. Judge them against the rubric when one is given, "
          "on substance rather than length or style, and never by their position in the list.")


def shown_rubric(text: str) -> str:
    """A rubric as the judge reads it: a JSON rubric (the `rubric` column openrm.rubrics writes) as numbered lines
    with normalised weights, any other text as given."""
    try:
        return parse_rubric(text).render()
    except RubricError:
        return text


def judge_messages(req: GroupRequest) -> list[dict[str, str]]:
    n, k = len(req.candidates), req.k
    parts = [f"## Task\n{req.question}"]
    if req.rubric:
        parts.append(f"## Rubric\n{shown_rubric(req.rubric)}")
    for number, text in enumerate(req.candidates, start=1):
        parts.append(f"## Candidate {number}\n{text}\n## End of candidate {number}")
    parts.append(f"Choose the {k} best of these {n} candidates. Think briefly if you need to, then end with one "
                 f'line of JSON, {{"winners": [...]}}, holding exactly {k} distinct candidate numbers from 1 to {n}.')
    return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": "\n\n".join(parts)}]


def repair_message(error: str, n: int, k: int) -> dict[str, str]:
    return {"role": "user", "content": f"That answer could not be used: {error}. Reply with only "
                                       f'{{"winners": [...]}} holding exactly {k} distinct numbers from 1 to {n}.'}


_OBJECT = re.compile(r"\{[^{}]*\}")


def parse_winners(text: str, n: int, k: int) -> tuple[list[int] | None, str | None]:
    """(0-based winners sorted, None) for a valid reply, else (None, what is wrong). The last JSON object in the
    reply that has a "winners" key counts."""
    found = None
    for chunk in reversed(_OBJECT.findall(text or "")):
        try:
            obj = json.loads(chunk)
        except json.JSONDecodeError:
            continue
        if isinstance(obj, dict) and "winners" in obj:
            found = obj["winners"]
            break
    if found is None:
        return None, 'no JSON object with a "winners" list was found'
    if not isinstance(found, list) or not all(isinstance(x, int) and not isinstance(x, bool) for x in found):
        return None, f'"winners" must be a list of integers, got {found!r}'
    bad = [x for x in found if not 1 <= x <= n]
    if bad:
        return None, f"numbers {bad} are not candidates (1 to {n})"
    if len(set(found)) != len(found):
        return None, f"numbers repeat in {found}"
    if len(found) != k:
        return None, f"{len(found)} numbers given, exactly {k} needed"
    return sorted(x - 1 for x in found), None


class RubricGroupJudge:
    """`base_url` like `http://host:8000/v1`. Requests of one batch run `max_concurrency` at a time;
    `http_retries` extra tries on a transport error or 5xx before the request counts as a failure."""

    def __init__(self, base_url: str, model: str, api_key: str | None = None, temperature: float = 0.0,
                 max_tokens: int = 1024, timeout: float = 300.0, max_concurrency: int = 16, http_retries: int = 1,
                 top_p: float | None = None):
        import httpx

        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self.client = httpx.Client(base_url=base_url.rstrip("/"), headers=headers, timeout=timeout)
        if top_p is not None and not 0.0 < top_p <= 1.0:
            raise ValueError(f"top_p must be in (0, 1], got {top_p}")
        self.model, self.temperature, self.max_tokens, self.top_p = model, temperature, max_tokens, top_p
        self.max_concurrency, self.http_retries = max_concurrency, http_retries

    def select_winners(self, question: str, rubric: str | None, candidates: Sequence[str], k: int) -> list[int]:
        return select_winners(self, question, rubric, candidates, k)

    def select_winners_many(self, requests: Sequence[GroupRequest]) -> list[list[int]]:
        if not requests:
            return []
        with ThreadPoolExecutor(max_workers=min(self.max_concurrency, len(requests))) as pool:
            out = list(pool.map(self._one, requests))
        failed = sum(not w for w in out)
        if failed:
            logger.warning("group judge: %d of %d groups failed (no winners)", failed, len(out))
        return out

    def _one(self, req: GroupRequest) -> list[int]:
        n, k = len(req.candidates), req.k
        if not 1 <= k <= n:
            raise ValueError(f"cannot pick {k} winners out of {n} candidates")
        messages = judge_messages(req)
        for attempt in range(2):
            text = self._chat(messages)
            if text is None:
                return []
            winners, error = parse_winners(text, n, k)
            if error is None:
                return winners
            logger.info("group judge reply %s (attempt %d): %s", "rejected" if attempt else "needs repair",
                        attempt + 1, error)
            messages = [*messages, {"role": "assistant", "content": text}, repair_message(error, n, k)]
        return []

    def _chat(self, messages: list[dict[str, str]]) -> str | None:
        import httpx

        body = {"model": self.model, "messages": messages, "temperature": self.temperature,
                "max_tokens": self.max_tokens}
        if self.top_p is not None:  # sent only when set (Tournament-GRPO's judge: 0.95)
            body["top_p"] = self.top_p
        for attempt in range(self.http_retries + 1):
            try:
                resp = self.client.post("/chat/completions", json=body)
                if resp.status_code >= 500 and attempt < self.http_retries:
                    continue
                resp.raise_for_status()
                content = resp.json()["choices"][0]["message"]["content"]
                return content if isinstance(content, str) else None
            except (httpx.TransportError, httpx.HTTPStatusError, KeyError, IndexError, TypeError,
                    ValueError) as exc:
                if attempt < self.http_retries and isinstance(exc, httpx.TransportError):
                    continue
                logger.warning("group judge request failed: %s", exc)
                return None
        return None

    def close(self) -> None:
        self.client.close()

    def __enter__(self) -> RubricGroupJudge:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
