"""Benchmark-shaped pair files built from real Wikipedia text, for running `eval.run` end to end on real-length
candidates where the benchmarks' own files are not at hand (no hub here).

    python -m data_synthesis.wiki_pairs --out runs/wiki-bench --n 12 --long 2            # benchmark-shaped files

Each pair asks about one Vital Article (the lead sections `retrieval.wikipedia` reads) and sets its lead section
(the chosen answer) against a rejected answer of the same length and style:

- `numbers`: the same text with every number changed (years moved by 5-60, other numbers raised by 20-60 %), so
  only a judge that checks the facts can tell them apart;
- `swap`: the lead section of another article of the same topic, with that article's title replaced by the one
  asked about: fluent, on the right kind of subject, and wrong;
- `long` (RewardBench file only): overviews of many articles of one topic, chosen against the same text with its
  numbers changed, about 3,200 words each, so the pair exceeds an 8,192-token context and the judge's context
  policy has to act.

The same pairs are written in the shape of each benchmark's real file (RewardBench, PandaLM, LLMBar, JudgeBench,
Auto-J, MT-Bench human judgments), one disjoint set of articles per file, the chosen answer's position drawn by a
coin seeded from (seed, file, row), so `eval.loaders` reads them exactly as it reads the real files.

Judge datasets (train and test splits, seven kinds of error at three lengths) are
`data_synthesis.wiki_judge_pairs`, which builds on this module.
"""

from __future__ import annotations

import argparse
import json
import random
import re
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from plumbing import atomic
from retrieval.wikipedia import summaries_file

NUMBER = re.compile(r"(?<![\w.,])\d{1,3}(?:,\d{3})+(?:\.\d+)?(?!\w)|(?<![\w.,])\d+(?:\.\d+)?(?!\w)")
MIN_WORDS, MAX_WORDS = 60, 400
LONG_WORDS = 3200


@dataclass(frozen=True)
class Article:
    title: str
    text: str
    topic: str
    description: str


@dataclass(frozen=True)
class WikiPair:
    kind: str  # numbers | swap | long
    title: str
    topic: str
    description: str
    chosen: str
    rejected: str


def read_articles(path: str | Path | None = None, skipped: Counter | None = None) -> list[Article]:
    """Every article of the lead-section file (default: the packaged one) with a title, text and topic, in title
    order; the rows left out are counted by reason in `skipped` when given."""
    rows = json.loads(Path(path or summaries_file()).read_text(encoding="utf-8"))
    skipped = skipped if skipped is not None else Counter()
    out = []
    for key in sorted(rows):
        row = rows[key]
        if not isinstance(row, dict):
            skipped["row is not an object"] += 1
            continue
        title, text = (row.get("title") or key), row.get("extract")
        if not isinstance(title, str) or not title.strip():
            skipped["no title"] += 1
        elif not isinstance(text, str) or not text.strip():
            skipped["no text"] += 1
        else:
            out.append(Article(title.strip(), " ".join(text.split()), str(row.get("topic") or ""),
                               str(row.get("description") or "")))
    return out


def _changed(number: str, rng: random.Random) -> str:
    digits = number.replace(",", "")
    decimals = len(digits.split(".")[1]) if "." in digits else 0
    value = float(digits)
    if decimals == 0 and len(digits) == 4 and 1000 <= value <= 2030:  # a year
        new = value + rng.choice((-1, 1)) * rng.randint(5, 60)
    else:
        new = value + max(10 ** -decimals, round(value * rng.uniform(0.2, 0.6), decimals))
    text = f"{new:,.{decimals}f}" if "," in number else f"{new:.{decimals}f}"
    return text if text != number else f"{new + 1:.{decimals}f}"


def alter_numbers(text: str, rng: random.Random) -> tuple[str, int]:
    """`text` with every number changed, and how many were."""
    count = 0

    def change(match: re.Match) -> str:
        nonlocal count
        count += 1
        return _changed(match.group(0), rng)

    return NUMBER.sub(change, text), count


def _words(text: str) -> int:
    return len(text.split())


def make_pairs(articles: list[Article], n: int, seed: int, long: int = 0,
               used: set[str] | None = None, max_words: int = MAX_WORDS) -> list[WikiPair]:
    """`n` pairs (about half `numbers`, half `swap`) of lead sections of `MIN_WORDS`..`max_words` words, and `long`
    long pairs, over articles not in `used` (which grows)."""
    rng = random.Random(seed)
    used = used if used is not None else set()
    by_topic: dict[str, list[Article]] = defaultdict(list)
    for a in articles:
        by_topic[a.topic].append(a)
    pool = [a for a in articles if a.title not in used and MIN_WORDS <= _words(a.text) <= max_words]
    rng.shuffle(pool)
    pairs: list[WikiPair] = []
    kinds = ["numbers" if k % 2 == 0 else "swap" for k in range(n)]
    for article in pool:
        if not kinds:
            break
        if article.title in used:
            continue
        kind = kinds[0]
        if kind == "numbers":
            rejected, changed = alter_numbers(article.text, rng)
            if changed < 2:
                continue
        else:
            others = [o for o in by_topic[article.topic] if o.title not in used and o.title != article.title
                      and 0.67 <= _words(o.text) / _words(article.text) <= 1.5 and o.title in o.text]
            if not others:
                continue
            other = rng.choice(others)
            used.add(other.title)
            rejected = other.text.replace(other.title, article.title)
        used.add(article.title)
        kinds.pop(0)
        pairs.append(WikiPair(kind, article.title, article.topic, article.description, article.text, rejected))
    if kinds:
        raise ValueError(f"only {n - len(kinds)} of {n} pairs could be built from {len(pool)} unused articles")
    for _ in range(long):
        topic = rng.choice(sorted(t for t, rows in by_topic.items() if t))
        rows = [a for a in by_topic[topic] if a.title not in used]
        rng.shuffle(rows)
        chosen, words = [], 0
        for a in rows:
            chosen.append(f"{a.title}: {a.text}")
            used.add(a.title)
            words += _words(a.text)
            if words >= LONG_WORDS:
                break
        text = "\n\n".join(chosen)
        rejected, _ = alter_numbers(text, rng)
        title = f"{len(chosen)} articles on {topic}"
        pairs.append(WikiPair("long", title, topic, ", ".join(r.split(":", 1)[0] for r in chosen), text, rejected))
    return pairs


def question(pair: WikiPair) -> str:
    if pair.kind == "long":
        return f"Write a short overview of each of these subjects ({pair.topic}): {pair.description}."
    about = f"{pair.title} ({pair.description})" if pair.description else pair.title
    return f"Write a short encyclopedia entry about {about}."


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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--n", type=int, default=12, help="pairs per benchmark file")
    parser.add_argument("--long", type=int, default=2, help="extra long pairs in the RewardBench file")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--summaries", default=None, help="lead-section JSON (default: the packaged file)")
    args = parser.parse_args(argv)
    for name, file in write_files(args.out, args.n, args.long, args.seed, args.summaries).items():
        print(f"{name}: {file}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
