"""`ToyScorer`: a scripted rubric scorer whose ratings follow a hidden rule over the toy task's entities, in process
(a `Scorer`) or as an OpenAI-compatible chat server reading our prompts back (`scorer_app`, for loopback tests and
the learning proof).

The rule: an item that names entities rates a report 1 + 9 x (share of those entities the report mentions); an item
naming none rates every report 5. A rubric's quality is 10 with 2-6 items, else 4. Without a rubric, a report is
rated by length (1 + words // 8, at most 10) and the longer of two reports is preferred (A on equal length): cues
unrelated to the hidden preference, as a scorer without query-specific criteria has.

    scorer = ToyScorer(task.entities)
    with serve(scorer_app(scorer)) as url: ...      # tests/loopback.py's serve
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from openrm.rubrics import prompts
from openrm.rubrics.scorer import ItemAsk, PairAsk, Rating, ReportAsk, RubricAsk
from toy.rubric_task import entity_words, toy_entities
from toy.world import ToyWorld

_RUBRIC_LINE = re.compile(r"^\d+\. ", re.MULTILINE)


class ToyScorer:
    def __init__(self, entities: frozenset[str] | Sequence[str]):
        self.entities = frozenset(entities)
        self.calls = 0

    def item_rating(self, item_text: str, report: str) -> int:
        named = entity_words(item_text, self.entities)
        if not named:
            return 5
        return 1 + round(9 * len(named & entity_words(report, self.entities)) / len(named))

    @staticmethod
    def quality(n_items: int) -> int:
        return 10 if 2 <= n_items <= 6 else 4

    @staticmethod
    def report_rating(report: str) -> int:
        return min(10, 1 + len(report.split()) // 8)

    @staticmethod
    def choice(report_a: str, report_b: str) -> str:
        return "B" if len(report_b.split()) > len(report_a.split()) else "A"

    def rate_items(self, asks: Sequence[ItemAsk]) -> list[Rating]:
        self.calls += len(asks)
        return [Rating(self.item_rating(a.item.text(), a.report)) for a in asks]

    def judge_rubrics(self, asks: Sequence[RubricAsk]) -> list[Rating]:
        self.calls += len(asks)
        return [Rating(self.quality(len(a.rubric.items))) for a in asks]

    def rate_reports(self, asks: Sequence[ReportAsk]) -> list[Rating]:
        self.calls += len(asks)
        return [Rating(self.report_rating(a.report)) for a in asks]

    def compare(self, asks: Sequence[PairAsk]) -> list[Rating]:
        self.calls += len(asks)
        return [Rating(self.choice(a.report_a, a.report_b)) for a in asks]

    def reply(self, messages: list[dict[str, Any]]) -> str:
        """The reply content to one of our prompts (ValueError for any other chat)."""
        task = prompts.task_of(messages)
        user = next(m["content"] for m in messages if m.get("role") == "user")
        b = prompts.blocks(user)
        if task == "rate_item":
            return json.dumps({"rating": self.item_rating(b["CRITERION"], b["REPORT"])})
        if task == "judge_rubric":
            return json.dumps({"rating": self.quality(len(_RUBRIC_LINE.findall(b["RUBRIC"])))})
        if task == "rate_report":
            return json.dumps({"rating": self.report_rating(b["REPORT"])})
        if task == "compare":
            return json.dumps({"better": self.choice(b["REPORT_A"], b["REPORT_B"])})
        raise ValueError(f"the toy scorer does not {task}")


def chat_completion(content: str, model: str, n: int) -> dict[str, Any]:
    """An OpenAI chat.completion body holding `content`."""
    return {"id": f"chat-{n}", "object": "chat.completion", "model": model,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 0, "completion_tokens": len(content.split())}}


def scorer_app(scorer: ToyScorer):
    """A FastAPI app serving `scorer` at /v1/chat/completions; a chat that is not one of our prompts gets 400."""
    from fastapi import FastAPI
    from fastapi.responses import JSONResponse

    app = FastAPI()
    served = [0]

    @app.post("/v1/chat/completions")
    def chat(body: dict):
        served[0] += 1
        try:
            content = scorer.reply(body["messages"])
        except (ValueError, KeyError, TypeError) as exc:
            return JSONResponse({"error": {"message": f"toy scorer: {exc}"}}, status_code=400)
        return chat_completion(content, body.get("model", "toy"), served[0])

    @app.get("/health")
    def health():
        return {"status": "ok", "served": served[0]}

    return app


def scorer(spec: Any) -> ToyScorer:
    """The `toy` scorer kind (entry point group `openrm.scorers`): the rule over toy world `spec.world_seed`."""
    return ToyScorer(toy_entities(ToyWorld(spec.world_seed)))

