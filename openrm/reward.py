"""The judge's training reward: exact match on the verdict plus a gated tool-use term (paper Eq. 3).

    R = R_EM + gate · λ · R_tool,   gate = 1[R_EM > 0] for gated variants, 1 otherwise.

`score(parsed, example, cfg)` is a pure function; `openrm_reward` adapts it to TRL's reward-function
signature. Stdlib only, so it imports instantly and runs anywhere.

R_tool, as we define it (the paper only says "+1 for a correct tool selection, 0 for an incorrect one"):

- It is the *share* of the trajectory's calls that used the example's `gold_tool`, in [0, 1]. A mean
  rather than a sum, so that issuing more calls can never raise the reward; summing is what lets a policy
  farm the tool term (the over-searching failure of the paper's decoupled ablation).
- Calls beyond `max_tool_calls` count as wrong, and so do invalid calls (unparsable, unknown tool):
  excess and garbage both dilute the share.
- No call at all scores 0 when the example has a gold tool: a correct verdict without looking is the
  "lazy searching" the paper observed under R_EM alone, and the tool term exists to pay for looking.
- An example without a gold tool (e.g. a benchmark item no corpus can help with) scores 1 for no call
  and 0 for any call: there the right tool choice is not to search.

`tool_term="per_call"` is the paper-literal alternative: +1 for every call (within `max_tool_calls`) that used the
gold tool, so R_tool lies in [0, max_tool_calls] and more correct calls earn more. Under the ungated `decoupled`
variant that is what lets a policy over-search for reward (the paper's Fig. 3d);
`experiments/learning_proof.py --stage a --tool-term per_call` measures it. The default `share` cannot be farmed
that way.

R_EM is 1 iff the parsed verdict equals the label. With `require_well_formed` (default) a malformed
response earns R_EM = 0 whatever it answered, so a format shortcut can never be rewarded.

`both_orders` (after J1, "Training LLM-as-a-Judge with RL", which pays verdicts that agree across the two orders of
a pair): when a batch holds each pair in both orders (`openrm.dataset.in_both_orders`), a completion's R_EM is
scaled by the share of the *other* order's completions of its pair that are right. A judge that answers by
position is right in one order and wrong in the other, so it earns nothing; the gated tool term follows R_EM.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from openrm import protocol
from openrm.parsing import ParsedResponse, parse_response

logger = logging.getLogger(__name__)


class RewardVariant(NamedTuple):
    lam: float  # weight λ of R_tool
    gated: bool  # only pay R_tool when the verdict is right

    @property
    def max_total(self) -> float:
        """Largest reachable total; divide by it to compare variants on [0, 1] as the paper does."""
        return 1.0 + self.lam


# The paper's main reward and its three ablations (Sec. 5, Fig. 3). The paper writes the decoupled
# range as [-0.5, 1.5]; with R_EM, R_tool in [0, 1] and λ = 0.5 it is [0, 1.5], which is what we use.
VARIANTS: dict[str, RewardVariant] = {
    "composite": RewardVariant(lam=0.5, gated=True),
    "em_only": RewardVariant(lam=0.0, gated=True),
    "unit_weight": RewardVariant(lam=1.0, gated=True),
    "decoupled": RewardVariant(lam=0.5, gated=False),
}


TOOL_TERMS = ("share", "per_call")


@dataclass(frozen=True)
class RewardConfig:
    variant: str = "composite"
    max_tool_calls: int = protocol.MAX_TOOL_CALLS
    require_well_formed: bool = True
    tools: tuple[str, ...] = ("WIKI", "ARXIV")
    tool_term: str = "share"  # one of TOOL_TERMS: "share" of calls on the gold tool, or +1 "per_call" (paper-literal)
    both_orders: bool = False  # R_EM scaled by how often the pair's other order is right (both_orders_gate)

    def __post_init__(self) -> None:
        if self.variant not in VARIANTS:
            raise ValueError(f"unknown reward variant {self.variant!r}; choose from {sorted(VARIANTS)}")
        if self.tool_term not in TOOL_TERMS:
            raise ValueError(f"unknown tool term {self.tool_term!r}; choose from {TOOL_TERMS}")
        if self.max_tool_calls < 0:
            raise ValueError(f"max_tool_calls must be >= 0, got {self.max_tool_calls}")
        if not self.tools:
            raise ValueError("tools must name at least one tool")


class RewardBreakdown(NamedTuple):
    em: float
    tool: float
    total: float
    n_calls: int
    n_correct_calls: int


def tool_score(parsed: ParsedResponse, gold_tool: str | None, max_tool_calls: int,
               tool_term: str = "share") -> tuple[float, int]:
    """R_tool (in [0, 1] for "share", [0, max_tool_calls] for "per_call") and the number of calls that counted as
    correct."""
    calls = parsed.searches
    if gold_tool is None:
        return (1.0 if not calls else 0.0), 0
    if not calls:
        return 0.0, 0
    n_correct = sum(1 for call in calls[:max_tool_calls] if call.tool == gold_tool)
    return (float(n_correct) if tool_term == "per_call" else n_correct / len(calls)), n_correct


def score(parsed: ParsedResponse, example: Mapping[str, Any], cfg: RewardConfig) -> RewardBreakdown:
    """Reward of one parsed completion for one judge example (`label`, `gold_tool` are read)."""
    variant = VARIANTS[cfg.variant]
    label = example["label"]
    gold_tool = example.get("gold_tool")
    honoured = parsed.well_formed or not cfg.require_well_formed
    em = 1.0 if honoured and parsed.answer is not None and parsed.answer == label else 0.0
    tool, n_correct = tool_score(parsed, gold_tool or None, cfg.max_tool_calls, cfg.tool_term)
    return RewardBreakdown(em, tool, total_of(em, tool, variant), len(parsed.searches), n_correct)


def total_of(em: float, tool: float, variant: RewardVariant) -> float:
    """R_EM + gate · λ · R_tool (the gate: R_EM > 0, for gated variants)."""
    gate = (1.0 if em > 0 else 0.0) if variant.gated else 1.0
    return em + gate * variant.lam * tool


def both_orders_gate(em: Sequence[float], pair_ids: Sequence[str], orders: Sequence[str]) -> list[float]:
    """Per completion: the mean R_EM of the completions of the same pair in the other order (a completion's order
    is one of two distinct values). A pair whose other order is not in `em` is an error: the batch layout is wrong,
    and silently paying it would let position-following pass."""
    if not len(em) == len(pair_ids) == len(orders):
        raise ValueError(f"both_orders_gate got {len(em)} rewards, {len(pair_ids)} pair ids, {len(orders)} orders")
    sums: dict[tuple[str, str], list[float]] = {}
    for e, p, o in zip(em, pair_ids, orders, strict=True):
        sums.setdefault((p, o), []).append(e)
    by_pair: dict[str, list[str]] = {}
    for p, o in sums:
        by_pair.setdefault(p, []).append(o)
    gate = []
    for p, o in zip(pair_ids, orders, strict=True):
        others = [x for x in by_pair[p] if x != o]
        if len(others) != 1:
            raise ValueError(f"pair {p!r} has orders {sorted(by_pair[p])} in this batch; both_orders needs each pair "
                             "in exactly two orders in the same batch (openrm.dataset.in_both_orders, unshuffled)")
        values = sums[(p, others[0])]
        gate.append(sum(values) / len(values))
    return gate


def completion_text(completion: Any) -> str:
    """TRL hands completions as strings or as chat messages; return the assistant text."""
    if isinstance(completion, str):
        return completion
    if isinstance(completion, Sequence) and completion and isinstance(completion[-1], Mapping):
        return "".join(str(m.get("content") or "") for m in completion if m.get("role", "assistant") == "assistant")
    return ""


def make_openrm_reward(cfg: RewardConfig, trajectory_log: str | None = None):
    """Build a TRL reward function for `cfg`; the function's `__name__` names its log column.

    `trajectory_log`: a JSONL file that gets one line per scored completion (step, example id, label, prompt
    fingerprint and finish reason when the rollout supplies them, reward parts, completion text), for audits.
    """

    def openrm_reward(completions: Sequence[Any], label: Sequence[str], **kwargs: Any) -> list[float]:
        if "gold_tool" not in kwargs:
            raise ValueError("the dataset has no 'gold_tool' column; add one (null where no corpus can help)")
        gold_tools = kwargs["gold_tool"]
        if len(label) != len(completions) or len(gold_tools) != len(completions):
            raise ValueError(
                f"reward got {len(completions)} completions but {len(label)} labels and {len(gold_tools)} gold tools"
            )
        parsed = [parse_response(completion_text(c), cfg.tools) for c in completions]
        parts = [
            score(p, {"label": y, "gold_tool": g}, cfg) for p, y, g in zip(parsed, label, gold_tools, strict=True)
        ]
        one_order_em = sum(p.em for p in parts) / max(len(parts), 1)
        if cfg.both_orders:
            if "pair_id" not in kwargs or "order" not in kwargs:
                raise ValueError("both_orders needs pair_id and order columns (openrm.dataset.in_both_orders)")
            gate = both_orders_gate([p.em for p in parts], kwargs["pair_id"], kwargs["order"])
            parts = [_scaled(p, g, cfg) for p, g in zip(parts, gate, strict=True)]
        log_metric = kwargs.get("log_metric")
        n = max(len(parts), 1)
        metrics = {
            "openrm/em": sum(p.em for p in parts) / n,
            "openrm/tool": sum(p.tool for p in parts) / n,
            "openrm/calls_per_trajectory": sum(p.n_calls for p in parts) / n,
            "openrm/wrong_tool_call_share": (
                sum(p.n_calls - p.n_correct_calls for p in parts) / max(sum(p.n_calls for p in parts), 1)
            ),
            "openrm/malformed_rate": sum(not p.well_formed for p in parsed) / n,
        }
        if cfg.both_orders:  # openrm/em is then the gated R_EM; this is the verdicts' own accuracy
            metrics["openrm/em_one_order"] = one_order_em
        for reason in ("answer", "eos", "max_turns", "length"):  # from openrm.rollout's TRL rollout_func
            if "finish_reason" in kwargs:
                metrics[f"openrm/finish_{reason}"] = sum(f == reason for f in kwargs["finish_reason"]) / n
        for name, value in metrics.items():
            if log_metric is not None:
                log_metric(name, value)
        logger.debug("openrm reward batch: %s", metrics)
        if trajectory_log is not None:
            _append_log(trajectory_log, completions, parsed, parts, label, gold_tools, kwargs)
        return [p.total for p in parts]

    openrm_reward.__name__ = f"openrm_{cfg.variant}"
    return openrm_reward


def _scaled(part: RewardBreakdown, gate: float, cfg: RewardConfig) -> RewardBreakdown:
    """`part` with R_EM multiplied by `gate` and the total recomputed (the tool term still needs R_EM > 0 when
    gated)."""
    em = part.em * gate
    return part._replace(em=em, total=total_of(em, part.tool, VARIANTS[cfg.variant]))


def _append_log(path: str, completions, parsed, parts, label, gold_tools, kwargs: Mapping[str, Any]) -> None:
    state = kwargs.get("trainer_state")
    step = getattr(state, "global_step", None)
    with open(path, "a", encoding="utf-8") as f:
        for i, (completion, p, part) in enumerate(zip(completions, parsed, parts, strict=True)):
            record = {"step": step, "label": label[i], "gold_tool": gold_tools[i], "answer": p.answer,
                      "well_formed": p.well_formed, **part._asdict(), "completion": completion_text(completion)}
            for key in ("id", "prompt_sha", "finish_reason"):
                if key in kwargs:
                    record[key] = kwargs[key][i]
            f.write(json.dumps(record, ensure_ascii=False) + "\n")


openrm_reward = make_openrm_reward(RewardConfig())
