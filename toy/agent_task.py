"""The toy search-agent task: questions about the toy world's fictional facts, which a policy cannot know without
searching, answered after optional searches with the judge's own tools and call syntax:

    <search>WIKI("Velaen born")</search>
    <information> ... Velaen was born in 1750. ... </information>
    <answer>1750</answer>

The questions are split by entity (document), so no entity of the held-out part is ever in a GRPO batch or in the
warm-up: "warmup" entities teach the format, "grpo" entities are trained on, "heldout" entities measure whether the
skill (search, then copy the value) carries over. The warm-up searches in only a share of its records and answers
at once with a guess (a rival value) in the rest, so GRPO has a choice to reward: a step-0 policy that searches
now and then.

    task = ToyAgentTask(ToyWorld(0))
    task.rows("grpo"), task.rows("heldout")                     # prompt rows: prompt, question, answer, meta
    task.sft_records(400, search_share=0.3, rng=random.Random(0))  # gold trajectories (prompt/completion)
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Sequence
from typing import Any

from openrm.agent import agent_messages
from openrm.protocol import ANSWER, GOLD_TOOL, SEARCH, close_tag, format_call, open_tag, render_information
from toy.world import _SHORT_QUESTIONS, KINDS, SHORT_FACTS, ToyWorld

PARTS = ("warmup", "grpo", "heldout")


class ToyAgentTask:
    """Every single-word fact (`SHORT_FACTS`) of every document of `world` as a question, the documents split into
    `PARTS` by a hash of their id (a third each, the same for every run)."""

    def __init__(self, world: ToyWorld):
        self.world = world
        self._rows: dict[str, list[dict[str, Any]]] = {part: [] for part in PARTS}
        values: dict[tuple[str, str], set[str]] = {}
        for doc in world.documents:
            for key, value in doc.facts:
                values.setdefault((doc.kind, key), set()).add(value)
        self._rivals: dict[str, list[str]] = {}
        for doc in world.documents:
            if doc.kind not in SHORT_FACTS:
                continue
            part = PARTS[int(hashlib.sha256(doc.id.encode()).hexdigest(), 16) % len(PARTS)]
            attributes = {a.key: a for a in KINDS[doc.kind][1]}
            facts = dict(doc.facts)
            for key in sorted(SHORT_FACTS[doc.kind]):
                question = _SHORT_QUESTIONS[doc.domain].format(name=doc.subject, clause=attributes[key].question)
                row = {"id": f"agent-{world.seed}-{doc.id}-{key}", "prompt": agent_messages(question),
                       "question": question, "answer": facts[key], "domain": doc.domain,
                       "gold_tool": GOLD_TOOL[doc.domain],
                       "meta": {"source": "toyworld", "world_seed": world.seed, "doc_ids": [doc.id],
                                "subject": doc.subject, "facts": [{"attribute": key, "value": facts[key]}]}}
                self._rows[part].append(row)
                self._rivals[row["id"]] = sorted(values[(doc.kind, key)] - {facts[key]})
        for part, rows in self._rows.items():
            if not rows:
                raise ValueError(f"world {world.seed} gave no {part} questions")

    def rows(self, part: str) -> list[dict[str, Any]]:
        if part not in PARTS:
            raise ValueError(f"part must be one of {PARTS}, got {part!r}")
        return [dict(r) for r in self._rows[part]]

    def trajectory(self, row: dict[str, Any], search: bool, rng: random.Random) -> str:
        """A warm-up completion for `row`: search the gold corpus for `subject word`, read the fact's passage,
        answer its value; or (`search=False`) answer at once with a guess, a rival value of the same attribute."""
        if not search:
            guess = rng.choice(self._rivals[row["id"]] or [row["answer"]])
            return f"{open_tag(ANSWER)}{guess}{close_tag(ANSWER)}"
        doc = self.world.by_id[row["meta"]["doc_ids"][0]]
        key = row["meta"]["facts"][0]["attribute"]
        call = format_call(GOLD_TOOL[doc.domain], f"{doc.subject} {SHORT_FACTS[doc.kind][key]}")
        passage = self.world.fact_passage(doc, key).passage()
        return (f"{open_tag(SEARCH)}{call}{close_tag(SEARCH)}{render_information([passage])}"
                f"{open_tag(ANSWER)}{row['answer']}{close_tag(ANSWER)}")

    def sft_records(self, n: int, search_share: float, rng: random.Random,
                    parts: Sequence[str] = ("warmup",)) -> list[dict[str, Any]]:
        """`n` warm-up records over the questions of `parts` (cycled in a shuffled order), exactly
        `round(search_share * 10)` of every 10 searching, the rest guessing."""
        if not 0.0 <= search_share <= 1.0:
            raise ValueError(f"search_share must be in [0, 1], got {search_share}")
        rows = [r for part in parts for r in self.rows(part)]
        searches = round(search_share * 10)
        records, order, plan = [], [], []
        for _ in range(n):
            if not order:
                order = rng.sample(rows, len(rows))
            if not plan:
                plan = rng.sample([True] * searches + [False] * (10 - searches), 10)
            row = order.pop()
            records.append({"prompt": row["prompt"], "completion": [
                {"role": "assistant", "content": self.trajectory(row, plan.pop(), rng)}]})
        return records
