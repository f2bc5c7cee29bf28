"""A judge dataset of clean pairs from real Wikipedia lead sections, at scale: the chosen answer is an article's own
text cut to a length class, the rejected answer the same cut with one kind of factual change
(`data_synthesis.wiki_changes`), so every label is right by construction. Written by `write_dataset`, which
`python -m data_synthesis.wiki_judge_pairs` runs.

Every article is scanned for every (kind, length) cell; the pairs are spread evenly over the cells, each article asked
about once per split, test first, and the test split's articles and swap partners never appear in the train split.
`wiki_stats.json` counts the pairs by kind, length, topic and cell, and every skip by its reason.
"""

from __future__ import annotations

import json
import logging
import random
import time
from collections import Counter, defaultdict, deque
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from data_synthesis.wiki_articles import WikiPair, question, read_articles
from data_synthesis.wiki_changes import KINDS, LEAD_WORDS, LENGTHS, MIN_SENTENCE, Corpus, JudgePair, Skip, build, index
from plumbing import atomic

logger = logging.getLogger(__name__)


def _rng(seed: int, title: str, kind: str, length: str) -> random.Random:
    return random.Random(f"{seed}:{title}:{kind}:{length}")


def scan(corpus: Corpus, kinds: Sequence[str], lengths: Sequence[str], seed: int
         ) -> tuple[dict[tuple[str, str], list[str]], Counter]:
    """For each (kind, length) cell, the articles that give a pair; and (kind, reason) -> articles that do not."""
    cells: dict[tuple[str, str], list[str]] = {(k, n): [] for k in kinds for n in lengths}
    skipped: Counter = Counter()
    for title, texts in corpus.cuts.items():
        for (kind, length), titles in cells.items():
            if length in texts:
                try:
                    build(corpus.by_title[title], kind, length, corpus, _rng(seed, title, kind, length))
                    titles.append(title)
                except Skip as why:
                    skipped[(kind, str(why))] += 1
    return cells, skipped


@dataclass
class Draw:
    pairs: list[JudgePair]
    missed: Counter  # (kind, reason) -> articles that failed when drawn (swap partners used up)
    short: dict[str, dict[str, int]]  # "kind/length" -> {"asked", "made"} for cells that ran out


def draw(corpus: Corpus, cells: dict[tuple[str, str], list[str]], n: int, seed: int, split: str,
         used: set[str]) -> Draw:
    """`n` pairs (n < 0: as many as there are) spread evenly over the cells, each about an article outside `used`;
    `used` grows by the articles asked about and the swap partners. The scarcest cells draw first, so an article
    that several cells could use goes to the one that needs it; what a cell cannot give, the others give in turn."""
    queues = {cell: deque(random.Random(f"{seed}:{split}:{cell[0]}:{cell[1]}").sample(titles, len(titles)))
              for cell, titles in cells.items()}
    made: dict[tuple[str, str], list[JudgePair]] = {cell: [] for cell in cells}
    missed: Counter = Counter()

    def take(cell: tuple[str, str]) -> bool:
        while queues[cell]:
            title = queues[cell].popleft()
            if title in used:
                continue
            try:
                pair = build(corpus.by_title[title], *cell, corpus, _rng(seed, title, *cell), used)
            except Skip as why:
                missed[(cell[0], str(why))] += 1
                continue
            used.update({title, pair.partner} - {""})
            made[cell].append(pair)
            return True
        return False

    order = list(cells)
    quota = {c: n // len(order) + (i < n % len(order)) if n >= 0 else 0 for i, c in enumerate(order)}
    scarce = sorted(order, key=lambda c: (len(cells[c]), order.index(c)))
    for cell in scarce:
        while len(made[cell]) < quota[cell] and take(cell):
            pass
    total = sum(map(len, made.values()))
    gained = True
    while gained and (n < 0 or total < n):
        gained = False
        for cell in scarce:
            if 0 <= n <= total:
                break
            if take(cell):
                gained, total = True, total + 1
    short = {f"{k}/{length}": {"asked": quota[(k, length)], "made": len(made[(k, length)])}
             for k, length in order if len(made[(k, length)]) < quota[(k, length)]}
    if n >= 0 and total < n:
        raise ValueError(f"{split}: only {total} of {n} pairs could be built; every cell ran out of unused articles "
                         f"(made per kind/length: {', '.join(f'{k}/{m}: {len(made[(k, m)])}' for k, m in order)})")
    pairs = [p for cell in order for p in made[cell]]
    random.Random(f"{seed}:{split}:order").shuffle(pairs)
    return Draw(pairs, missed, short)


def to_record(pair: JudgePair, split: str, k: int, label: str, seed: int) -> dict:
    """A pair as a judge record (the schema `data_synthesis.pairs.features` fixes), checked."""
    from openrm.dataset import check_example

    a = pair.article
    ask = question(WikiPair(pair.kind, a.title, a.topic, a.description, pair.chosen, pair.rejected))
    first, second = (pair.chosen, pair.rejected) if label == "A" else (pair.rejected, pair.chosen)
    meta = {"source": f"wiki_pairs/{pair.kind}", "generator": "rules", "prompts_version": "", "seed": seed,
            "split": split, "corpus": "wiki", "doc_ids": [a.title] + ([pair.partner] if pair.partner else []),
            "documents": [{"id": a.title, "title": a.title, "text": a.text}],
            "positive_finish": "", "negative_finish": "", "request_keys": [],
            "facts": [{"attribute": "length", "value": pair.length}, {"attribute": "topic", "value": a.topic}],
            "corrupted": [{"attribute": c.attribute, "true": c.true, "wrong": c.wrong} for c in pair.changes]}
    record = {"id": f"wiki-{pair.kind}-{pair.length}-{split}-{k:05d}", "domain": "wiki", "question": ask,
              "answer_a": first, "answer_b": second, "label": label, "gold_tool": "WIKI", "meta": meta}
    check_example(record, record["id"])
    return record


def _grouped(counter: Counter) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = defaultdict(dict)
    for (group, reason), n in sorted(counter.items()):
        out[group][reason] = n
    return dict(out)


def _split_stats(pairs: Sequence[JudgePair]) -> dict:
    return {"total": len(pairs), "kind": dict(Counter(p.kind for p in pairs)),
            "length": dict(Counter(p.length for p in pairs)), "topic": dict(Counter(p.article.topic for p in pairs)),
            "cell": dict(Counter(f"{p.kind}/{p.length}" for p in pairs))}


def _kinds_table(split_pairs: dict[str, list[JudgePair]], lengths: Sequence[str], kinds: Sequence[str]) -> str:
    lines = ["", "## Pairs by kind and length", "", f"| split | kind | {' | '.join(lengths)} | all |",
             "|---|---|" + "---:|" * (len(lengths) + 1)]
    for split, pairs in split_pairs.items():
        cells = Counter((p.kind, p.length) for p in pairs)
        for kind in kinds:
            row = [cells[(kind, n)] for n in lengths]
            lines.append(f"| {split} | {kind} | {' | '.join(map(str, row))} | {sum(row)} |")
    return "\n".join(lines) + "\n"


def write_dataset(out: str | Path, n_train: int, n_test: int, seed: int = 0, path: str | Path | None = None,
                  max_words: int = LEAD_WORDS, kinds: Sequence[str] = KINDS,
                  lengths: Sequence[str] = LENGTHS) -> dict[str, int]:
    """The judge dataset under `out` (records, stats.md, summary.json by `data_synthesis.report`, and
    wiki_stats.json), `n_test` then `n_train` pairs (negative: as many as the articles give), answers of at most
    `max_words` words; returns pairs per split."""
    from data_synthesis.pairs import balanced_labels
    from data_synthesis.report import write_outputs

    kinds, lengths = tuple(dict.fromkeys(kinds)), tuple(dict.fromkeys(lengths))
    unknown = sorted(set(kinds) - set(KINDS)) + sorted(set(lengths) - set(LENGTHS))
    if unknown or not kinds or not lengths or max_words < MIN_SENTENCE:
        raise ValueError(f"kinds from {KINDS}, lengths from {LENGTHS} (unknown: {unknown}), max_words >= "
                         f"{MIN_SENTENCE} (got {max_words})")
    started = time.perf_counter()
    unread: Counter = Counter()
    articles = read_articles(path, unread)
    corpus = index(articles, lengths, max_words)
    cells, skipped = scan(corpus, kinds, lengths, seed)
    logger.info("%d articles indexed and scanned in %.1f s", len(articles), time.perf_counter() - started)
    skipped.update({("article", reason): n for reason, n in unread.items()})
    skipped.update(corpus.skipped)
    used: set[str] = set()
    draws = {split: draw(corpus, cells, n, seed, split, used) for split, n in (("test", n_test), ("train", n_train))}
    records = {}
    for split in ("train", "test"):
        pairs = draws[split].pairs
        labels = balanced_labels(len(pairs), seed, f"wiki_judge_pairs:{split}")
        records[split] = [to_record(p, split, k, label, seed)
                          for k, (p, label) in enumerate(zip(pairs, labels, strict=True))]
    split_pairs = {split: draws[split].pairs for split in ("train", "test")}
    stats = {"articles": {"rows": len(articles) + sum(unread.values()),
                          "with a cut": sum(bool(texts) for texts in corpus.cuts.values())},
             "candidates": {f"{k}/{n}": len(t) for (k, n), t in cells.items()},
             "skipped": _grouped(skipped),
             "skipped_while_drawing": {s: _grouped(d.missed) for s, d in draws.items()},
             "short_cells": {s: d.short for s, d in draws.items()},
             "pairs": {s: _split_stats(p) for s, p in split_pairs.items()}}
    summary = {"generator": "rules (data_synthesis.wiki_judge_pairs)", "prompts_version": "-", "seed": seed,
               "max_words": max_words, "kinds": list(kinds), "lengths": list(lengths),
               "pairs": {s: {"kind": v["kind"], "length": v["length"]} for s, v in stats["pairs"].items()}}
    out = Path(out)
    drops = Counter({f"{group}: {reason}": n for (group, reason), n in skipped.items()})
    write_outputs(out, records, [], drops, summary)
    for name, text in (("stats.md", (out / "stats.md").read_text(encoding="utf-8")
                        + _kinds_table(split_pairs, lengths, kinds)),
                       ("wiki_stats.json", json.dumps(stats, indent=2, sort_keys=True, ensure_ascii=False) + "\n")):
        atomic.write_text(out / name, text)
    return {s: len(rows) for s, rows in records.items()}
