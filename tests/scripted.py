"""A scripted `Generator` for tests that need a real `Judge` or rollout whose policy is a function of the text."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from openrm.generation import Generation, SamplingParams


class Scripted:
    """A `Generator` whose output is a function of the decoded prompt and the completion so far; cut at the first
    stop string like a real backend, and ended with EOS when no stop string occurs."""

    def __init__(self, tokenizer, policy: Callable[[str, str], str]):
        self.tok, self.policy = tokenizer, policy
        self.batches: list[int] = []
        self.contexts: list[str] = []

    def generate(self, prompts: Sequence[Sequence[int]], params: SamplingParams) -> list[Generation]:
        self.batches.append(len(prompts))
        out = []
        for ids_so_far in prompts:
            context = self.tok.decode(list(ids_so_far), skip_special_tokens=False)
            self.contexts.append(context)
            prompt, _, generated = context.rpartition("<|im_start|>assistant\n")
            ids = self.tok.encode(self.policy(prompt, generated), add_special_tokens=False)
            finish, stop = "eos", None
            for n in range(1, len(ids) + 1):
                hit = next((s for s in params.stop if s in self.tok.decode(ids[:n])), None)
                if hit:
                    ids, finish, stop = ids[:n], "stop", hit
                    break
            if finish == "eos":
                ids = [*ids, self.tok.eos_token_id]
            ids = ids[:params.max_new_tokens]
            out.append(Generation(ids, [-0.1] * len(ids), finish, stop))
        return out


def answers_in(prompt: str) -> tuple[str, str]:
    """The (position A, position B) answer texts of a decoded judge prompt."""
    a = re.search(r"\[Answer A\]\n(.*?)\n\[End of Answer A\]", prompt, re.DOTALL)
    b = re.search(r"\[Answer B\]\n(.*?)\n\[End of Answer B\]", prompt, re.DOTALL)
    return a.group(1), b.group(1)
