"""The toy policy task: closed-book questions about toy-world facts, answered as `<answer>VALUE</answer>`, for
policy GRPO on tournament rewards (train/grpo_policy.py) with the toy oracle as match judge, on a laptop CPU.

What a tiny from-scratch policy can learn here (the judge's learning proof showed it cannot yet copy across long
prompts): a warm-up teaches it every question's answer *noisily* (the true value only some of the time, otherwise
a rival value of the same kind, a hedge naming two values, "I do not know", or the value without tags), so
step 0 samples the truth at about `MIX["truth"]`. GRPO on half of the questions must then move probability to the
answers the oracle prefers. The other half is held out of GRPO (the warm-up saw them the same way), so a gain there
is a general skill (commit to one value, keep the format), not a memorised string.

    task = ToyPolicyTask(ToyWorld(0), n_questions=128)
    task.rows("grpo"), task.rows("heldout")            # policy prompt rows (toy_oracle.py's shape + "answer")
    task.sft_records(samples_per_question=40, rng)     # TRL prompt/completion chat records
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Sequence
from typing import Any

from toy.oracle import toy_prompts
from toy.world import ToyWorld

SYSTEM = "Answer the question with <answer> and </answer> around the answer."
FORMAT_PATTERN = r"<answer>[^<>]*</answer>"
# The warm-up's answer mix: the truth, a rival value, a hedge of truth and rival, a refusal, the bare truth (no tags).
MIX = {"truth": 0.40, "rival": 0.25, "hedge": 0.15, "refusal": 0.10, "untagged": 0.10}
PARTS = ("grpo", "heldout")


def policy_messages(question: str) -> list[dict[str, str]]:
    return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": question}]


class ToyPolicyTask:
    """`n_questions` distinct single-fact questions about training-split documents of `world`, split in two
    halves ordered by a hash of the question: "grpo" (trained on) and "heldout"."""

    def __init__(self, world: ToyWorld, n_questions: int = 128):
        if n_questions < 4:
            raise ValueError(f"need at least 4 questions, got {n_questions}")
        self.world = world
        seen: dict[str, dict[str, Any]] = {}
        for row in toy_prompts(world, 20 * n_questions, "train"):  # drawn with repeats: keep the first of each
            if len(row["meta"]["facts"]) == 1 and len(seen) < n_questions:
                seen.setdefault(row["question"], row)
        if len(seen) < n_questions:
            raise ValueError(f"world {world.seed} gave only {len(seen)} distinct single-fact training questions")
        self._rows = {part: [] for part in PARTS}
        ranked = sorted(seen, key=lambda q: hashlib.sha256(q.encode()).hexdigest())  # stable, needs no seed
        for n, question in enumerate(ranked):
            row = seen[question]
            part = PARTS[0] if n < len(ranked) // 2 else PARTS[1]
            self._rows[part].append({**row, "prompt": policy_messages(question),
                                     "answer": row["meta"]["facts"][0]["value"]})
        self._rivals = self._rival_values()

    def rows(self, part: str) -> list[dict[str, Any]]:
        if part not in PARTS:
            raise ValueError(f"part must be one of {PARTS}, got {part!r}")
        return [dict(r) for r in self._rows[part]]

    def all_rows(self) -> list[dict[str, Any]]:
        return [*self.rows("grpo"), *self.rows("heldout")]

    def _rival_values(self) -> dict[str, list[str]]:
        values: dict[tuple[str, str], set[str]] = {}
        for doc in self.world.documents:
            for key, value in doc.facts:
                values.setdefault((doc.kind, key), set()).add(value)
        out = {}
        for row in self.all_rows():
            doc = self.world.by_id[row["meta"]["doc_ids"][0]]
            key = row["meta"]["facts"][0]["attribute"]
            out[row["question"]] = sorted(values[(doc.kind, key)] - {row["answer"]})
        return out

    def answer(self, row: dict[str, Any], kind: str, rng: random.Random) -> str:
        """One warm-up answer of `kind` (a key of MIX) to `row`."""
        truth, rivals = row["answer"], self._rivals[row["question"]] or [row["answer"]]
        rival = rng.choice(rivals)
        if kind == "truth":
            return f"<answer>{truth}</answer>"
        if kind == "rival":
            return f"<answer>{rival}</answer>"
        if kind == "hedge":
            first, second = (truth, rival) if rng.random() < 0.5 else (rival, truth)
            return f"<answer>{first} or {second}</answer>"
        if kind == "refusal":
            return "<answer>I do not know</answer>"
        if kind == "untagged":
            return truth
        raise ValueError(f"unknown answer kind {kind!r}; choose one of {sorted(MIX)}")

    def sft_records(self, samples_per_question: int, rng: random.Random,
                    mix: dict[str, float] | None = None) -> list[dict[str, Any]]:
        """Warm-up records for every question (both parts), answers drawn from `mix`, shuffled."""
        mix = mix or MIX
        kinds: Sequence[str] = list(mix)
        records = []
        for row in self.all_rows():
            for kind in rng.choices(kinds, weights=[mix[k] for k in kinds], k=samples_per_question):
                records.append({"prompt": row["prompt"],
                                "completion": [{"role": "assistant", "content": self.answer(row, kind, rng)}]})
        rng.shuffle(records)
        return records
