"""Quality filters for synthesised pairs: pure functions that name why a question, an answer or a pair is dropped.

Each check returns None (keep) or a short reason (`positive_refusal`, `pair_too_similar`, ...), which the
pipeline writes with the dropped record to the rejects file. Near-duplicate questions are found with MinHash-LSH
over normalised tokens, then confirmed by exact Jaccard.
"""

from __future__ import annotations

import hashlib
import random
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

_PRIME = (1 << 61) - 1  # Mersenne prime for the MinHash permutations
_TOKEN = re.compile(r"\w+", re.UNICODE)
_REFUSAL = re.compile(
    r"^\W*(i'?m sorry|i am sorry|sorry,|i apologi[sz]e|i can(?:'|no)?t (?:help|assist|answer|provide)"
    r"|i cannot (?:help|assist|answer|provide)|i am (?:not able|unable) to|i'?m (?:not able|unable) to"
    r"|as an ai\b|i do(?: not|n'?t) have (?:enough )?(?:information|access|knowledge))", re.IGNORECASE)
# An answer that points at material the reader never sees gives the judge a cue that has nothing to do with quality.
_MENTIONS_SOURCE = re.compile(
    r"\b(?:the|this|these|above|following|given|provided|supplied|attached|reference)\s+"
    r"(?:(?:provided|given|supplied|attached|reference|source|above)\s+)?"
    r"(?:document|passage|excerpt|context|text snippet|source text|reference material)s?\b"
    r"|\b(?:according to|based on|as stated in|as described in|as mentioned in)\s+the\s+"
    r"(?:document|passage|excerpt|context|text|source)s?\b", re.IGNORECASE)


def tokens(text: str) -> list[str]:
    """Lower-cased word tokens; punctuation and spacing do not count."""
    return _TOKEN.findall(text.lower())


def ngrams(toks: Sequence[str], n: int) -> set[tuple[str, ...]]:
    return {tuple(toks[i:i + n]) for i in range(len(toks) - n + 1)}


def shares_ngram(text: str, sources: Iterable[str], n: int) -> bool:
    """Whether `text` repeats any run of `n` consecutive tokens of one of `sources` (a verbatim copy)."""
    mine = ngrams(tokens(text), n)
    return bool(mine) and any(mine & ngrams(tokens(s), n) for s in sources)


def jaccard(a: Iterable[str], b: Iterable[str]) -> float:
    a, b = set(a), set(b)
    return len(a & b) / len(a | b) if a or b else 1.0


def mentions_source(text: str) -> bool:
    return bool(_MENTIONS_SOURCE.search(text))


@dataclass(frozen=True)
class FilterConfig:
    min_answer_words: int = 20
    max_length_ratio: float = 4.0  # longer answer / shorter answer, in words
    max_pair_jaccard: float = 0.9  # token-set Jaccard of positive and negative
    copy_ngram: int = 25  # a positive that repeats this many document tokens in a row copies it
    duplicate_jaccard: float = 0.8  # questions at least this similar are duplicates
    trim_truncated: bool = False  # an answer cut at max_tokens keeps its complete sentences instead of being dropped

    def __post_init__(self) -> None:
        if self.min_answer_words < 1 or self.max_length_ratio < 1 or self.copy_ngram < 2:
            raise ValueError(f"need min_answer_words >= 1, max_length_ratio >= 1, copy_ngram >= 2; got {self}")
        if not (0 < self.max_pair_jaccard <= 1 and 0 < self.duplicate_jaccard <= 1):
            raise ValueError(f"Jaccard thresholds must be in (0, 1]; got {self}")


_SENTENCE_END = re.compile(r"[.!?][\"')\]]*(?=\s|$)")


def trimmed(text: str, finish_reason: str | None, cfg: FilterConfig) -> tuple[str, str | None]:
    """With `cfg.trim_truncated`, an answer cut at max_tokens ("length") ends at its last complete sentence and
    counts as finished; otherwise, or when it has no complete sentence, it is returned as it was."""
    if not cfg.trim_truncated or finish_reason != "length":
        return text, finish_reason
    ends = list(_SENTENCE_END.finditer(text))
    if not ends:
        return text, finish_reason
    return text[:ends[-1].end()].rstrip(), "stop"


def answer_problem(text: str, finish_reason: str | None, cfg: FilterConfig) -> str | None:
    """Why one answer is unusable on its own: empty, truncated, refusal, too_short; None if fine."""
    if not text.strip():
        return "empty"
    if finish_reason == "length":
        return "truncated"
    if _REFUSAL.search(text):
        return "refusal"
    if len(text.split()) < cfg.min_answer_words:
        return "too_short"
    return None


def positive_problem(positive: str, positive_finish: str | None, documents: Sequence[str],
                     cfg: FilterConfig) -> str | None:
    """Why the answer written with the documents is unusable whatever the other answer is, or None. The pipeline
    asks for the answer without documents only when this is None, so a dropped positive costs no second answer."""
    problem = answer_problem(positive, positive_finish, cfg)
    if problem:
        return f"positive_{problem}"
    if mentions_source(positive):
        return "positive_mentions_source"
    if shares_ngram(positive, documents, cfg.copy_ngram):
        return "positive_copies_document"
    return None


def pair_problem(positive: str, positive_finish: str | None, negative: str, negative_finish: str | None,
                 documents: Sequence[str], cfg: FilterConfig) -> str | None:
    """The first reason to drop a (positive, negative) pair, or None to keep it: the positive's own problems
    first (`positive_problem`), then the negative's, then the pair's."""
    problem = positive_problem(positive, positive_finish, documents, cfg)
    if problem:
        return problem
    problem = answer_problem(negative, negative_finish, cfg)
    if problem:
        return f"negative_{problem}"
    if mentions_source(negative):
        return "negative_mentions_source"
    if jaccard(tokens(positive), tokens(negative)) >= cfg.max_pair_jaccard:
        return "pair_too_similar"
    pos_words, neg_words = len(positive.split()), len(negative.split())
    if max(pos_words, neg_words) > cfg.max_length_ratio * min(pos_words, neg_words):
        return "pair_length_ratio"
    return None


class DuplicateIndex:
    """MinHash-LSH over question token sets: `add` returns the index of an earlier near-duplicate, else None.

    Deterministic (blake2b and seeded permutations, no per-process hash salt): the same questions in the same
    order give the same verdicts in every run."""

    def __init__(self, threshold: float, num_perm: int = 64, bands: int = 16) -> None:
        if num_perm % bands:
            raise ValueError(f"num_perm ({num_perm}) must be a multiple of bands ({bands})")
        self.threshold, self.num_perm, self.bands = threshold, num_perm, bands
        self.rows = num_perm // bands
        rng = random.Random(f"minhash:{num_perm}")
        self._perms = [(rng.randrange(1, _PRIME), rng.randrange(_PRIME)) for _ in range(num_perm)]
        self._sets: list[frozenset[str]] = []
        self._buckets: list[dict[tuple[int, ...], list[int]]] = [{} for _ in range(bands)]

    def _signature(self, toks: frozenset[str]) -> list[int]:
        sig = [_PRIME] * self.num_perm
        for tok in toks:
            x = int.from_bytes(hashlib.blake2b(tok.encode("utf-8"), digest_size=8).digest(), "little")
            for i, (a, b) in enumerate(self._perms):
                h = (a * x + b) % _PRIME
                if h < sig[i]:
                    sig[i] = h
        return sig

    def add(self, question: str) -> int | None:
        toks = frozenset(tokens(question))
        sig = self._signature(toks)
        bands = [tuple(sig[b * self.rows:(b + 1) * self.rows]) for b in range(self.bands)]
        candidates = sorted({i for b, band in enumerate(bands) for i in self._buckets[b].get(band, ())})
        for i in candidates:
            if jaccard(toks, self._sets[i]) >= self.threshold:
                return i
        index = len(self._sets)
        self._sets.append(toks)
        for b, band in enumerate(bands):
            self._buckets[b].setdefault(band, []).append(index)
        return None
