"""Gold judging trajectories, the records `train/gold_trajectories.py` writes for `train/sft_warmup.py`: the question
searched on the gold tool's corpus, the evidence as a rollout shows it, then (by `trace`) the words only the right
answer shares with it, the letter alone, the answers' quotes or restatements, and the answer.

    records = gold_records(examples, toolbox, tokenizer, information_tokens=128, trace="quotes", stats=GoldStats())
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

from openrm import protocol
from openrm.evidence import WORD, Evidence, differing_quotes, evidence_span, query_of


@dataclass
class GoldStats:
    """What a gold set covers: the pairs kept, the rest counted by the reason they were skipped, and the kept
    spans' lengths in words."""

    kept: int = 0
    skipped: Counter = field(default_factory=Counter)
    span_words: Counter = field(default_factory=Counter)

    def summary(self) -> dict:
        total = self.kept + sum(self.skipped.values())
        return {"pairs": total, "kept": self.kept, "kept_share": self.kept / total if total else None,
                "skipped": dict(self.skipped.most_common()), "span_words": dict(sorted(self.span_words.items()))}


TRACES = ("span", "verdict", "retrieved", "quotes", "restate")


def trajectory(tool: str, query: str, information: str, span: str, label: str, letter_in_think: bool = True) -> str:
    """The gold completion; an empty `span` leaves the letter alone in the second think (`--trace verdict`);
    `letter_in_think` False: the second think holds the span alone and the letter comes only in the answer."""
    t, s, a = protocol.THINK, protocol.SEARCH, protocol.ANSWER
    decision = (f"{span} {label}" if span else label) if letter_in_think else span
    return (f"{protocol.open_tag(t)}{query}{protocol.close_tag(t)}\n"
            f"{protocol.open_tag(s)}{protocol.format_call(tool, query)}{protocol.close_tag(s)}{information}"
            f"{protocol.open_tag(t)}{decision}{protocol.close_tag(t)}\n"
            f"{protocol.open_tag(a)}{label}{protocol.close_tag(a)}")


def verdict_only(label: str) -> str:
    """The gold completion of a judge that was shown the evidence in its prompt (`--trace retrieved`)."""
    t, a = protocol.THINK, protocol.ANSWER
    return (f"{protocol.open_tag(t)}{label}{protocol.close_tag(t)}\n"
            f"{protocol.open_tag(a)}{label}{protocol.close_tag(a)}")


def gold_records(examples: Iterable[Mapping], toolbox, tokenizer, information_tokens: int = 128,
                 style: str = "compact", query_words: int = 10, span_words: int = 6,
                 stats: GoldStats | None = None, trace: str = "span",
                 rewrite: Callable[[Mapping], Mapping] | None = None) -> list[dict]:
    """SFT records ({prompt, completion}) for the examples whose evidence decides them (a span the evidence shares
    with the right answer only), in the examples' order; the rest counted in `stats` by reason. `trace`: what the
    second think holds (one of TRACES). `rewrite`: applied to each kept example before its record is written, its
    label kept (e.g. `data_synthesis.hostile_rivals.HostileRivals`: the evidence decides the pair as built, and the
    record sets the right answer against a hostile rival)."""
    if trace not in TRACES:
        raise ValueError(f"trace must be one of {TRACES}, got {trace!r}")
    from openrm.rollout import information_ids
    from openrm.tools import ToolResult

    stats = stats if stats is not None else GoldStats()
    by_corpus = {spec.name: spec for spec in toolbox.tools}
    rows, calls = [], []
    for ex in examples:
        label, tool = ex.get("label"), ex.get("gold_tool") or protocol.GOLD_TOOL.get(str(ex.get("domain")))
        if label not in ("A", "B"):
            stats.skipped["label not A or B"] += 1
            continue
        if tool not in by_corpus:
            stats.skipped["no tool for its domain"] += 1
            continue
        if not all(isinstance(ex.get(k), str) and ex[k].strip() for k in ("question", "answer_a", "answer_b")):
            stats.skipped["empty question or answer"] += 1
            continue
        query = query_of(ex["question"], query_words)
        if not query:
            stats.skipped["no words in the question"] += 1
            continue
        rows.append((ex, tool, query))
        calls.append(protocol.ToolCall(tool, query))
    records = []
    # retrieve-then-judge shows what `eval.run --retrieve_then_judge` shows: the question searched on every corpus
    blocks = (Evidence(toolbox, tokenizer, information_tokens)([ex["question"] for ex, _, _ in rows])
              if trace == "retrieved" and rows else [None] * len(rows))
    for (ex, tool, query), result, block in zip(rows, toolbox.run(calls) if calls else [], blocks, strict=True):
        if result.error or not result.passages:
            stats.skipped["search found nothing"] += 1
            continue
        shown = block or tokenizer.decode(information_ids(tokenizer, result, information_tokens))
        right, wrong = (ex["answer_a"], ex["answer_b"]) if ex["label"] == "A" else (ex["answer_b"], ex["answer_a"])
        body = shown.split(protocol.open_tag(protocol.INFORMATION), 1)[-1]
        span = evidence_span(body, right, wrong, span_words)
        if span is None:
            stats.skipped["evidence does not tell the answers apart"] += 1
            continue
        if rewrite is not None:
            ex = rewrite(ex)
        quotes = differing_quotes(ex["answer_a"], ex["answer_b"]) if trace == "quotes" else None
        if trace == "quotes" and (quotes is None or not all(quotes)):
            stats.skipped["the answers hold the same words"] += 1
            continue
        stats.kept += 1
        stats.span_words[len(WORD.findall(span))] += 1
        if trace == "retrieved":  # retrieve-then-judge: the same evidence in the prompt, before the answers
            records.append({"prompt": protocol.judge_messages(ex, (), evidence=shown, style=style),
                            "completion": [{"role": "assistant", "content": verdict_only(ex["label"])}]})
            continue
        if trace == "restate":  # both answers whole, after the evidence
            quotes = (ex["answer_a"].strip(), ex["answer_b"].strip())
        if quotes is not None:  # candidate words, defused as the prompt shows them
            span = " ".join(f"[{letter}] {protocol.neutralize_tags(quote)}"
                            for letter, quote in zip("AB", quotes, strict=True))
        result = ToolResult(result.call, result.passages, None, shown)
        records.append({"prompt": protocol.judge_messages(ex, toolbox.tools, style=style),
                        "completion": [{"role": "assistant",
                                        "content": trajectory(tool, query, result.rendered,
                                                              span if trace in ("span", "quotes", "restate") else "",
                                                              ex["label"], trace not in ("quotes", "restate"))}]})
    return records
