"""Token-level generation behind one `Generator` protocol: token ids in, sampled ids and their log-probs out.

The rollout (`openrm/rollout.py`) drives any backend through this protocol and never re-tokenises: what a
backend returns is exactly what was sampled. Backends: `HFGenerator` (transformers, batched), `VLLMGenerator`
(optional import; TRL's colocated engine when training with `use_vllm`), `OpenAIGenerator` (vLLM's
OpenAI-compatible completions endpoint, for a served judge).

A multi-turn caller opens a `Session` over its rows (`openrm.kv_session.open_session`): an `HFGenerator` keeps
each row's KV cache between turns (`KVSession`), a backend with its own `session(prompts)` method uses that, and
any other backend gets a `ResendSession` (defined here), which sends each row's whole context again every turn.

`transformers serve` (5.17) cannot back `OpenAIGenerator`: its /v1/completions takes only a string prompt
(400 on token ids), rejects fields it does not know, e.g. `return_tokens_as_token_ids` and `top_k` (422),
ignores `logprobs` and returns text only; /v1/chat/completions and /v1/responses ignore log-probs too.
Serve a judge with `vllm serve` instead.
"""

from __future__ import annotations

import contextlib
import logging
import os
import random
import weakref
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

logger = logging.getLogger(__name__)

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
        if any(not s for s in self.stop):
            raise ValueError("stop strings must be non-empty")
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


class Session(Protocol):
    """Generation over a fixed set of rows (one per prompt given when it was opened), turn by turn: `generate`
    continues the rows named (each from everything it holds so far), `extend` appends environment tokens to a
    row's context, `close` says a row is done (its state may be freed)."""

    def generate(self, rows: Sequence[int], params: SamplingParams) -> list[Generation]:
        """One `Generation` per row index in `rows`, in order; the sampled ids join each row's context."""
        ...

    def extend(self, row: int, ids: Sequence[int]) -> None: ...

    def close(self, row: int) -> None: ...


class ResendSession:
    """Any `Generator` as a `Session`: every turn sends each row's whole context (prompt + all turns so far)."""

    def __init__(self, generator: Generator, prompts: Sequence[Sequence[int]]):
        self.generator = generator
        self.contexts: list[list[int] | None] = [[int(t) for t in p] for p in prompts]

    def generate(self, rows: Sequence[int], params: SamplingParams) -> list[Generation]:
        gens = self.generator.generate([self._context(i) for i in rows], params)
        if len(gens) != len(rows):
            raise RuntimeError(f"generator returned {len(gens)} generations for {len(rows)} prompts")
        for i, gen in zip(rows, gens, strict=True):
            self._context(i).extend(gen.token_ids)
        return gens

    def extend(self, row: int, ids: Sequence[int]) -> None:
        self._context(row).extend(int(t) for t in ids)

    def close(self, row: int) -> None:
        self.contexts[row] = None

    def _context(self, row: int) -> list[int]:
        context = self.contexts[row]
        if context is None:
            raise ValueError(f"row {row} was closed")
        return context


class _StopWatch:
    """transformers' `StopStringCriteria` applied to the *generated* columns only (stock `stop_strings=` also
    matches a stop string that starts inside the prompt, which vLLM and our trimming do not), remembering the
    step at which each row first matched: after that its tokens are padding, even where pad is an EOS id."""

    def __init__(self, criteria, prompt_len: int, batch: int):
        self.criteria, self.prompt_len = criteria, prompt_len
        self.first: list[int | None] = [None] * batch

    def __call__(self, input_ids, scores, **kwargs):
        generated = input_ids[:, self.prompt_len:]  # [B, steps so far]
        done = self.criteria(generated, scores)  # [B] bool
        for row in done.nonzero().flatten().tolist():
            if self.first[row] is None:
                self.first[row] = generated.shape[1] - 1
        return done


class HFGenerator:
    """`model.generate` in batches of left-padded prompts. `model` may be peft-wrapped; its train/eval modes are
    restored afterwards. Log-probs are `log_softmax(logits / T)` at the sampled token (T = 1 when greedy), as
    TRL's GRPOTrainer recomputes them, so the importance ratio is 1 on-policy. Only the sampling knobs below apply:
    the model's own generation defaults (e.g. Qwen's repetition_penalty) are overridden with neutral values.

    `openrm.kv_session.open_session(generator, prompts)` (what the rollout uses) keeps each row's KV cache between
    turns when `reuse_cache` (a `KVSession`: a turn prefills only what the row gained since its last one);
    `reuse_cache=False` gives a `ResendSession` over `generate`, which prefills every row's whole context again
    each turn. `share_prefill`: a `KVSession` reads its fresh rows' common beginning once and prefills identical
    rows once; `grouped_attention`: CPU decoding reads grouped keys/values in place (`grouped_decoding`), in
    float32 when the cache holds float32; `growing_cache`: a `KVSession`'s cache grows in blocks
    (`openrm.kv_cache`), in float32 on the CPU under grouped attention. They only save work (the same tokens,
    log-probs to float rounding); off, they give the plain path to measure against.
    `float32_decoding`: see `decoder`."""

    def __init__(self, model, tokenizer, batch_size: int | None = None, reuse_cache: bool = True,
                 share_prefill: bool = True, grouped_attention: bool = True, float32_decoding: bool = True,
                 growing_cache: bool = True):
        if batch_size is not None and batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        self.model, self.tokenizer, self.batch_size = model, tokenizer, batch_size
        self.reuse_cache, self.share_prefill, self.grouped_attention = reuse_cache, share_prefill, grouped_attention
        self.float32_decoding, self.growing_cache = float32_decoding, growing_cache
        config = model.generation_config
        eos = config.eos_token_id
        eos = [] if eos is None else [eos] if isinstance(eos, int) else list(eos)
        if tokenizer.eos_token_id is not None and tokenizer.eos_token_id not in eos:
            eos.append(tokenizer.eos_token_id)
        if not eos:
            raise ValueError("neither the model's generation config nor the tokenizer names an EOS token")
        self.eos_ids = eos
        pad = config.pad_token_id if config.pad_token_id is not None else tokenizer.pad_token_id
        self.pad_id = eos[0] if pad is None else pad

    def decoder(self, device):
        """The forward a `KVSession` runs its one-token decoding steps with. A trainer under bf16 mixed precision
        (accelerate) wraps the model's forward in autocast, which casts every float32 weight to bf16 at each call:
        on a CPU that cast costs a one-token step more than bf16 arithmetic saves, while a prefill of many tokens
        gains. So on a CPU, with `float32_decoding`, such a model decodes with its own unwrapped float32 forward
        (accelerate keeps it as `_original_forward`), prefilling still under autocast; otherwise the model itself."""
        original = self.model.__dict__.get("_original_forward")
        if not self.float32_decoding or original is None or device.type != "cpu":
            return self.model
        return original

    def generate(self, prompts: Sequence[Sequence[int]], params: SamplingParams) -> list[Generation]:
        rows = [[int(t) for t in p] for p in prompts]
        if any(not row for row in rows):
            raise ValueError("every prompt needs at least one token")
        if not rows:
            return []
        size = self.batch_size or len(rows)
        with self.running(params) as device:
            return [g for start in range(0, len(rows), size)
                    for g in self._batch(rows[start:start + size], params, device)]

    @contextlib.contextmanager
    def running(self, params: SamplingParams):
        """The model in eval mode under inference mode, torch seeded by `params.seed`; yields the model's device.
        Modes are restored afterwards, module by module."""
        import torch

        device = next(self.model.parameters()).device
        modes = [(m, m.training) for m in self.model.modules()]
        self.model.eval()
        try:
            grouped = grouped_decoding(self.model, device) if self.grouped_attention else contextlib.nullcontext()
            with torch.inference_mode(), _seeded(params.seed, device), grouped:
                yield device
        finally:
            for module, training in modes:
                module.training = training

    def _batch(self, rows: list[list[int]], params: SamplingParams, device) -> list[Generation]:
        import torch
        from transformers import GenerationConfig, StoppingCriteriaList

        width = max(map(len, rows))
        input_ids = torch.full((len(rows), width), self.pad_id, dtype=torch.long)  # [B, P], left-padded
        attention_mask = torch.zeros_like(input_ids)
        for i, row in enumerate(rows):
            input_ids[i, width - len(row):] = torch.tensor(row)
            attention_mask[i, width - len(row):] = 1
        sampling = params.temperature > 0
        # Unset fields fall back to the model's generation config, so neutralise what would change the logits.
        knobs = dict(temperature=params.temperature, top_p=params.top_p, top_k=params.top_k, min_p=0.0,
                     typical_p=1.0) if sampling else {}
        config = GenerationConfig(max_new_tokens=params.max_new_tokens, do_sample=sampling, num_beams=1,
                                  repetition_penalty=1.0, no_repeat_ngram_size=0, eos_token_id=self.eos_ids,
                                  pad_token_id=self.pad_id, output_logits=True, return_dict_in_generate=True,
                                  **knobs)
        watch = None
        criteria = StoppingCriteriaList()
        if params.stop:
            watch = _StopWatch(self.stop_criterion(params.stop), width, len(rows))
            criteria.append(watch)
        out = self.model.generate(input_ids=input_ids.to(device), attention_mask=attention_mask.to(device),
                                  generation_config=config, stopping_criteria=criteria)
        generated = out.sequences[:, width:]  # [B, G]
        temperature = params.temperature if sampling else 1.0
        logprobs = torch.stack([  # [B, G]; one step at a time: [B, G, V] would not fit for a real vocabulary
            torch.log_softmax(step.float() / temperature, dim=-1).gather(-1, generated[:, t:t + 1]).squeeze(-1)
            for t, step in enumerate(out.logits)], dim=1)
        return [self.finish(generated[i].tolist(), logprobs[i].tolist(), watch.first[i] if watch else None,
                             params) for i in range(len(rows))]

    def stop_criterion(self, stop: Sequence[str]):
        """A `StopStringCriteria` for `stop`, built once per tokenizer and stop strings (`stop_criterion`)."""
        return stop_criterion(self.tokenizer, stop)

    def finish(self, ids: list[int], logprobs: list[float], stop_step: int | None,
               params: SamplingParams) -> Generation:
        """Trim one row's generated columns to what was really sampled, and say why it ended."""
        eos_step = next((i for i, t in enumerate(ids) if t in self.eos_ids), None)
        end = min(s for s in (stop_step, eos_step, len(ids) - 1) if s is not None)
        hit = first_stop(ids[:end + 1], params.stop, self._decode)
        if hit is not None:
            end, stop_string = hit
            return Generation(ids[:end + 1], logprobs[:end + 1], "stop", stop_string)
        if end == eos_step:
            return Generation(ids[:end + 1], logprobs[:end + 1], "eos")
        if end == stop_step:  # the criterion fired, yet the text lacks every stop string: nothing was sampled after
            logger.warning("StopStringCriteria ended a row whose text holds no stop string: %r",
                           self._decode(ids[:end + 1])[-80:])
            return Generation(ids[:end + 1], logprobs[:end + 1], "stop")
        return Generation(ids, logprobs, "length")

    def _decode(self, ids: Sequence[int]) -> str:
        return self.tokenizer.decode(list(ids), skip_special_tokens=False, clean_up_tokenization_spaces=False)


_STOP_CRITERIA: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # tokenizer -> {stop strings: criterion}


def stop_criterion(tokenizer, stop: Sequence[str]):
    """A `StopStringCriteria` for `stop` under `tokenizer`, kept for the tokenizer's lifetime: building one scans the
    whole vocabulary (0.3 s for SmolLM2's 49k tokens), and transformers' own cache misses whenever
    `get_vocab()` lists the tokens in another order, which a fast tokenizer does from call to call. A rollout builds
    a generator every GRPO step; the criterion holds no state between calls, so one serves them all."""
    from transformers import StopStringCriteria

    stop = tuple(stop)
    try:
        built = _STOP_CRITERIA.setdefault(tokenizer, {})
    except TypeError:  # a tokenizer that cannot be weakly referenced: built each time
        built = {}
    if stop not in built:
        built[stop] = StopStringCriteria(tokenizer=tokenizer, stop_strings=list(stop))
    return built[stop]


def first_stop(ids: Sequence[int], stop: Sequence[str], decode) -> tuple[int, str] | None:
    """(index of the token whose decoding first makes the text contain a stop string, that string), or None.
    Binary search over prefixes: containment only grows as tokens are appended."""
    if not stop or not any(s in decode(ids) for s in stop):
        return None
    lo, hi = 0, len(ids) - 1
    while lo < hi:
        mid = (lo + hi) // 2
        text = decode(ids[:mid + 1])
        if any(s in text for s in stop):
            hi = mid
        else:
            lo = mid + 1
    text = decode(ids[:lo + 1])
    found = [(text.find(s) + len(s), -len(s), s) for s in stop if s in text]
    return lo, min(found)[2]


GROUPED_SDPA = "openrm_grouped_sdpa"


@contextlib.contextmanager
def grouped_decoding(model, device):
    """On the CPU, a model on transformers' `sdpa` attention decodes with `GROUPED_SDPA` while the block runs: a
    one-token query reads grouped-query keys/values in place (`enable_gqa`) where `sdpa` copies them once per query
    head whenever there is a padding mask (every multi-turn batch has one); a float32 decoding step of SmolLM2 at 32
    rows went from 0.41 s to 0.29 s. The query is read in the keys' dtype and the output returned in the query's:
    a bf16 model's `KVSession` keeps float32 keys/values on the CPU (`openrm.kv_cache`), where PyTorch's attention
    kernel is several times slower in bf16. Other devices and attention implementations are left as they are."""
    config = model.config
    # a composite model's sub-configs may hold other implementations, which the switch would overwrite
    other = getattr(config, "_attn_implementation", None) != "sdpa" or getattr(config, "sub_configs", None)
    if device.type != "cpu" or other:
        yield
        return
    _register_grouped_sdpa()
    config._attn_implementation = GROUPED_SDPA
    try:
        yield
    finally:
        config._attn_implementation = "sdpa"


def _register_grouped_sdpa() -> None:
    from transformers import AttentionInterface
    from transformers.integrations.sdpa_attention import sdpa_attention_forward
    from transformers.masking_utils import ALL_MASK_ATTENTION_FUNCTIONS, sdpa_mask

    def grouped_sdpa(module, query, key, value, attention_mask, dropout=0.0, scaling=None, **kwargs):
        dtype = query.dtype  # a bf16 model's query against a float32 cache (`openrm.kv_cache`): read in float32
        query = query.to(key.dtype)
        if query.shape[2] != 1 or attention_mask is None or key.shape[1] == query.shape[1]:
            out, weights = sdpa_attention_forward(module, query, key, value, attention_mask, dropout=dropout,
                                                  scaling=scaling, **kwargs)
            return out.to(dtype), weights
        import torch

        out = torch.nn.functional.scaled_dot_product_attention(  # [B, H, 1, D]
            query, key, value, attn_mask=attention_mask, dropout_p=dropout, scale=scaling, enable_gqa=True)
        return out.transpose(1, 2).contiguous().to(dtype), None

    AttentionInterface.register(GROUPED_SDPA, grouped_sdpa)
    ALL_MASK_ATTENTION_FUNCTIONS.register(GROUPED_SDPA, sdpa_mask)


@contextlib.contextmanager
def _seeded(seed: int | None, device):
    """Seed torch's generators for the block, leaving the caller's random state as it was."""
    if seed is None:
        yield
        return
    import torch

    with torch.random.fork_rng(devices=[device] if device.type == "cuda" else []):
        torch.manual_seed(seed)
        yield


class VLLMGenerator:
    """Wraps a `vllm.LLM` (e.g. TRL's colocated engine). UNTESTED here (vLLM needs a GPU machine): written from
    vLLM's documented offline API. Build the LLM with `logprobs_mode="processed_logprobs"` (as TRL does) so the
    returned log-probs are after temperature; note vLLM's processed log-probs also reflect top-p/top-k.
    vLLM seeds each prompt on its own, so with `params.seed` row i gets seed + i (repeated prompts still differ)."""

    def __init__(self, llm):
        self.llm = llm
        self.max_model_len = llm.llm_engine.model_config.max_model_len  # the engine's own context limit

    def generate(self, prompts: Sequence[Sequence[int]], params: SamplingParams) -> list[Generation]:
        from vllm import SamplingParams as VSamplingParams
        from vllm.inputs import TokensPrompt

        if not prompts:
            return []
        def sampling(row: int):
            return VSamplingParams(n=1, temperature=params.temperature, top_p=params.top_p,
                                   top_k=params.top_k or -1, max_tokens=params.max_new_tokens,
                                   stop=list(params.stop), include_stop_str_in_output=True, logprobs=0,
                                   seed=None if params.seed is None else params.seed + row,
                                   skip_special_tokens=False)

        outputs = self.llm.generate([TokensPrompt(prompt_token_ids=[int(t) for t in p]) for p in prompts],
                                    sampling(0) if params.seed is None else [sampling(i) for i in range(len(prompts))],
                                    use_tqdm=False)
        result = []
        for request in outputs:
            out = request.outputs[0]
            ids = list(out.token_ids)
            if out.logprobs is None or len(out.logprobs) != len(ids):
                raise GenerationError("vLLM returned no per-token log-probs; was logprobs=0 honoured?")
            logprobs = [step[token].logprob for token, step in zip(ids, out.logprobs, strict=True)]
            result.append(Generation(ids, logprobs, *_finish_reason(out.finish_reason, out.stop_reason)))
        return result


def _finish_reason(finish_reason: str | None, stop_reason) -> tuple[FinishReason, str | None]:
    """vLLM's (finish_reason, stop_reason): a str stop_reason is the matched stop string; None (EOS) or an int
    (a stop token id, which is where vLLM puts the generation config's extra EOS ids) mean EOS."""
    if finish_reason == "length":
        return "length", None
    if finish_reason != "stop":
        raise GenerationError(f"unexpected finish_reason {finish_reason!r}")
    return ("stop", stop_reason) if isinstance(stop_reason, str) else ("eos", None)


class GenerationError(RuntimeError):
    """A backend refused the request, kept failing after every retry, or answered something unusable."""


class OpenAIGenerator:
    """vLLM's OpenAI-compatible `/v1/completions`, token ids in and out. `base_url` is the API root as OpenAI
    clients take it (`http://host:8000/v1`). Failures are retried by `plumbing.retry`'s policy (connection errors,
    timeouts, 429, 5xx, with backoff and jitter); any other 4xx is raised at once with the server's message. Start
    vLLM with `--logprobs-mode processed_logprobs` so log-probs are after temperature (as TRL's GRPOTrainer wants).
    Up to `concurrency` requests of `batch_size` prompts are in flight. vLLM seeds every prompt of a request
    alike, so with `params.seed` each row goes alone with seed + its index (repeated prompts still differ)."""

    def __init__(self, base_url: str, model: str, api_key: str | None = None, timeout: float = 300.0,
                 max_retries: int = 4, backoff: float = 0.5, max_backoff: float = 16.0, batch_size: int = 64,
                 concurrency: int = 8, rng: random.Random | None = None):
        if max_retries < 0 or batch_size < 1 or concurrency < 1 or timeout <= 0:
            raise ValueError("need max_retries >= 0, batch_size >= 1, concurrency >= 1 and timeout > 0")
        import httpx

        from plumbing.retry import RetryPolicy

        self.base_url, self.model = base_url.rstrip("/"), model
        self.retry = RetryPolicy(max_retries, backoff, max_backoff, rng=rng or random.Random(0))
        self.batch_size, self.concurrency = batch_size, concurrency
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._http = httpx.Client(base_url=self.base_url, timeout=timeout, headers=headers)

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> OpenAIGenerator:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def generate(self, prompts: Sequence[Sequence[int]], params: SamplingParams) -> list[Generation]:
        from concurrent.futures import ThreadPoolExecutor

        rows = [[int(t) for t in p] for p in prompts]
        if params.seed is None:
            jobs = [(rows[i:i + self.batch_size], None) for i in range(0, len(rows), self.batch_size)]
        else:
            jobs = [([row], params.seed + i) for i, row in enumerate(rows)]
        if not jobs:
            return []
        with ThreadPoolExecutor(max_workers=min(self.concurrency, len(jobs))) as pool:
            batches = list(pool.map(lambda job: self._complete(*job, params), jobs))
        return [g for batch in batches for g in batch]

    def _complete(self, batch: list[list[int]], seed: int | None, params: SamplingParams) -> list[Generation]:
        body = {"model": self.model, "prompt": batch, "max_tokens": params.max_new_tokens,
                "temperature": params.temperature, "top_p": params.top_p, "top_k": params.top_k or -1,
                "stop": list(params.stop), "include_stop_str_in_output": True, "skip_special_tokens": False,
                "logprobs": 0, "return_tokens_as_token_ids": True, "return_token_ids": True, "n": 1}
        if seed is not None:
            body["seed"] = seed
        choices = self._post("/completions", body).get("choices")
        if not isinstance(choices, list) or len(choices) != len(batch):
            raise GenerationError(f"{self.base_url}: expected {len(batch)} choices, got {choices!r:.200}")
        return [self._parse(c) for c in sorted(choices, key=lambda c: c.get("index", 0))]

    def _parse(self, choice: dict) -> Generation:
        try:
            lp = choice["logprobs"]
            tokens, logprobs = lp["tokens"], [float(x) for x in lp["token_logprobs"]]
            ids = [_token_id(t) for t in tokens]
            if choice.get("token_ids") is not None and list(choice["token_ids"]) != ids:
                raise GenerationError("token_ids disagree with the logprobs' tokens")
            reason = _finish_reason(choice["finish_reason"], choice.get("stop_reason"))
        except (KeyError, TypeError, ValueError) as exc:
            raise GenerationError(f"{self.base_url}: malformed choice ({exc!r}); is this a vLLM server "
                                  "(token-id prompts, return_tokens_as_token_ids)?") from None
        if len(logprobs) != len(ids):
            raise GenerationError(f"{self.base_url}: {len(ids)} tokens but {len(logprobs)} log-probs")
        return Generation(ids, logprobs, *reason)

    def _post(self, path: str, body: dict) -> dict:
        from plumbing.retry import request_json

        return request_json(lambda: self._http.post(path, json=body), self.retry, f"{self.base_url}{path}",
                            GenerationError)


def _token_id(token: str) -> int:
    """vLLM's `return_tokens_as_token_ids` spelling of a token: "token_id:123"."""
    prefix, _, number = token.partition(":")
    if prefix != "token_id":
        raise ValueError(f"token {token!r} is not 'token_id:<id>'")
    return int(number)


BACKENDS = ("transformers", "vllm", "server")


def open_generator(folder: str | os.PathLike, tokenizer: Any, backend: str = "transformers", device: str = "cpu",
                   dtype: Any = None, server: str = "", served_model: str = "", api_key: str | None = None,
                   concurrency: int = 8, batch_size: int = 64, llm_kwargs: Mapping[str, Any] | None = None):
    """The generator of a judge over `folder`: `transformers` in process on `device` (`dtype` None keeps the
    checkpoint's), an in-process `vllm` engine (UNTESTED here: vLLM needs a GPU machine), or an OpenAI-compatible
    `server` URL serving `served_model` (`concurrency` requests of `batch_size` prompts in flight)."""
    if backend == "server":
        return OpenAIGenerator(server, served_model, api_key=api_key, batch_size=batch_size, concurrency=concurrency)
    if backend == "vllm":
        from vllm import LLM

        return VLLMGenerator(LLM(model=str(folder), logprobs_mode="processed_logprobs", **(llm_kwargs or {})))
    if backend != "transformers":
        raise ValueError(f"judge backend must be one of {BACKENDS}, got {backend!r}")
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(folder, dtype=dtype or "auto").to(device)
    model.eval()
    return HFGenerator(model, tokenizer)
