"""Token-level generation behind one `Generator` protocol: token ids in, sampled ids and their log-probs out.

The rollout (`openrm/rollout.py`) drives any backend through this protocol and never re-tokenises: what a
backend returns is exactly what was sampled. Backends: `HFGenerator` (transformers, batched), `VLLMGenerator`
(optional import; TRL's colocated engine when training with `use_vllm`), `OpenAIGenerator` (an
OpenAI-compatible completions endpoint, for a served judge).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal, Protocol

FinishReason = Literal["stop", "eos", "length"]


@dataclass(frozen=True)
class SamplingParams:
    max_new_tokens: int = 512
    temperature: float = 1.0  # 0 = greedy
    top_p: float = 1.0
    top_k: int = 0  # 0 = off
    stop: tuple[str, ...] = ()  # generation of a row ends once its decoded text contains one of these
    seed: int | None = None

    def __post_init__(self):
        if self.max_new_tokens < 1:
            raise ValueError(f"max_new_tokens must be >= 1, got {self.max_new_tokens}")
        if self.temperature < 0 or not 0 < self.top_p <= 1 or self.top_k < 0:
            raise ValueError(f"bad sampling parameters: temperature={self.temperature}, top_p={self.top_p}, "
                             f"top_k={self.top_k}")


@dataclass
class Generation:
    """One row's continuation. `token_ids` end with the token that completes a stop string (finish "stop"),
    with the EOS token (finish "eos"), or at `max_new_tokens` (finish "length"); nothing after is kept.
    `logprobs[i]` is log p(token_ids[i]) under the sampling distribution's temperature (not top-p/top-k)."""

    token_ids: list[int]
    logprobs: list[float]
    finish_reason: FinishReason
    stop_string: str | None = None  # which stop string ended it (finish "stop")
    extra: dict = field(default_factory=dict)


class Generator(Protocol):
    def generate(self, prompts: Sequence[Sequence[int]], params: SamplingParams) -> list[Generation]:
        """One `Generation` per prompt (a prompt is the whole context so far, as token ids), in order."""
        ...
