"""Multi-turn HF generation that keeps each row's KV cache between turns (the `HFGenerator`'s `Session`).

A turn prefills only what a row gained since its last turn (its last sampled token, which was never fed, and the
environment's `<information>` tokens), then decodes token by token with the model's forward and a `DynamicCache`
whose layers grow in blocks (`openrm.kv_cache`); a row leaves the decoding batch as soon as it stops. Opened by
`open_session(generator, prompts)`, which is what `openrm.rollout.rollout` uses:

    session = open_session(HFGenerator(model, tokenizer), prompts)
    gens = session.generate([0, 1], params); session.extend(0, information_ids); session.close(1)

Layout of one turn's batch: cached tokens right-aligned in columns [0, W), the pending tokens right-aligned in
[W, W + L), the sampled tokens after them. Gaps are masked out of attention and `position_ids` count only a row's
real tokens, so each row sees exactly its own sequence (up to float rounding of differently shaped matmuls).

Work the rows have in common is done once. Before a chunk's first turn, the tokens every fresh row begins with (a
judge's system prompt: 64 of a toy prompt's ~108 tokens) are read in one batch-1 pass, and every row starts from
those keys/values. Rows whose whole context is the same (GRPO's completions of one prompt) are prefilled once and
copied in the cache before they decode.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING

from openrm.generation import Generation, Generator, HFGenerator, ResendSession, SamplingParams, Session

if TYPE_CHECKING:
    import torch

logger = logging.getLogger(__name__)

MIN_SHARED = 8  # a common beginning shorter than this is prefilled with the rest of each row


class _Row:
    """One row between turns: its cached keys/values (per layer `[H_kv, T, D]`, no gaps) and the tokens of its
    context that the model has not seen yet."""

    __slots__ = ("keys", "values", "pending")

    def __init__(self, pending: list[int]):
        self.keys: list[torch.Tensor] = []
        self.values: list[torch.Tensor] = []
        self.pending = pending

    @property
    def cached(self) -> int:
        return self.keys[0].shape[1] if self.keys else 0


def fits(model) -> bool:
    """Whether every attention layer of `model` attends to the whole context: a sliding window counts cache
    columns, which the gaps of this layout would distort, so such models re-send whole contexts instead."""
    types = getattr(model.config.get_text_config(decoder=True), "layer_types", None) or ()
    if any(t != "full_attention" for t in types):
        logger.info("layer types %s: re-sending whole contexts each turn instead of keeping KV caches",
                    sorted(set(types)))
        return False
    return True


def open_session(generator: Generator, prompts: Sequence[Sequence[int]]) -> Session:
    """A `Session` over `prompts`: a `KVSession` for an `HFGenerator` with `reuse_cache` whose model `fits`, the
    generator's own `session(prompts)` when it has one, else a `ResendSession` (whole contexts every turn)."""
    if isinstance(generator, HFGenerator):
        if generator.reuse_cache and fits(generator.model):
            return KVSession(generator, prompts)
        return ResendSession(generator, prompts)
    opener = getattr(generator, "session", None)
    return opener(prompts) if callable(opener) else ResendSession(generator, prompts)


class KVSession:
    """A `Session` over an `HFGenerator`'s model (one that `fits`). Rows are decoded in chunks of the generator's
    `batch_size`."""

    def __init__(self, generator: HFGenerator, prompts: Sequence[Sequence[int]]):
        self.generator = generator
        self.rows: list[_Row | None] = [_Row([int(t) for t in p]) for p in prompts]
        if any(not row.pending for row in self.rows):
            raise ValueError("every prompt needs at least one token")

    def generate(self, rows: Sequence[int], params: SamplingParams) -> list[Generation]:
        states = [self._row(i) for i in rows]
        if len(set(rows)) != len(rows):
            raise ValueError("a row can take only one turn at a time")
        size = self.generator.batch_size or max(len(states), 1)
        with self.generator.running(params) as device:
            return [g for start in range(0, len(states), size)
                    for g in self._turn(states[start:start + size], params, device)]

    def extend(self, row: int, ids: Sequence[int]) -> None:
        self._row(row).pending.extend(int(t) for t in ids)

    def close(self, row: int) -> None:
        self.rows[row] = None

    def _row(self, i: int) -> _Row:
        row = self.rows[i]
        if row is None:
            raise ValueError(f"row {i} was closed")
        return row

    def _turn(self, states: list[_Row], params: SamplingParams, device) -> list[Generation]:
        """One turn of `states` (a chunk): prefill what each row has pending, then decode until every row stops."""
        import torch

        gen, model = self.generator, self.generator.model
        if gen.share_prefill:
            self._share_prefix(states, device)
            unique, copies = _distinct(states)  # prefill each distinct row once; copies[b]: batch row b's distinct row
        else:
            unique = copies = list(range(len(states)))
        first = [states[u] for u in unique]
        width, span = max(s.cached for s in first), max(len(s.pending) for s in first)
        mask = torch.zeros(len(first), width + span, dtype=torch.long)  # [U, W + L]; 1 = a real token
        input_ids = torch.full((len(first), span), gen.pad_id, dtype=torch.long)  # [U, L]
        for b, s in enumerate(first):
            mask[b, width - s.cached:width] = 1
            mask[b, width + span - len(s.pending):] = 1
            input_ids[b, span - len(s.pending):] = torch.tensor(s.pending)
        cache = self._batched_cache(first, width, device)
        mask = mask.to(device)
        positions = (mask.cumsum(-1) - 1).clamp(min=0)[:, width:]  # [U, L]; a row's own token count
        logits = model(input_ids=input_ids.to(device), attention_mask=mask, position_ids=positions,
                       past_key_values=cache, use_cache=True, logits_to_keep=1).logits[:, -1]  # [U, V]
        if len(unique) < len(states):
            index = torch.tensor(copies, device=device)  # [B]
            cache.batch_select_indices(index)
            mask, logits = mask[index], logits[index]  # [B, W + L], [B, V]

        decode = gen.decoder(device)
        if decode is not model:  # float32 steps after an autocast prefill: the cache's bf16 tensors in float32 once
            dtype = next(model.parameters()).dtype
            for layer in cache.layers:
                layer.keys, layer.values = layer.keys.to(dtype), layer.values.to(dtype)
        live = list(range(len(states)))  # chunk index of each batch row still decoding
        ids: list[list[int]] = [[] for _ in states]
        logprobs: list[list[float]] = [[] for _ in states]
        out: list[Generation | None] = [None] * len(states)
        criterion = gen.stop_criterion(params.stop) if params.stop else None
        sampled = torch.empty(len(states), 0, dtype=torch.long, device=device)  # [B, steps]: this turn's tokens
        while True:
            token, logprob = _pick(logits, params)  # [B], [B]
            sampled = torch.cat([sampled, token[:, None]], dim=1)
            stopped = criterion(sampled, None) if criterion is not None else torch.zeros_like(token, dtype=torch.bool)
            done = []
            for b, (t, lp, hit) in enumerate(zip(token.tolist(), logprob.tolist(), stopped.tolist(), strict=True)):
                row = live[b]
                ids[row].append(t)
                logprobs[row].append(lp)
                if hit or t in gen.eos_ids or len(ids[row]) >= params.max_new_tokens:
                    out[row] = gen.finish(ids[row], logprobs[row], len(ids[row]) - 1 if hit else None, params)
                    self._store(states[row], cache, mask, b, out[row].token_ids, len(ids[row]))
                    done.append(b)
            if len(done) == len(live):
                return out
            if done:
                keep = [b for b in range(len(live)) if b not in done]
                live = [live[b] for b in keep]
                index = torch.tensor(keep, device=device)
                cache.batch_select_indices(index)
                mask, sampled, token = mask[index], sampled[index], token[index]
                mask = self._compact(cache, mask)
            mask = torch.cat([mask, mask.new_ones(len(live), 1)], dim=1)
            logits = decode(input_ids=token[:, None], attention_mask=mask,
                            position_ids=mask.sum(-1, keepdim=True) - 1, past_key_values=cache, use_cache=True,
                            logits_to_keep=1).logits[:, -1]

    def _share_prefix(self, states: list[_Row], device) -> None:
        """When every row of the chunk is fresh (nothing cached), read the tokens they all begin with once, in a
        batch-1 pass, and make those keys/values every row's cache (one tensor per layer, shared until the row's
        first turn stores its own). Each row keeps at least one pending token."""
        if len(states) < 2 or any(s.cached for s in states):
            return
        first = states[0].pending
        shared = min(len(s.pending) for s in states) - 1
        for s in states[1:]:
            shared = next((i for i in range(shared) if s.pending[i] != first[i]), shared)
        if shared < MIN_SHARED:
            return
        import torch

        cache = _new_cache(self.generator, device)
        self.generator.model(input_ids=torch.tensor([first[:shared]], device=device), past_key_values=cache,
                             use_cache=True, logits_to_keep=1)
        keys = [layer.keys[0] for layer in cache.layers]  # [H_kv, shared, D] each
        values = [layer.values[0] for layer in cache.layers]
        for s in states:
            s.keys, s.values, s.pending = keys, values, s.pending[shared:]

    def _batched_cache(self, states: list[_Row], width: int, device):
        """A cache holding every row's keys/values right-aligned in `width` columns (empty when `width` is 0)."""
        import torch

        if width == 0:
            return _new_cache(self.generator, device)
        layers = []
        for layer in range(len(next(s for s in states if s.keys).keys)):
            ref = next(s for s in states if s.keys).keys[layer]  # [H_kv, T, D]
            keys = ref.new_zeros(len(states), ref.shape[0], width, ref.shape[2])  # [B, H_kv, W, D]
            values = torch.zeros_like(keys)
            for b, s in enumerate(states):
                if s.keys:
                    keys[b, :, width - s.cached:] = s.keys[layer]
                    values[b, :, width - s.cached:] = s.values[layer]
            layers.append((keys.to(device), values.to(device)))
        return _new_cache(self.generator, device, layers)

    @staticmethod
    def _store(state: _Row, cache, mask, b: int, kept: list[int], sampled: int) -> None:
        """Keep batch row `b`'s real cached columns (gaps dropped) for its next turn. Its last kept token was never
        fed, so it is what the row has pending; when the stop-string trim kept fewer tokens than were sampled, the
        columns of the dropped ones go too."""
        real = mask[b].nonzero().flatten()  # [T + sampled - 1] column indices of real tokens
        real = real[:len(real) - (sampled - len(kept))]
        state.keys = [layer.keys[b][:, real].clone() for layer in cache.layers]  # [H_kv, T', D] each
        state.values = [layer.values[b][:, real].clone() for layer in cache.layers]
        state.pending = [kept[-1]]

    @staticmethod
    def _compact(cache, mask):
        """Drop the columns that are gaps in every remaining row (they appear when the longest rows leave)."""
        used = mask.bool().any(0)  # [W']
        if bool(used.all()):
            return mask
        for layer in cache.layers:
            layer.keys, layer.values = layer.keys[:, :, used], layer.values[:, :, used]
        return mask[:, used]


def _new_cache(generator: HFGenerator, device, layers: list[tuple[torch.Tensor, torch.Tensor]] | None = None):
    """A `DynamicCache` for the generator's model, filled with `layers` ([B, H_kv, T, D] keys and values per layer)
    when given. Its layers are `openrm.kv_cache.GrowingLayer`s when the generator's `growing_cache` is on; on the CPU
    under `openrm.generation.grouped_decoding` they keep float32 keys/values whatever the model's dtype (that
    attention reads them in float32)."""
    import torch
    from transformers import DynamicCache

    from openrm.generation import GROUPED_SDPA
    from openrm.kv_cache import GrowingLayer

    config = generator.model.config
    cache = DynamicCache(config=config)
    if generator.growing_cache:
        store = torch.float32 if device.type == "cpu" and config._attn_implementation == GROUPED_SDPA else None
        cache.layers = [GrowingLayer(store) for _ in cache.layers]
    if layers is not None:
        for layer, (keys, values) in zip(cache.layers, layers, strict=True):
            layer.update(keys, values)
    return cache


def _distinct(states: list[_Row]) -> tuple[list[int], list[int]]:
    """(the index of each distinct row's first occurrence, each row's position among them). Two rows are the same
    when their pending tokens are equal and their caches are the same tensors (or both empty)."""
    unique: list[int] = []
    copies: list[int] = []
    seen: dict[tuple, int] = {}
    for b, s in enumerate(states):
        key = (id(s.keys[0]) if s.keys else None, tuple(s.pending))
        if key not in seen:
            seen[key] = len(unique)
            unique.append(b)
        copies.append(seen[key])
    return unique, copies


def _pick(logits, params: SamplingParams):
    """Next tokens and their log-probs from `logits` [B, V]: greedy (argmax) at temperature 0, else sampled after
    transformers' temperature, top-k and top-p warpers in `generate`'s order. The log-prob is log_softmax(logits / T)
    at the token (T = 1 when greedy), as `HFGenerator.generate` reports it."""
    import torch

    logits = logits.float()
    if params.temperature == 0:
        token = logits.argmax(-1)  # [B]
        return token, torch.log_softmax(logits, -1).gather(-1, token[:, None]).squeeze(-1)
    from transformers import TemperatureLogitsWarper, TopKLogitsWarper, TopPLogitsWarper

    scores = logits
    if params.temperature != 1.0:
        scores = TemperatureLogitsWarper(params.temperature)(None, scores)
    if params.top_k:
        scores = TopKLogitsWarper(params.top_k)(None, scores)
    if params.top_p < 1.0:
        scores = TopPLogitsWarper(params.top_p)(None, scores)
    token = torch.multinomial(torch.softmax(scores, -1), num_samples=1).squeeze(1)  # [B]
    return token, torch.log_softmax(logits / params.temperature, -1).gather(-1, token[:, None]).squeeze(-1)
