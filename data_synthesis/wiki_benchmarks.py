"""Benchmark-shaped pair files from real Wikipedia text (`data_synthesis.wiki_articles`' pairs), for running
`eval.run` end to end on real-length candidates where the benchmarks' own files are not at hand (no hub here); written
by `python -m data_synthesis.wiki_pairs`. The same pairs in the shape of each benchmark's real file (RewardBench,
PandaLM, LLMBar, JudgeBench, Auto-J, MT-Bench human judgments), one disjoint set of articles per file, the chosen
answer's position drawn by a coin seeded from (seed, file, row), so `eval.loaders` reads them as it reads the real
files; long pairs go in the RewardBench file only.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Iterator
from pathlib import Path

from data_synthesis.wiki_articles import WikiPair, make_pairs, question, read_articles
from plumbing import atomic


def _first(rng: random.Random) -> bool:
    return rng.random() < 0.5


def _rewardbench(pairs: list[WikiPair], rng: random.Random) -> Iterator[dict]:
    for k, p in enumerate(pairs):  # the loader places chosen by its own seeded coin
        yield {"prompt": question(p), "chosen": p.chosen, "chosen_model": "wikipedia", "rejected": p.rejected,
               "rejected_model": f"wiki-{p.kind}", "subset": f"wiki-{p.kind}", "id": k}


def _pandalm(pairs: list[WikiPair], rng: random.Random) -> Iterator[dict]:
    for k, p in enumerate(pairs):
        first = _first(rng)
        vote = 1 if first else 2
        a, b = (p.chosen, p.rejected) if first else (p.rejected, p.chosen)
        yield {"idx": k, "motivation_app": "Wikipedia", "instruction": "Write a short encyclopedia entry about the "
               "subject below.", "input": p.title, "response1": a, "response2": b, "annotator1": vote,
               "annotator2": vote, "annotator3": vote}


def _llmbar(pairs: list[WikiPair], rng: random.Random) -> Iterator[dict]:
    for p in pairs:
        first = _first(rng)
        a, b = (p.chosen, p.rejected) if first else (p.rejected, p.chosen)
        yield {"input": question(p), "output_1": a, "output_2": b, "label": 1 if first else 2}


def _judgebench(pairs: list[WikiPair], rng: random.Random) -> Iterator[dict]:
    for k, p in enumerate(pairs):
        first = _first(rng)
        a, b = (p.chosen, p.rejected) if first else (p.rejected, p.chosen)
        yield {"pair_id": f"wiki-{k}", "original_id": p.title, "source": f"wiki-{p.kind}", "question": question(p),
               "response_model": "wikipedia", "response_A": a, "response_B": b,
               "label": "A>B" if first else "B>A"}


def _autoj(pairs: list[WikiPair], rng: random.Random) -> Iterator[dict]:
    for p in pairs:
        first = _first(rng)
        a, b = (p.chosen, p.rejected) if first else (p.rejected, p.chosen)
        yield {"scenario": f"wiki_{p.kind}", "label": 0 if first else 1, "prompt": question(p), "response 1": a,
               "response 2": b}


def _mtbench(pairs: list[WikiPair], rng: random.Random) -> Iterator[dict]:
    for k, p in enumerate(pairs):
        first = _first(rng)
        a, b = (p.chosen, p.rejected) if first else (p.rejected, p.chosen)
        conv = [[{"role": "user", "content": question(p)}, {"role": "assistant", "content": x}] for x in (a, b)]
        yield {"question_id": 1000 + k, "model_a": "wikipedia" if first else f"wiki-{p.kind}",
               "model_b": f"wiki-{p.kind}" if first else "wikipedia", "winner": "model_a" if first else "model_b",
               "judge": "constructed", "turn": 1, "conversation_a": conv[0], "conversation_b": conv[1]}


# benchmark -> (file name, rows, JSON array rather than JSONL)
WRITERS: dict[str, tuple[str, Callable[[list[WikiPair], random.Random], Iterator[dict]], bool]] = {
    "rewardbench": ("rewardbench.jsonl", _rewardbench, False),
    "pandalm": ("pandalm.json", _pandalm, True),
    "llmbar": ("llmbar.json", _llmbar, True),
    "judgebench": ("judgebench.jsonl", _judgebench, False),
    "autoj": ("autoj.jsonl", _autoj, False),
    "mtbench": ("mtbench.jsonl", _mtbench, False),
}


def write_files(out: str | Path, n: int = 12, long: int = 2, seed: int = 0, path: str | Path | None = None,
                benchmarks: tuple[str, ...] = tuple(WRITERS)) -> dict[str, Path]:
    """One file per benchmark under `out` (disjoint articles; `long` long pairs in the RewardBench file only);
    returns benchmark -> file. Each file is written whole or not at all."""
    unknown = sorted(set(benchmarks) - set(WRITERS))
    if unknown:
        raise ValueError(f"no writer for {unknown}; known: {sorted(WRITERS)}")
    articles = read_articles(path)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    used: set[str] = set()
    files = {}
    for k, name in enumerate(benchmarks):
        pairs = make_pairs(articles, n, seed * 1000 + k, long if name == "rewardbench" else 0, used)
        file, writer, array = WRITERS[name]
        rows = list(writer(pairs, random.Random(f"{seed}:{name}")))
        text = (json.dumps(rows, ensure_ascii=False, indent=0) + "\n" if array
                else "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))
        atomic.write_text(out / file, text)
        files[name] = out / file
    return files
