"""Gold judging trajectories for any pair dataset (the records of `data_synthesis.build_dataset` or
`data_synthesis.wiki_pairs`), for `train/sft_warmup.py`: search the question on the gold tool's corpus, read the
evidence exactly as a rollout would show it, write the words of the evidence that only the right answer repeats,
answer.

    python -m train.gold_trajectories --dataset runs/wiki-pairs --retrievers wiki=runs/wiki-vital/index-bm25 \
        arxiv=runs/wiki-vital/index-bm25 --tokenizer smollm2-135m-instruct --out runs/real-judge/sft_gold.jsonl

A trajectory is `<think>QUERY</think> <search>TOOL("QUERY")</search> <information>…</information> <think>SPAN
LETTER</think> <answer>LETTER</answer>`: QUERY is the question's first content words; SPAN is the longest run of
words (up to `--span-words`) found in the retrieved passages and in the labelled answer but not in the other one.
With `--trace verdict` the second think holds the letter alone: the decision is taken right after the evidence, with
nothing copied first (a span the model cannot find at run time carries no letter). With `--trace retrieved` the
prompt is the one `eval.run --retrieve_then_judge` builds (the no-tool system prompt; the question searched on every
corpus, the passages before the question and answers, cut to the same budget) and the completion is the letter alone:
every answer token then comes after the passages it is checked against. With `--trace quotes` the second think
quotes where the two answers part, `[A] …` and `[B] …` (`openrm.evidence.differing_quotes`: a few words each, copied
from the answers), and the letter comes only in the answer: the quotes are written after the evidence, so each quoted
word can be checked against the passages above it, as an answer's words are in the retrieve-then-judge layout, and
the letter follows from the quotes. With `--trace restate` the second think copies both answers whole, `[A] …` and
`[B] …`, as the prompt shows them, and the letter comes only in the answer: the same order as retrieve-then-judge (the
evidence, then every answer word) for a judge that searches, with nothing to locate first, only text to copy. The
`<information>` block is cut to `--information-tokens` the way
`openrm.rollout.information_ids` cuts it live. A pair whose evidence does not tell the answers apart (no such span)
gets no trajectory: it is counted under its reason, as are bad records, so the printed stats say what the gold set
covers.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from openrm import protocol  # noqa: E402
from openrm.evidence import WORD, Evidence, differing_quotes, evidence_span, query_of  # noqa: E402,F401 (re-exported)
from plumbing import atomic

logger = logging.getLogger("openrm.gold_trajectories")

@dataclass
class GoldStats:
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


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", required=True, help="pair dataset: a DatasetDict folder or a JSONL file")
    parser.add_argument("--split", default="train")
    parser.add_argument("--retrievers", nargs="+", required=True, help="CORPUS=LOCATION, one per corpus")
    parser.add_argument("--tools", default="WIKI=wiki,ARXIV=arxiv", help="TOOL=corpus,... as the judge's config")
    parser.add_argument("--tokenizer", default="smollm2-135m-instruct", help="folder or packaged short name")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--information-tokens", type=int, default=128)
    parser.add_argument("--style", default="compact", choices=protocol.PROMPT_STYLES)
    parser.add_argument("--query-words", type=int, default=10)
    parser.add_argument("--span-words", type=int, default=6)
    parser.add_argument("--limit", type=int, default=0, help="first N pairs only (0: all)")
    parser.add_argument("--topk", type=int, default=1, help="passages per search, as the judge's config")
    parser.add_argument("--trace", default="span", choices=TRACES,
                        help="second think: the evidence span then the letter; the letter alone; (retrieved) the "
                             "evidence in the prompt; where the answers part, quoted; or both answers restated")
    parser.add_argument("--both-orders", action="store_true",
                        help="each pair as given and swapped, side by side (openrm.dataset.in_both_orders)")
    args = parser.parse_args(argv)
    from transformers import AutoTokenizer

    from eval.loaders import load_benchmark
    from openrm.models import resolve
    from openrm.tools import ToolBox

    try:
        locations = dict(r.split("=", 1) for r in args.retrievers)
        tools = protocol.tools_from_mapping(dict(t.split("=", 1) for t in args.tools.split(",")))
    except ValueError:
        parser.error("--retrievers takes CORPUS=LOCATION and --tools TOOL=corpus,...")
    examples = load_benchmark("in-domain", args.dataset, args.split, limit=args.limit or None).examples
    if args.both_orders:
        from openrm.dataset import in_both_orders_rows

        examples = in_both_orders_rows(examples, seed=0)
    tokenizer = AutoTokenizer.from_pretrained(resolve(args.tokenizer))
    toolbox = ToolBox.from_locations(locations, tools, topk=args.topk)
    stats = GoldStats()
    try:
        records = gold_records(examples, toolbox, tokenizer, args.information_tokens, args.style, args.query_words,
                               args.span_words, stats, args.trace)
    finally:
        toolbox.close()
    atomic.write_jsonl(args.out, records)
    summary = stats.summary()
    args.out.with_suffix(".stats.json").write_text(json.dumps(summary, indent=1) + "\n", encoding="utf-8")
    print(json.dumps(summary))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
