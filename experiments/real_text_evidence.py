"""What a search shows for real-text judge pairs, over a grid of passages per search and evidence budgets: the share
of test pairs whose shown evidence holds words that separate the answers (the ceiling of any judge that searches)
and what the lexical reference (the answer sharing more of its words with that evidence wins) scores, by kind and
by length.

    .venv/bin/python -m experiments.real_text_evidence --dataset runs/real-judge/data/dataset --topk 1 2 3 \
        --tokens 128 192 256 --out runs/real-evidence.json

Searches run as a gold trajectory's do (the question's content words, on the pair's gold tool) over the bm25 index
of the packaged lead sections; no model is loaded beyond its tokenizer, so the grid takes seconds.
"""

from __future__ import annotations

import argparse
from collections import defaultdict
from pathlib import Path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", type=Path, required=True, help="a judge dataset folder (its test split)")
    parser.add_argument("--index", type=Path, default=None, help="default: bm25 over the packaged lead sections")
    parser.add_argument("--tokenizer", default="smollm2-135m-instruct")
    parser.add_argument("--topk", type=int, nargs="+", default=[1, 2, 3])
    parser.add_argument("--tokens", type=int, nargs="+", default=[128, 192, 256])
    parser.add_argument("--out", type=Path, default=None, help="write the grid as JSON here too")
    args = parser.parse_args()
    from transformers import AutoTokenizer

    from eval import loaders
    from eval.breakdown import kind_of, length_of
    from openrm import protocol
    from openrm.evidence import lexical_verdict, separates, shown_evidence
    from openrm.models import resolve
    from openrm.tools import ToolBox
    from plumbing import atomic
    from retrieval.wikipedia import packaged_index

    index = str(args.index or packaged_index(Path("runs/wiki-vital")))
    test = loaders.load_benchmark("in-domain", args.dataset, "test").examples
    tokenizer = AutoTokenizer.from_pretrained(resolve(args.tokenizer))
    tools = protocol.tools_from_mapping({"WIKI": "wiki", "ARXIV": "arxiv"})

    def groups(e: dict) -> list[str]:
        return ["all", kind_of(e), length_of(e)]

    grid = []
    lines = ["| passages | tokens | measure | all | by kind and length |",
             "|---|---|---|---|---|"]
    for topk in args.topk:
        toolbox = ToolBox.from_locations({"wiki": index, "arxiv": index}, tools, topk=topk)
        try:
            for tokens in args.tokens:
                shown = shown_evidence(test, toolbox, tokenizer, tokens)
                cover, lexical = defaultdict(list), defaultdict(list)
                for e in test:
                    for g in groups(e):
                        cover[g].append(separates(shown[e["id"]], e))
                        lexical[g].append(lexical_verdict(shown[e["id"]], e) == e["label"])
                cell = {"topk": topk, "tokens": tokens, "n": len(test),
                        "coverage": {g: sum(v) / len(v) for g, v in cover.items()},
                        "lexical": {g: sum(v) / len(v) for g, v in lexical.items()}}
                grid.append(cell)
                for measure in ("coverage", "lexical"):
                    rest = ", ".join(f"{g} {v:.2f}" for g, v in sorted(cell[measure].items()) if g != "all")
                    lines.append(f"| {topk} | {tokens} | {measure} | {cell[measure]['all']:.2f} | {rest} |")
        finally:
            toolbox.close()
    if args.out:
        atomic.write_json(args.out, grid, indent=1)
    print("\n".join(lines))


if __name__ == "__main__":
    main()
