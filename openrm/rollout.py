"""The multi-turn judge rollout over token ids: generate → stop at `</search>`, `</answer>` or EOS → run the
batch's pending searches → append `<information>` tokens (env_mask 0) → continue, until every row is done.

Token ids are kept exactly as the generator sampled them; only the environment's `<information>` blocks are
tokenised here, and they are masked out of the loss. A trajectory that ends with `</answer>` gets the EOS token
appended (masked), so trainers that detect truncation by a final EOS (TRL) see it as finished.

The generator is driven through a `Session` (`openrm.kv_session.open_session`): with `HFGenerator` each row keeps
its KV cache across turns, so a turn prefills only the `<information>` block it was given; other backends get
their whole context re-sent every turn.

    trajectories = rollout(prompt_ids, HFGenerator(model, tok), ToolBox(...), tok, RolloutConfig())
"""

from __future__ import annotations

import hashlib
import logging
import re
import weakref
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from openrm import protocol
from openrm.generation import Generator, SamplingParams
from openrm.kv_session import open_session
from openrm.protocol import ToolCall
from openrm.tools import ToolBox, ToolResult

logger = logging.getLogger(__name__)

Finish = Literal["answer", "eos", "max_turns", "length", "context"]  # context: never sent (prompt too long)
SEARCH_OPEN, SEARCH_CLOSE = protocol.open_tag(protocol.SEARCH), protocol.close_tag(protocol.SEARCH)
ANSWER_CLOSE = protocol.close_tag(protocol.ANSWER)
TRUNCATED = " [truncated]"


@dataclass(frozen=True)
class RolloutConfig:
    max_tool_calls: int = protocol.MAX_TOOL_CALLS  # searches executed; later ones get a "budget used up" message
    max_turns: int = 5  # generation turns (a turn ends at a stop string); then the row ends as "max_turns"
    max_completion_tokens: int = 2048  # model + environment tokens after the prompt
    max_information_tokens: int = 512  # one <information> block, truncated to this many tokens
    sampling: SamplingParams = field(default_factory=SamplingParams)  # its max_new_tokens caps one turn

    def __post_init__(self):
        if self.max_tool_calls < 0 or self.max_turns < 1:
            raise ValueError(f"need max_tool_calls >= 0 and max_turns >= 1, got {self.max_tool_calls}, "
                             f"{self.max_turns}")
        if self.max_completion_tokens < 1 or self.max_information_tokens < 16:
            raise ValueError("need max_completion_tokens >= 1 and max_information_tokens >= 16")


@dataclass
class Trajectory:
    prompt_ids: list[int]
    completion_ids: list[int] = field(default_factory=list)
    env_mask: list[int] = field(default_factory=list)  # 1 = sampled by the model, 0 = inserted by the environment
    logprobs: list[float] = field(default_factory=list)  # sampled tokens' log-probs; 0.0 on environment tokens
    tool_results: list[ToolResult] = field(default_factory=list)
    finish_reason: Finish | None = None
    turns: int = 0

    def extend(self, ids: Sequence[int], logprobs: Sequence[float] | None) -> None:
        self.completion_ids.extend(ids)
        self.env_mask.extend([0 if logprobs is None else 1] * len(ids))
        self.logprobs.extend([0.0] * len(ids) if logprobs is None else logprobs)

    @property
    def n_calls(self) -> int:
        return len(self.tool_results)

    def text(self, tokenizer: Any) -> str:
        return tokenizer.decode(self.completion_ids, skip_special_tokens=True)


def _eos_id(tokenizer: Any) -> int | None:
    return tokenizer.eos_token_id


def _since_environment(row: Trajectory) -> list[int]:
    """The model's tokens since the environment last appended a block (or since the start of the completion)."""
    k = len(row.env_mask)
    while k > 0 and row.env_mask[k - 1] == 1:
        k -= 1
    return row.completion_ids[k:]


def _search_inside(turn_text: str) -> str | None:
    """The text of the last `<search>` block of a turn that ended at `</search>`; None if it has no opening tag."""
    body = turn_text[: turn_text.rfind(SEARCH_CLOSE)] if SEARCH_CLOSE in turn_text else turn_text
    start = body.rfind(SEARCH_OPEN)
    return None if start < 0 else body[start + len(SEARCH_OPEN):]


def information_ids(tokenizer: Any, result: ToolResult, budget: int) -> list[int]:
    """Token ids of the result's `<information>` block, truncated inside its body to at most `budget` tokens
    (the closing tag is always kept so the model sees where the evidence ends)."""
    ids = tokenizer.encode(protocol.neutralize_special(result.rendered, special_strings(tokenizer)),
                           add_special_tokens=False)
    if len(ids) <= budget:
        return ids
    tail = tokenizer.encode(TRUNCATED + "\n" + protocol.close_tag(protocol.INFORMATION) + "\n",
                            add_special_tokens=False)
    keep = max(budget - len(tail), 0)
    return (ids[:keep] + tail)[:budget]


def rollout(prompts: Sequence[Sequence[int]], generator: Generator, toolbox: ToolBox | None, tokenizer: Any,
            cfg: RolloutConfig = RolloutConfig()) -> list[Trajectory]:
    """Run every prompt to its end; one `Trajectory` per prompt, in order. `toolbox=None`: no-tool judging
    (a search is answered with a message saying no tools are available)."""
    rows = [Trajectory(list(p)) for p in prompts]
    session = open_session(generator, [row.prompt_ids for row in rows])
    calls_made = [0] * len(rows)
    active = list(range(len(rows)))
    eos = _eos_id(tokenizer)
    stops = tuple(dict.fromkeys((*cfg.sampling.stop, *protocol.STOP_STRINGS)))
    while active:
        budget = {i: cfg.max_completion_tokens - len(rows[i].completion_ids) for i in active}
        # one generate call per distinct token budget keeps rows batched; budgets only differ near the end
        outputs = {}
        for cap in sorted({min(cfg.sampling.max_new_tokens, b) for b in budget.values()}):
            group = [i for i in active if min(cfg.sampling.max_new_tokens, budget[i]) == cap]
            params = replace(cfg.sampling, max_new_tokens=cap, stop=stops)
            gens = session.generate(group, params)
            if len(gens) != len(group):
                raise RuntimeError(f"generator returned {len(gens)} generations for {len(group)} prompts")
            outputs.update(zip(group, gens, strict=True))
        pending: list[tuple[int, ToolCall]] = []
        for i in active:
            row, gen = rows[i], outputs[i]
            if len(gen.logprobs) != len(gen.token_ids):
                raise RuntimeError(f"generator returned {len(gen.token_ids)} tokens but {len(gen.logprobs)} logprobs")
            row.extend(gen.token_ids, gen.logprobs)
            row.turns += 1
            if gen.finish_reason == "eos":
                row.finish_reason = "eos"
            elif gen.finish_reason == "stop" and gen.stop_string == ANSWER_CLOSE:
                row.finish_reason = "answer"
                if eos is not None:
                    row.extend([eos], None)
            elif gen.finish_reason == "stop" and gen.stop_string == SEARCH_CLOSE:
                if row.turns >= cfg.max_turns:
                    row.finish_reason = "max_turns"
                    continue
                # the call may have begun in an earlier turn that ran out of max_new_tokens: read the model's
                # own text since the environment last wrote, not this turn's alone
                inside = _search_inside(tokenizer.decode(_since_environment(row), skip_special_tokens=True))
                if inside is None:
                    call = ToolCall(None, "", f"{SEARCH_CLOSE} without a matching {SEARCH_OPEN}")
                elif toolbox is None:
                    call = ToolCall(None, inside.strip(), "no search tools are available; decide from the answers")
                else:
                    call = toolbox.parse(inside)
                if call.error is None and calls_made[i] >= cfg.max_tool_calls:
                    call = ToolCall(call.tool, call.query, f"the budget of {cfg.max_tool_calls} searches is used "
                                    "up; decide with what you have")
                calls_made[i] += call.error is None
                pending.append((i, call))
            elif len(row.completion_ids) >= cfg.max_completion_tokens:
                row.finish_reason = "length"
            elif gen.finish_reason == "length" and row.turns >= cfg.max_turns:
                row.finish_reason = "max_turns"
            # else: the turn hit its own max_new_tokens with budget left; the row simply continues
        if pending:
            results = toolbox.run([c for _, c in pending]) if toolbox is not None else \
                [ToolResult(c, error=c.error, rendered=protocol.render_information([], c.error)) for _, c in pending]
            for (i, _), result in zip(pending, results, strict=True):
                row = rows[i]
                row.tool_results.append(result)
                room = cfg.max_completion_tokens - len(row.completion_ids)
                information = information_ids(tokenizer, result, min(cfg.max_information_tokens, room))
                row.extend(information, None)
                session.extend(i, information)
                if len(row.completion_ids) >= cfg.max_completion_tokens:
                    row.finish_reason = "length"
        for i in active:
            if rows[i].finish_reason is not None:
                session.close(i)
        active = [i for i in active if rows[i].finish_reason is None]
    return rows


_SPECIALS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def special_strings(tokenizer: Any) -> tuple[str, ...]:
    """Every string this tokenizer turns into a special token (Qwen's `<|im_start|>` is special but not listed in
    `all_special_tokens`, hence the added-tokens table). Remembered per tokenizer and vocabulary size: reading the
    added-tokens table costs ~5 ms with the tiny judge's ~3,000 whole-word tokens, twice per tokenized record."""
    key = len(tokenizer) if hasattr(tokenizer, "__len__") else None
    try:
        cached = _SPECIALS.get(tokenizer)
    except TypeError:  # not weak-referenceable: compute every time
        cached = None
    if cached is not None and cached[0] == key:
        return cached[1]
    added = getattr(tokenizer, "added_tokens_decoder", None) or {}
    specials = tuple({*getattr(tokenizer, "all_special_tokens", ()), *(t.content for t in added.values() if t.special)})
    try:
        _SPECIALS[tokenizer] = (key, specials)
    except TypeError:
        pass
    return specials


def prompt_token_ids(tokenizer: Any, prompt: Any) -> list[int]:
    """Token ids of a chat prompt (messages) with the generation prompt appended, or of a plain string (taken as
    already rendered). Message text never becomes a special token: only the chat template writes control tokens."""
    if isinstance(prompt, str):
        return tokenizer.encode(prompt, add_special_tokens=False)
    specials = special_strings(tokenizer)
    prompt = [{**m, "content": protocol.neutralize_special(m["content"], specials)}
              if isinstance(m.get("content"), str) else m for m in prompt]
    out = tokenizer.apply_chat_template(prompt, add_generation_prompt=True, tokenize=True)
    if isinstance(out, Mapping):  # transformers 5 may hand back a BatchEncoding
        out = out["input_ids"]
    return list(out)


# One <information> block exactly as `protocol.render_information` writes it into a trajectory.
_INFORMATION = re.compile(rf"\n{re.escape(protocol.open_tag(protocol.INFORMATION))}\n.*?"
                          rf"\n{re.escape(protocol.close_tag(protocol.INFORMATION))}\n", re.DOTALL)


def split_information(completion: str) -> list[tuple[str, bool]]:
    """`completion` as consecutive (text, written_by_the_environment) pieces: each `<information>` block exactly as
    `protocol.render_information` renders it, and the judge's own text around them."""
    pieces, start = [], 0
    for match in _INFORMATION.finditer(completion):
        if match.start() > start:
            pieces.append((completion[start:match.start()], False))
        pieces.append((match.group(0), True))
        start = match.end()
    if start < len(completion):
        pieces.append((completion[start:], False))
    return pieces


def tokenize_record(tokenizer: Any, prompt: Sequence[dict], completion: str) -> dict[str, list[int]]:
    """`input_ids` and `completion_mask` (1 = trained on) of one gold record, token for token as a rollout would
    hold it: prompt ids from the chat template, the judge's text, each `<information>` block encoded separately
    (mask 0), and the end-of-turn token."""
    ids = prompt_token_ids(tokenizer, list(prompt))
    mask = [0] * len(ids)
    specials = special_strings(tokenizer)
    for text, environment in split_information(completion):
        # environment blocks are defused exactly as `information_ids` does in a live rollout
        piece = tokenizer.encode(protocol.neutralize_special(text, specials) if environment else text,
                                 add_special_tokens=False)
        ids += piece
        mask += [0 if environment else 1] * len(piece)
    ids.append(tokenizer.eos_token_id)
    mask.append(1)
    return {"input_ids": ids, "completion_mask": mask}


def prompt_sha(ids: Sequence[int]) -> str:
    """Short fingerprint of a prompt's token ids: lets reward logs prove each completion met its own prompt."""
    return hashlib.sha1(",".join(map(str, ids)).encode()).hexdigest()[:16]


class Bf16Copy:
    """A bf16 copy of a trained model's weights to generate with on the CPU, its values refreshed from the model
    before every rollout (`__call__`). Under bf16 mixed precision the trainer keeps float32 weights and runs the
    forward in autocast, which casts every weight at each call; a one-token decoding step pays that cast for one
    token. The copy runs bf16 matmuls natively (half the time of float32 ones at 16 rows here) with the cache and
    one-token attention in float32 (`openrm.kv_cache`). The rollout then samples from the bf16-rounded weights,
    as a bf16 vLLM engine beside a float32 trainer does; the update recomputes every log-prob with the trained
    model. Buffers (rotary frequencies) stay as they are."""

    def __init__(self):
        self.model = self._source = None
        self._pairs: list[tuple[Any, Any]] = []  # (copy's parameter, trained parameter)

    def __call__(self, model):
        import copy

        import torch

        if self.model is None or self._source is not model:
            shadow = copy.deepcopy(model)
            for name in ("forward", "_original_forward"):  # accelerate's autocast wrapper lives on the instance
                shadow.__dict__.pop(name, None)
            for param in shadow.parameters():
                param.requires_grad_(False)
                param.grad = None
                param.data = param.data.to(torch.bfloat16)
            named = dict(model.named_parameters())
            self._pairs = [(param, named[name]) for name, param in shadow.named_parameters()]
            self.model, self._source = shadow, model
        with torch.no_grad():
            for param, trained in self._pairs:
                param.copy_(trained)
        return self.model


def make_trl_rollout_func(toolbox: ToolBox | None, cfg: RolloutConfig, bf16_copy: bool = False):
    """A `rollout_func` for TRL's GRPOTrainer: one trajectory per received prompt (the sampler already repeated
    each prompt `num_generations` times, in order, so groups stay intact on every process).

    Sampling settings come from the trainer's `GRPOConfig` (temperature, top_p, top_k, max_completion_length);
    `cfg` adds the tool budget. Generation uses the trainer's own model (unwrapped from DDP / DeepSpeed), or its
    colocated vLLM engine when `use_vllm` (server mode cannot take our token-level multi-turn requests). With
    `bf16_copy`, a trainer on the CPU under bf16 mixed precision generates with a `Bf16Copy` of its model: 1.39x
    faster generation, off by default because it has not been shown to learn as well (bench/RESULTS.md, "The
    quickstart": seed 0 ended at 0.93 in one run and 0.79 in another with it).
    """
    copies = Bf16Copy() if bf16_copy else None

    def rollout_func(prompts: list[Any], trainer: Any) -> dict[str, list]:
        from openrm.generation import HFGenerator, VLLMGenerator

        tokenizer, args = trainer.processing_class, trainer.args
        ids = [prompt_token_ids(tokenizer, p) for p in prompts]
        sampling = replace(cfg.sampling, temperature=args.temperature, top_p=args.top_p, top_k=args.top_k or 0,
                           max_new_tokens=min(cfg.sampling.max_new_tokens, args.max_completion_length))
        run_cfg = replace(cfg, max_completion_tokens=args.max_completion_length, sampling=sampling)
        if trainer.use_vllm:
            if args.vllm_mode != "colocate" or args.vllm_enable_sleep_mode:
                raise ValueError("openrm rollouts drive vLLM token by token: use vllm_mode=colocate without "
                                 "vllm_enable_sleep_mode")
            trajectories = rollout(ids, VLLMGenerator(trainer.vllm_generation.llm), toolbox, tokenizer, run_cfg)
        else:
            from trl.models.utils import unwrap_model_for_generation

            with unwrap_model_for_generation(trainer.model_wrapped, trainer.accelerator,
                                             gather_deepspeed3_params=args.ds3_gather_for_generation,
                                             gradient_checkpointing_kwargs=args.gradient_checkpointing_kwargs) as model:
                if (copies is not None and trainer.accelerator.mixed_precision == "bf16"
                        and next(model.parameters()).device.type == "cpu"):
                    model = copies(model)
                trajectories = rollout(ids, HFGenerator(model, tokenizer), toolbox, tokenizer, run_cfg)
        return {"prompt_ids": [t.prompt_ids for t in trajectories],
                "completion_ids": [t.completion_ids for t in trajectories],
                "logprobs": [t.logprobs for t in trajectories],
                "env_mask": [t.env_mask for t in trajectories],
                "finish_reason": [t.finish_reason for t in trajectories],
                "prompt_sha": [prompt_sha(t.prompt_ids) for t in trajectories]}

    return rollout_func
