"""The corpora the retrieval benchmarks index, as DPR tsv files (`id\\ttext\\ttitle`), deterministic in the seed:
100-word passages of a Zipf(1) vocabulary whose top ranks are English stop words (`synthetic_corpus`, bm25s vs
Lucene), or of toy-world sentences under a toy title (`dpr_like_corpus`, ColBERT on CPU); and queries cut from an
index's own passages. Imported by the scripts in bench/; it runs nothing itself.
"""

from __future__ import annotations

import csv
import random
import re
from pathlib import Path

# The 33 English stop words that both Lucene's analyzer and bm25s drop, by rough frequency: as in English text they
# are the most frequent ranks (a third of all words under Zipf(1)), so the common words cost neither backend anything.
STOPWORDS = ("the of and to a in is that for it as was with on by at be this are not or but they their "
             "an no if into such then there these will").split()


def synthetic_corpus(path: Path, n: int, seed: int = 0, vocab: int = 200_000, words: int = 100) -> Path:
    """`n` passages of `words` words, word ranks Zipf(1) over `vocab` words; the same file for the same args."""
    import numpy as np

    if path.exists():
        return path
    rng = np.random.default_rng(seed)
    cdf = np.cumsum(1.0 / np.arange(1, vocab + 1))
    cdf /= cdf[-1]
    lexicon = np.array(STOPWORDS + [_word(i) for i in range(vocab - len(STOPWORDS))])
    tmp = path.with_suffix(".partial")
    with tmp.open("w", encoding="utf-8") as f:
        f.write("id\ttext\ttitle\n")
        for start in range(0, n, 10_000):
            m = min(10_000, n - start)
            ranks = np.minimum(np.searchsorted(cdf, rng.random((m, words))), vocab - 1)
            f.writelines(f"p{start + i}\t{' '.join(row)}\tTitle {start + i}\n"
                         for i, row in enumerate(lexicon[ranks].tolist()))
    tmp.rename(path)
    return path


def _word(i: int) -> str:
    """A letters-only synthetic word (no digits, so every analyzer keeps it whole), unique per rank."""
    letters = "bcdfghjklmnpqrstvwxz"
    out = "qu"
    while True:
        i, r = divmod(i, len(letters))
        out += letters[r] + "aeiou"[r % 5]
        if i == 0:
            return out


def sample_queries(docstore_dir: Path, n: int, seed: int = 1) -> list[str]:
    """`n` queries of 3–8 consecutive words of random passages of a docstore."""
    from retrieval.docstore import DocStore

    store = DocStore(docstore_dir)
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        words = store[rng.randrange(len(store))][2].split()
        length = rng.randint(3, 8)
        start = rng.randrange(len(words) - length + 1)
        out.append(" ".join(words[start:start + length]))
    return out


def dpr_like_corpus(path: Path, n: int, seed: int = 0) -> tuple[Path, list[str], list[str]]:
    """`n` passages of ≥ 100 words from toy-world sentences as a DPR tsv; returns it, its titles, its first 256
    passages as colbert reads them ("title | text")."""
    from toy.world import ToyWorld

    world = ToyWorld(0)
    docs = [d for corpus in ("wiki", "arxiv") for d in world.corpus(corpus)]
    sentences = [s for d in docs for s in re.split(r"(?<=\.) ", d.text)]
    rng = random.Random(seed)
    titles, head = [], []
    with path.open("w", encoding="utf-8", newline="") as f:
        writer = csv.writer(f, delimiter="\t", lineterminator="\n")
        writer.writerow(["id", "text", "title"])
        for i in range(n):
            words: list[str] = []
            while len(words) < 100:
                words += rng.choice(sentences).split()
            title, text = rng.choice(docs).title, " ".join(words)
            titles.append(title)
            if len(head) < 256:
                head.append(f"{title} | {text}")
            writer.writerow([i + 1, text, title])
    return path, titles, head
