"""Tool-centred advantages: after GRPO's group baselines, each tool's completions have their advantages centred to a
mean of zero over the step, so a step cannot push one tool up for every question alike.

Why: a judge's choice between corpora has a part every question shares (a prior for WIKI over ARXIV) and a part
that depends on the question, which is what the reward pays for. With a wiki and a science prompt in a step, the
right tool gains in each group; the shared part's gradient cancels only in expectation, and in a small step its
noise moves the shared prior much more than the question-dependent part moves (bench/RESULTS.md, Stage A: the
prior drifts to one tool for every question, the groups stop sampling both tools, and the signal dies). With each
tool's advantages summing to zero over the step, the gradient of a logit every question shares,
sum_i A_i (1[tool_i = WIKI] - p), is zero, while a wiki question's WIKI completions can still rise against a
science question's. It is a baseline that depends on the action, so it biases the gradient on purpose: it removes
the shared direction, whose expected gradient is zero when the step holds the domains evenly. Completions that do
not search keep their advantage. Each process centres its own completions (one process on a CPU: the whole step).

It is for teaching the choice between tools once the judge searches (Stage A), not for teaching it to search:
centring the searching completions' advantages also removes what they gain, as a whole, over those that answer
at once, which is the signal Stage C learns from.

    trainer = ToolBalancedTrainer(model=..., reward_funcs=..., tools=("WIKI", "ARXIV"), ...)

`train/judge_trainer.py --tool_balance true` builds it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import torch

from openrm.parsing import parse_response
from train.shared_prompt import SharedPromptGRPOTrainer


def first_tools(texts: Iterable[str], tools: Sequence[str]) -> list[str | None]:
    """The tool of each completion's first search, None where it does not search (or names no known tool)."""
    out = []
    for text in texts:
        searches = parse_response(text, tools).searches
        out.append(searches[0].tool if searches else None)
    return out


def tool_centred(advantages: torch.Tensor, tools: Sequence[str | None]) -> tuple[torch.Tensor, dict[str, float]]:
    """`advantages` [B] with each tool's completions shifted by minus their mean, and the shift per tool. A tool's
    completions then sum to zero; completions whose tool is None keep theirs."""
    if advantages.dim() != 1 or len(tools) != advantages.shape[0]:
        raise ValueError(f"one tool per completion: {len(tools)} tools for advantages of shape "
                         f"{tuple(advantages.shape)}")
    centred = advantages.clone()
    shifts = {}
    for tool in sorted({t for t in tools if t is not None}):
        rows = torch.tensor([t == tool for t in tools], device=advantages.device)
        shifts[tool] = float(advantages[rows].mean())
        centred[rows] -= shifts[tool]
    return centred, shifts


class ToolBalancedTrainer(SharedPromptGRPOTrainer):
    """GRPOTrainer whose advantages are tool-centred (`tool_centred`) each generation batch; logs the mean absolute
    shift as `openrm/tool_centring`."""

    def __init__(self, *args, tools: Sequence[str], **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.balanced_tools = tuple(tools)

    def _generate_and_score_completions(self, inputs):
        output = super()._generate_and_score_completions(inputs)
        texts = self.processing_class.batch_decode(output["completion_ids"] * output["completion_mask"],
                                                   skip_special_tokens=True)
        output["advantages"], shifts = tool_centred(output["advantages"], first_tools(texts, self.balanced_tools))
        mode = "train" if self.model.training else "eval"
        self._metrics[mode]["openrm/tool_centring"].append(
            sum(abs(s) for s in shifts.values()) / len(shifts) if shifts else 0.0)
        return output
