"""`Judge`: the exported pairwise judge. `compare(question, answer_a, answer_b) -> Verdict`, both orders, batched.

Every pair is judged twice, as given ("AB") and swapped ("BA"); each order's parsed answer is mapped back to the
original labels and votes for the real A (1), against it (0) or, unparsed, neither (0.5). `p_a` is the mean vote, so
a judge that contradicts itself across the two orders predicts a tie instead of a coin flip. A pair whose prompt
would not fit the model's context is cut or judged as a failure first (`openrm.context`), the same for both orders.

    judge = Judge.from_pretrained("runs/judge", retrievers={"wiki": "indexes/wiki", "arxiv": "http://127.0.0.1:8000"})
    judge.compare("Who founded Velmora?", answer_a, answer_b).winner  # "A" | "B" | "tie"
"""

from __future__ import annotations

import dataclasses
import logging
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from openrm import protocol
from openrm.card import JudgeCard
from openrm.context import POLICIES, ContextFit, fit_pair
from openrm.generation import Generator, SamplingParams
from openrm.parsing import parse_response
from openrm.protocol import ToolCall
from openrm.rollout import RolloutConfig, Trajectory, prompt_token_ids, rollout
from openrm.tools import ToolBox

logger = logging.getLogger(__name__)

Label = Literal["A", "B", "tie"]  # "tie" only from a judge run with allow_tie
Winner = Literal["A", "B", "tie"]
Order = Literal["AB", "BA"]
_SWAP = {"A": "B", "B": "A"}


@dataclass
class JudgeRun:
    """One order of one pair. `answer` is in the ORIGINAL labels; `position_answer` is what the model wrote."""

    order: Order  # "AB": the pair as given; "BA": the answers swapped in the prompt
    text: str  # the completion, environment <information> blocks included
    answer: Label | None  # None: no parseable A/B verdict
    position_answer: Label | None
    well_formed: bool  # recorded only: an answer counts even when the response breaks other format rules
    errors: list[str]
    searches: list[ToolCall]
    finish_reason: str | None
    trajectory: Trajectory

    @property
    def vote_a(self) -> float:
        """This order's vote for the real A: 1, 0, or 0.5 for a tie or no answer."""
        return 0.5 if self.answer in (None, protocol.TIE) else float(self.answer == "A")


@dataclass
class Verdict:
    winner: Winner
    p_a: float  # mean of both orders' votes for the real A: 0, 0.25, 0.5, 0.75 or 1
    consistent: bool  # both orders answered and chose the same underlying answer
    orders: tuple[JudgeRun, JudgeRun]  # (AB, BA)
    context: ContextFit | None = None  # what the context policy did to the pair (None: not checked)

    @classmethod
    def from_runs(cls, ab: JudgeRun, ba: JudgeRun, context: ContextFit | None = None) -> Verdict:
        if (ab.order, ba.order) != ("AB", "BA"):
            raise ValueError(f"expected runs in orders (AB, BA), got ({ab.order}, {ba.order})")
        p_a = (ab.vote_a + ba.vote_a) / 2
        winner: Winner = "A" if p_a > 0.5 else "B" if p_a < 0.5 else "tie"
        consistent = ab.answer is not None and ab.answer == ba.answer
        return cls(winner, p_a, consistent, (ab, ba), context)

    def summary(self) -> dict[str, Any]:
        """A JSON-ready record for evaluation logs (no token ids)."""
        return {"winner": self.winner, "p_a": self.p_a, "consistent": self.consistent,
                "context": None if self.context is None else self.context.summary(),
                "orders": [{"order": r.order, "answer": r.answer, "well_formed": r.well_formed,
                            "finish_reason": r.finish_reason, "searches": [list(s) for s in r.searches],
                            "text": r.text} for r in self.orders]}


def make_run(order: Order, trajectory: Trajectory, tokenizer: Any, tool_names: Sequence[str],
             allow_tie: bool = False) -> JudgeRun:
    """Parse one finished trajectory and map its answer back to the original labels (a tie stays a tie)."""
    text = trajectory.text(tokenizer)
    parsed = parse_response(text, tool_names, allow_tie)
    verdicts = (*protocol.VERDICTS, protocol.TIE) if allow_tie else protocol.VERDICTS
    position = parsed.answer if parsed.answer in verdicts else None
    answer = None if position is None else position if order == "AB" or position == protocol.TIE else _SWAP[position]
    return JudgeRun(order, text, answer, position, parsed.well_formed, parsed.errors, parsed.searches,
                    trajectory.finish_reason, trajectory)


def unjudged_run(order: Order, fit: ContextFit) -> JudgeRun:
    """An order never sent to the model because its prompt does not fit: no answer, finish reason "context"."""
    return JudgeRun(order, "", None, None, False, [fit.reason or "prompt too long"], [], "context",
                    Trajectory([], finish_reason="context"))


PADDED_TOKENS_PER_BATCH = 32_768  # a batch's prompts are padded to its longest: cap rows x longest


def length_batches(lengths: Sequence[int], batch_size: int,
                   max_padded_tokens: int = PADDED_TOKENS_PER_BATCH) -> list[list[int]]:
    """Prompt indices in batches of similar length, shortest first: at most `batch_size` prompts, and at most
    `max_padded_tokens` once padded to the batch's longest (a lone prompt longer than that is a batch of its own), so
    one 8,000-token prompt is not padded into a batch of short ones. Every index appears once."""
    order = sorted(range(len(lengths)), key=lambda i: (lengths[i], i))
    batches: list[list[int]] = []
    for i in order:
        if batches and len(batches[-1]) < batch_size and lengths[i] * (len(batches[-1]) + 1) <= max_padded_tokens:
            batches[-1].append(i)
        else:
            batches.append([i])
    return batches


class Judge:
    """Runs both orders of every pair through `openrm.rollout.rollout` and aggregates them into `Verdict`s.

    `toolbox=None` judges without tools (the no-tool prompt). `tools` are the specs the prompt advertises; they
    default to the toolbox's and must name the same tools. `max_tool_calls`, when given, overrides
    `rollout_cfg.max_tool_calls` (one number drives both the prompt and the budget). `batch_size` is the number of
    rollouts (two per pair) per `rollout` call; the generator may split further. `max_context_tokens`: the model's
    context (None: unknown, prompts go unchecked); every prompt is held to it minus `max_completion_tokens` under
    `context_policy` (one of `openrm.context.POLICIES`).
    """

    def __init__(self, generator: Generator, tokenizer: Any, toolbox: ToolBox | None = None,
                 rollout_cfg: RolloutConfig | None = None, tools: Sequence[protocol.ToolSpec] | None = None,
                 max_tool_calls: int | None = None, batch_size: int = 64, prompt_style: str = "full",
                 max_context_tokens: int | None = None, context_policy: str = "truncate", allow_tie: bool = False,
                 show_reference: bool = False):
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        if context_policy not in POLICIES:
            raise ValueError(f"context_policy must be one of {POLICIES}, got {context_policy!r}")
        cfg = rollout_cfg or RolloutConfig(sampling=SamplingParams(temperature=0.0))
        if max_tool_calls is not None:
            cfg = dataclasses.replace(cfg, max_tool_calls=max_tool_calls)
        if toolbox is None:
            tools = ()
        else:
            tools = tuple(toolbox.tools if tools is None else tools)
            if protocol.tool_names(tools) != toolbox.tool_names:
                raise ValueError(f"the prompt's tools {protocol.tool_names(tools)} differ from the toolbox's "
                                 f"{toolbox.tool_names}")
        self.generator, self.tokenizer, self.toolbox = generator, tokenizer, toolbox
        self.rollout_cfg, self.tools, self.batch_size = cfg, tuple(tools), batch_size
        self.prompt_style, self.context_policy = prompt_style, context_policy
        self.allow_tie, self.show_reference = allow_tie, show_reference
        self.prompt_limit = None
        if max_context_tokens is not None:
            self.prompt_limit = max_context_tokens - cfg.max_completion_tokens
            if self.prompt_limit < 1:
                raise ValueError(f"max_completion_tokens ({cfg.max_completion_tokens}) leaves no room for a prompt in "
                                 f"a context of {max_context_tokens} tokens")

    @property
    def tool_names(self) -> tuple[str, ...]:
        return protocol.tool_names(self.tools)

    def prompt_ids(self, question: str, answer_a: str, answer_b: str, evidence: str | None = None,
                   reference: str | None = None) -> list[int]:
        """Token ids of the chat prompt for one order (generation prompt appended). `reference` is shown only when
        the judge runs with `show_reference`."""
        example = {"question": question, "answer_a": answer_a, "answer_b": answer_b}
        messages = protocol.judge_messages(example, self.tools, self.rollout_cfg.max_tool_calls, evidence,
                                           self.prompt_style, reference if self.show_reference else None,
                                           self.allow_tie)
        return prompt_token_ids(self.tokenizer, messages)

    def compare(self, question: str, answer_a: str, answer_b: str) -> Verdict:
        return self.compare_batch([(question, answer_a, answer_b)])[0]

    def compare_batch(self, pairs: Sequence[tuple[str, str, str]], progress: bool = False,
                      evidence: Sequence[str | None] | None = None,
                      references: Sequence[str | None] | None = None) -> list[Verdict]:
        """One `Verdict` per `(question, answer_a, answer_b)`, in order; all 2N rollouts go out as one batch
        (in chunks of `batch_size`). `evidence[i]`, an `<information>` block, goes into pair i's prompt (both
        orders) for judging with passages retrieved beforehand; `references[i]`, a reference answer, too when the
        judge runs with `show_reference`."""
        judged = self._judge(pairs, ("AB", "BA"), progress, evidence, references)
        verdicts = [Verdict.from_runs(*runs, context=fit) for fit, runs in judged]
        if verdicts:
            unparsed = sum(r.answer is None for v in verdicts for r in v.orders)
            logger.info("judged %d pairs: %.0f%% consistent, %d of %d orders without an answer", len(verdicts),
                        100 * sum(v.consistent for v in verdicts) / len(verdicts), unparsed, 2 * len(verdicts))
        return verdicts

    def judge_one_order(self, pairs: Sequence[tuple[str, str, str]], progress: bool = False,
                        evidence: Sequence[str | None] | None = None,
                        references: Sequence[str | None] | None = None) -> list[JudgeRun]:
        """Each `(question, answer_a, answer_b)` judged once, in the order given (one rollout per pair, half the
        cost of `compare_batch`): the single-judgment protocol papers budget for, where the caller draws or
        alternates the order (a tournament's `orders: random`). No debiasing: a position preference goes into
        the verdict."""
        return [runs[0] for _, runs in self._judge(pairs, ("AB",), progress, evidence, references)]

    def _judge(self, pairs: Sequence[tuple[str, str, str]], orders: tuple[Order, ...], progress: bool,
               evidence: Sequence[str | None] | None,
               references: Sequence[str | None] | None = None) -> list[tuple[ContextFit, tuple[JudgeRun, ...]]]:
        """Every pair's context fit and one run per order in `orders` ("AB": as given, "BA": swapped)."""
        pairs = [tuple(p) for p in pairs]
        for i, pair in enumerate(pairs):
            if len(pair) != 3 or not all(isinstance(x, str) for x in pair):
                raise ValueError(f"pair {i} must be (question, answer_a, answer_b) strings, got {pair!r:.200}")
        evidence = [None] * len(pairs) if evidence is None else list(evidence)
        if len(evidence) != len(pairs):
            raise ValueError(f"{len(evidence)} evidence blocks for {len(pairs)} pairs")
        references = [None] * len(pairs) if references is None else list(references)
        if len(references) != len(pairs):
            raise ValueError(f"{len(references)} references for {len(pairs)} pairs")
        fits = [fit_pair(self.tokenizer, lambda q, x, y, info=info, ref=ref: self.prompt_ids(q, x, y, info, ref),
                         *pair, self.prompt_limit, self.context_policy)
                for pair, info, ref in zip(pairs, evidence, references, strict=True)]
        prompts = []
        for fit, info, ref in zip(fits, evidence, references, strict=True):
            if fit.status != "failed":
                prompts += [self.prompt_ids(fit.question, fit.answer_a, fit.answer_b, info, ref) if order == "AB"
                            else self.prompt_ids(fit.question, fit.answer_b, fit.answer_a, info, ref)
                            for order in orders]
        flagged = [f for f in fits if f.status != "fit"]
        if flagged:
            logger.warning("%d of %d pairs exceed the prompt limit of %s tokens: %d cut to fit, %d judged as failures "
                           "(context_policy=%s)", len(flagged), len(fits), self.prompt_limit,
                           sum(f.status == "truncated" for f in flagged), sum(f.status == "failed" for f in flagged),
                           self.context_policy)
        batches = length_batches([len(p) for p in prompts], self.batch_size)
        if progress:
            from tqdm.auto import tqdm

            batches = tqdm(batches, desc="judging", unit="batch")
        done: dict[int, Trajectory] = {}
        for batch in batches:
            got = rollout([prompts[i] for i in batch], self.generator, self.toolbox, self.tokenizer, self.rollout_cfg)
            done.update(zip(batch, got, strict=True))
        trajectories = [done[i] for i in range(len(prompts))]
        judged, sent = [], iter(trajectories)
        for fit in fits:
            if fit.status == "failed":
                runs = tuple(unjudged_run(order, fit) for order in orders)
            else:
                runs = tuple(make_run(order, next(sent), self.tokenizer, self.tool_names, self.allow_tie)
                             for order in orders)
            judged.append((fit, runs))
        return judged

    def close(self) -> None:
        if self.toolbox is not None:
            self.toolbox.close()
        close = getattr(self.generator, "close", None)
        if close is not None:
            close()

    def __enter__(self) -> Judge:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    @classmethod
    def open(cls, folder: str | os.PathLike, card: JudgeCard, batch_size: int = 64,
             retrievers: Mapping[str, Any] | None = None, backend: str = "transformers", **generator: Any) -> Judge:
        """The judge over a resolved model `folder` with its `card` (`JudgeCard.for_judging`): the tokenizer and the
        context limit, the generator (`openrm.generation.open_generator`: `backend` and its `generator` settings),
        then the tools over `retrievers` (corpus → index folder, `http(s)://` server URL or an open `Retriever`;
        None judges without tools)."""
        from transformers import AutoTokenizer

        from openrm.generation import open_generator

        tokenizer = AutoTokenizer.from_pretrained(folder)
        context = card.max_context_tokens if backend == "vllm" else _context_length(folder, tokenizer, card)
        made = open_generator(folder, tokenizer, backend, batch_size=batch_size, **generator)
        if context is None and backend == "vllm":
            context = made.max_model_len
        specs = card.tool_specs()
        toolbox = None
        if retrievers:
            toolbox = ToolBox.from_locations(retrievers, specs, card.topk)
        elif specs:
            logger.info("no retrievers given: judging without tools (the no-tool prompt)")
        return cls(made, tokenizer, toolbox, card.rollout_config(), batch_size=batch_size,
                   prompt_style=card.prompt_style, max_context_tokens=context, context_policy=card.context_policy,
                   allow_tie=card.allow_tie, show_reference=card.show_reference)

    @classmethod
    def from_pretrained(cls, path: str | os.PathLike, retrievers: Mapping[str, Any] | None = None,
                        device: str = "cpu", dtype: Any = None, **options: Any) -> Judge:
        """A local HF checkpoint (an exported judge folder, or a packaged model's short name) on `device`, generating
        with transformers. `options`: any run setting of `JudgeCard` (overrides the folder's card) and
        `batch_size`. `dtype` None keeps the checkpoint's dtype."""
        from openrm.models import resolve

        folder = resolve(str(path))
        card, batch_size = JudgeCard.for_judging(folder, options)
        return cls.open(folder, card, batch_size, retrievers, device=device, dtype=dtype)

    @classmethod
    def from_server(cls, base_url: str, model: str, tokenizer_path: str | os.PathLike,
                    retrievers: Mapping[str, Any] | None = None, api_key: str | None = None, concurrency: int = 8,
                    **options: Any) -> Judge:
        """A judge served by vLLM's OpenAI-compatible API (`base_url` like `http://host:8000/v1`). Token ids are
        exchanged, so the tokenizer is read locally from `tokenizer_path` (the exported folder; its card applies).
        `concurrency`: requests of `batch_size` prompts in flight at once."""
        from openrm.models import resolve

        folder = resolve(str(tokenizer_path))
        card, batch_size = JudgeCard.for_judging(folder, options)
        return cls.open(folder, card, batch_size, retrievers, "server", server=base_url, served_model=model,
                        api_key=api_key, concurrency=concurrency)

    @classmethod
    def from_vllm(cls, path: str | os.PathLike, retrievers: Mapping[str, Any] | None = None,
                  llm_kwargs: Mapping[str, Any] | None = None, **options: Any) -> Judge:
        """An in-process `vllm.LLM` over the exported folder. UNTESTED here (vLLM needs a GPU machine)."""
        from openrm.models import resolve

        folder = resolve(str(path))
        options.setdefault("batch_size", 1024)  # vLLM schedules its own batches; give it many rows at once
        card, batch_size = JudgeCard.for_judging(folder, options)
        return cls.open(folder, card, batch_size, retrievers, "vllm", llm_kwargs=llm_kwargs)


# transformers' stand-in for "no limit" in model_max_length is 1e30; no real model has a context near this
_NO_LIMIT = 10 ** 9


def _context_length(path: str | os.PathLike, tokenizer: Any, card: JudgeCard) -> int | None:
    """The judge's context in tokens: the card's `max_context_tokens` (a server may serve less than the model
    holds), else the model config's `max_position_embeddings`, else the tokenizer's `model_max_length`."""
    if card.max_context_tokens is not None:
        return card.max_context_tokens
    from transformers import AutoConfig

    try:
        config = AutoConfig.from_pretrained(path)
    except (OSError, ValueError):  # a tokenizer-only folder: fall back to the tokenizer
        config = None
    found = getattr(config, "max_position_embeddings", None)
    if not found:
        found = getattr(tokenizer, "model_max_length", None)
    if not found or found >= _NO_LIMIT:
        logger.warning("%s: the model's context length is unknown; prompts are not checked against it (set "
                       "max_context_tokens)", path)
        return None
    return int(found)
