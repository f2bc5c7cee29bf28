"""A teacher-forced verdict probe: how a judge decides held-out pairs when its trajectory up to the verdict is the
gold one (the question's search, the evidence that search shows), read off one forward pass per order instead of a
generated rollout. It is the learning curve of an SFT warm-up (`VerdictProbe`, a TrainerCallback): the verdict-trace
gold trajectory ends `<think>X</think><answer>X</answer>`, and the probe compares the model's probability of `A`
and of `B` at the first letter. A pair counts when both orders put the right letter first, as in `eval.run`'s both-
order accuracy; "same letter" counts the pairs whose two orders prefer the same position.

    items = probe_items(test_examples_in_both_orders, toolbox, tokenizer, information_tokens=192)
    summary(items, right_letter_margin(model, items))

It measures the decision only: a judge that would search badly or write a broken protocol at run time can still
score here, so the generated table (`eval.run`) stays the claim and this is the cheap curve beside it.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

logger = logging.getLogger("openrm.verdict_probe")


@dataclass(frozen=True)
class ProbeItem:
    pair_id: str
    order: str
    label: str  # the right letter in this order
    group: dict  # e.g. {"kind": "numbers", "length": "short"}: the summary's breakdowns
    input_ids: list[int]  # up to and including the token before the verdict letter
    letter_ids: tuple[int, int]  # the ids of "A" and "B"


def probe_items(examples: Sequence[Mapping[str, Any]], toolbox: Any, tokenizer: Any, information_tokens: int,
                style: str = "compact", groups: Mapping[str, Callable[[Mapping], str]] | None = None,
                trace: str = "verdict") -> list[ProbeItem]:
    """One item per example whose gold trajectory exists (the search found evidence that separates the answers:
    `train.trajectories.gold_records` with `trace` "verdict", "retrieved", "quotes" or "restate": the letter
    then follows the gold quotes or restated answers); `examples` carry `pair_id` and
    `order` (`openrm.dataset.in_both_orders_rows`), and a pair whose two orders are not both kept is dropped."""
    import torch

    from train.trajectories import TRACES

    if trace not in TRACES or trace == "span":
        raise ValueError(f"the probe reads the first verdict letter after gold text: trace 'verdict', 'retrieved', "
                         f"'quotes' or 'restate', not {trace!r}")
    from openrm.rollout import tokenize_record
    from train.plain_head import verdict_positions
    from train.trajectories import gold_records

    letters = [tokenizer.encode(t, add_special_tokens=False) for t in ("A", "B")]
    marks = [tokenizer.encode(t, add_special_tokens=False) for t in (">", "</")]
    if any(len(x) != 1 for x in letters + marks):
        raise ValueError("the probe needs 'A', 'B', '>' and '</' to be one token each")
    letter_ids = (letters[0][0], letters[1][0])
    items = []
    for ex in examples:
        record = gold_records([ex], toolbox, tokenizer, information_tokens, style, trace=trace)
        if not record:
            continue
        ids = tokenize_record(tokenizer, record[0]["prompt"], record[0]["completion"][0]["content"])
        labels = torch.tensor([[t if m else -100 for t, m in zip(ids["input_ids"], ids["completion_mask"],
                                                                         strict=True)]])
        at = verdict_positions(labels, (marks[0][0], marks[1][0]), letter_ids)[0].nonzero()
        if not len(at):
            raise ValueError(f"{ex.get('id')}: no verdict letter in its gold trajectory")
        position = int(at[0])
        items.append(ProbeItem(str(ex["pair_id"]), str(ex["order"]), str(ex["label"]),
                               {k: f(ex) for k, f in (groups or {}).items()}, ids["input_ids"][:position],
                               letter_ids))
    orders: dict[str, int] = {}
    for item in items:
        orders[item.pair_id] = orders.get(item.pair_id, 0) + 1
    return [item for item in items if orders[item.pair_id] == 2]


def right_letter_margin(model: Any, items: Sequence[ProbeItem], batch: int = 8, bf16: bool = False) -> list[float]:
    """Per item: log p(right letter) - log p(wrong letter) at the verdict (> 0: the judge picks the right answer;
    0, a tie, is not a pick). `bf16`: the backbone under bf16 autocast, the output layer in the model's dtype.
    Right-padded batches sorted by length; the model is left in the mode it was in."""
    import torch

    device = next(model.parameters()).device
    was_training = model.training
    model.eval()
    margins = [0.0] * len(items)
    order = sorted(range(len(items)), key=lambda i: len(items[i].input_ids))
    pad = 0
    try:
        with torch.no_grad(), torch.autocast(device.type, dtype=torch.bfloat16, enabled=bf16):
            for start in range(0, len(order), batch):
                chunk = order[start:start + batch]
                width = max(len(items[i].input_ids) for i in chunk)
                ids = torch.full((len(chunk), width), pad, dtype=torch.long)
                mask = torch.zeros((len(chunk), width), dtype=torch.long)
                for row, i in enumerate(chunk):
                    n = len(items[i].input_ids)
                    ids[row, :n] = torch.tensor(items[i].input_ids)
                    mask[row, :n] = 1
                backbone = getattr(model, model.base_model_prefix)
                hidden = backbone(input_ids=ids.to(device), attention_mask=mask.to(device)).last_hidden_state
                last = mask.sum(1).to(device) - 1
                # the two letters' logits in float32: bf16 logits of ~20 are spaced 0.125 apart, so a small margin
                # would read as a tie (counted wrong in both orders)
                with torch.autocast(device.type, enabled=False):
                    head = model.get_output_embeddings()
                    at = hidden[torch.arange(len(chunk), device=device), last].to(head.weight.dtype)
                    logits = head(at).float()
                for row, i in enumerate(chunk):
                    a, b = (logits[row, j].item() for j in items[i].letter_ids)
                    margins[i] = a - b if items[i].label == "A" else b - a
    finally:
        model.train(was_training)
    return margins


def summary(items: Sequence[ProbeItem], margins: Sequence[float]) -> dict:
    """Both-order accuracy (a pair counts when both orders have a positive margin), the single-order accuracy, the
    same-letter rate, and the both-order accuracy per value of each group key."""
    pairs: dict[str, list[tuple[ProbeItem, float]]] = {}
    for item, margin in zip(items, margins, strict=True):
        pairs.setdefault(item.pair_id, []).append((item, margin))

    def picks(item: ProbeItem, margin: float) -> str:
        return item.label if margin > 0 else ("B" if item.label == "A" else "A")

    both = {p: all(m > 0 for _, m in v) for p, v in pairs.items()}
    same = {p: picks(*v[0]) == picks(*v[1]) for p, v in pairs.items()}
    out: dict[str, Any] = {"pairs": len(pairs), "both_orders": sum(both.values()) / max(1, len(pairs)),
                           "single_order": sum(m > 0 for m in margins) / max(1, len(margins)),
                           "same_letter": sum(same.values()) / max(1, len(pairs))}
    for key in sorted({k for item in items for k in item.group}):
        groups: dict[str, list[bool]] = {}
        for p, v in pairs.items():
            groups.setdefault(v[0][0].group.get(key, "-"), []).append(both[p])
        out[f"by_{key}"] = {g: round(sum(h) / len(h), 3) for g, h in sorted(groups.items())}
    return out


def probe_model(model: str, items: Sequence[ProbeItem], bf16: bool = False) -> dict:
    """The probe's `summary` for one model (a folder or a packaged short name) on `items`."""
    from transformers import AutoModelForCausalLM

    from openrm.models import resolve

    judge = AutoModelForCausalLM.from_pretrained(resolve(model), dtype="float32")
    return summary(items, right_letter_margin(judge, items, bf16=bf16))


def verdict_probe(items: Sequence[ProbeItem], every: int, out: Path, bf16: bool = False):
    """A TrainerCallback that probes `items` every `every` optimizer steps and at the end, appending each summary
    (with the step and the last logged training loss) to `out` (JSONL) and to the log."""
    from transformers import TrainerCallback

    class VerdictProbe(TrainerCallback):
        last_loss: float | None = None

        def on_log(self, args, state, control, logs=None, **kwargs):
            if logs and "loss" in logs:
                self.last_loss = logs["loss"]

        def _probe(self, state, model) -> None:
            started = time.perf_counter()
            row = {"step": state.global_step, "loss": self.last_loss,
                   **summary(items, right_letter_margin(model, items, bf16=bf16)),
                   "seconds": round(time.perf_counter() - started, 1)}
            with out.open("a", encoding="utf-8") as f:
                f.write(json.dumps(row) + "\n")
            logger.info("verdict probe at step %d: both orders %.2f, same letter %.2f, single order %.2f (%d pairs)",
                        row["step"], row["both_orders"], row["same_letter"], row["single_order"], row["pairs"])

        def on_step_end(self, args, state, control, model=None, **kwargs):
            if every and state.global_step % every == 0 and state.global_step < state.max_steps:
                self._probe(state, model)

        def on_train_end(self, args, state, control, model=None, **kwargs):
            self._probe(state, model)

    return VerdictProbe()
