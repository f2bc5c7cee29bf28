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
from collections.abc import Sequence
from pathlib import Path

from openrm import protocol
from plumbing import atomic
from train.trajectories import TRACES, GoldStats, gold_records


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
