"""Rubric generators at inference: a local checkpoint (transformers) or an OpenAI-compatible chat server, each
turning queries into rubric texts (parse them with `parse_rubric`; an invalid one stays in the output as written).

    gen = LocalGenerator("runs/rubrics/grpo", style="compact")
    texts = gen.generate(["Write a report on Velaen."], samples=4, temperature=1.0, seed=0)   # [[4 texts]]
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from pathlib import Path

from openrm.rubrics.prompts import generation_messages

logger = logging.getLogger(__name__)


class LocalGenerator:
    """A causal LM checkpoint with a chat template, on `device`; queries are generated `batch_size` at a time."""

    def __init__(self, path: str | Path, style: str = "full", device: str = "cpu", max_new_tokens: int = 512,
                 batch_size: int = 32):
        from transformers import AutoModelForCausalLM, AutoTokenizer

        self.tok = AutoTokenizer.from_pretrained(path)
        self.tok.padding_side = "left"
        self.model = AutoModelForCausalLM.from_pretrained(path).to(device).eval()
        self.style, self.device, self.max_new_tokens, self.batch_size = style, device, max_new_tokens, batch_size

    def generate(self, queries: Sequence[str], samples: int = 1, temperature: float = 0.0,
                 seed: int = 0) -> list[list[str]]:
        import torch

        torch.manual_seed(seed)
        out: list[list[str]] = []
        for start in range(0, len(queries), self.batch_size):
            chunk = queries[start:start + self.batch_size]
            texts = [self.tok.apply_chat_template(generation_messages(q, self.style), tokenize=False,
                                                  add_generation_prompt=True) for q in chunk]
            enc = self.tok(texts, return_tensors="pt", padding=True, add_special_tokens=False).to(self.device)
            if temperature > 0:
                sampling = {"do_sample": True, "temperature": temperature, "top_p": 1.0, "top_k": None,
                            "num_return_sequences": samples}
            else:  # greedy: every sample is the same text
                sampling = {"do_sample": False, "temperature": None, "top_p": None, "top_k": None}
            with torch.no_grad():
                ids = self.model.generate(**enc, max_new_tokens=self.max_new_tokens,
                                          pad_token_id=self.tok.pad_token_id, **sampling)  # [B * n, T]
            if temperature <= 0:
                ids = ids.repeat_interleave(samples, dim=0)
            new = ids[:, enc["input_ids"].shape[1]:]
            decoded = self.tok.batch_decode(new, skip_special_tokens=True)
            out.extend(decoded[i * samples:(i + 1) * samples] for i in range(len(chunk)))
        return out


class ServedGenerator:
    """A rubric generator behind an OpenAI-compatible chat server; requests are cached in `cache_path` (a rerun
    sends nothing twice). A request that fails comes back as an empty text (an invalid rubric), logged."""

    def __init__(self, client, cache_path: str | Path, style: str = "full", max_tokens: int = 2048):
        from plumbing.llm_client import RequestCache

        self.client_cfg, self.cache = client, RequestCache(cache_path)
        self.style, self.max_tokens = style, max_tokens

    def generate(self, queries: Sequence[str], samples: int = 1, temperature: float = 0.0,
                 seed: int = 0) -> list[list[str]]:
        return asyncio.run(self._all(queries, samples, temperature, seed))

    async def _all(self, queries, samples, temperature, seed) -> list[list[str]]:
        from plumbing.llm_client import ChatClient

        async with ChatClient(self.client_cfg, self.cache) as client:
            results = await asyncio.gather(*(
                client.chat(generation_messages(q, self.style), max_tokens=self.max_tokens, temperature=temperature,
                            seed=seed + s) for q in queries for s in range(samples)))
        failed = [r.error for r in results if not r.ok]
        if failed:
            logger.warning("rubric generator: %d of %d requests failed (%s); they count as invalid rubrics",
                           len(failed), len(results), failed[0])
        texts = [r.content if r.ok else "" for r in results]
        return [texts[i * samples:(i + 1) * samples] for i in range(len(queries))]

    def close(self) -> None:
        self.cache.close()


def open_generator(path: str | Path = "", server: str = "", model: str = "", style: str = "full",
                   max_new_tokens: int = 2048, cache: str | Path = "", device: str = "cpu"):
    """A `LocalGenerator` for a checkpoint folder `path`, else a `ServedGenerator` for `server` + `model` (its
    requests cached in `cache`). Close a served one with `close()` when done."""
    if path:
        return LocalGenerator(path, style, device=device, max_new_tokens=max_new_tokens)
    if not (server and model and cache):
        raise ValueError("a rubric generator needs a checkpoint folder, or a server URL, its model name and a cache")
    from plumbing.llm_client import ClientConfig

    return ServedGenerator(ClientConfig(server, model), cache, style, max_new_tokens)
