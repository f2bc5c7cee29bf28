"""Pairs from real Wikipedia text: each asks about one Vital Article (the lead sections `retrieval.wikipedia` reads)
and sets its lead section (the chosen answer) against a rejected answer of the same length and style. Library code of
`data_synthesis.wiki_benchmarks` (benchmark-shaped files) and of `data_synthesis.wiki_changes` and
`data_synthesis.wiki_dataset` (judge datasets):

    pairs = make_pairs(read_articles(), n=12, seed=0, long=2)

- `numbers`: the same text with every number changed (years moved by 5-60, other numbers raised by 20-60 %), so
  only a judge that checks the facts can tell them apart;
- `swap`: the lead section of another article of the same topic, with that article's title replaced by the one
  asked about: fluent, on the right kind of subject, and wrong;
- `long`: overviews of many articles of one topic, chosen against the same text with its numbers changed, about
  3,200 words each, so the pair exceeds an 8,192-token context and the judge's context policy has to act.
"""

from __future__ import annotations

import json
import random
import re
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path

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
