"""The rule that checks a synthesised pair's label against the documents its question was written from, and the
summary over a split (`data_synthesis.label_check` runs it on a dataset; `markdown` renders its JSON as the table of
bench/RESULTS.md). Each answer's checkable claims — numbers of two digits or more, and names (capitalised words
inside a sentence) — are looked up in the pair's source documents; a claim the question already makes is left out
(both answers have it for free). An answer's grounding is its supported claims minus its unsupported ones, and the
label holds by rule when the preferred answer is the better grounded one."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from openrm.evidence import STOPWORDS, lexical_verdict

NUMBER = re.compile(r"\d[\d,.]*\d|\d")
SENTENCE = re.compile(r"(?<=[.!?:;])\s+|\n+")
NAME = re.compile(r"[A-Z][\w'’-]+")
WORDS = re.compile(r"[\w'’-]+")
# capitalised inside a sentence for a reason other than being a name
NOT_NAMES = frozenset({"i", "i'm", "i've", "however", "also", "additionally", "overall", "finally", "furthermore"})
VERDICTS = ("holds", "reversed", "undecided")


def _number(token: str) -> str:
    return token.replace(",", "").rstrip(".")


def numbers(text: str) -> set[str]:
    """The numbers in `text` with two digits or more, thousands separators dropped ("1,200" -> "1200")."""
    return {n for n in (_number(m) for m in NUMBER.findall(text)) if sum(c.isdigit() for c in n) >= 2}


def _stem(word: str) -> str:
    return re.sub(r"['’]s$", "", word).lower()


def names(text: str) -> set[str]:
    """Capitalised words that do not open a sentence or a line (lower case, a possessive 's dropped): what an
    answer names. A word opening a sentence, a bullet or a bold heading is capitalised whatever it is, so it is not
    counted."""
    found = set()
    for sentence in SENTENCE.split(text):
        for m in NAME.finditer(sentence):
            if not re.search(r"[^\W\d_]", sentence[:m.start()]):  # only marks before it: "- ", "**", "1. "
                continue
            word = _stem(m.group(0))
            if len(word) >= 3 and word not in STOPWORDS and word not in NOT_NAMES:
                found.add(word)
    return found


@dataclass(frozen=True)
class Grounding:
    """One answer's checkable claims, split by whether the source documents hold them."""

    supported: tuple[str, ...]
    unsupported: tuple[str, ...]
    unsupported_numbers: tuple[str, ...]

    @property
    def score(self) -> int:
        return len(self.supported) - len(self.unsupported)


def grounding(answer: str, documents: str, question: str) -> Grounding:
    """`answer`'s numbers and names, less those the question makes, split into the ones `documents` hold and not."""
    doc_numbers, doc_words = numbers(documents), {_stem(w) for w in WORDS.findall(documents)}
    asked = numbers(question) | {_stem(w) for w in WORDS.findall(question)}
    claims = sorted((numbers(answer) | names(answer)) - asked)
    supported = [c for c in claims if c in doc_numbers or c in doc_words]
    unsupported = [c for c in claims if c not in supported]
    return Grounding(tuple(supported), tuple(unsupported), tuple(c for c in unsupported if c[:1].isdigit()))


@dataclass(frozen=True)
class PairCheck:
    """The rule's reading of one pair: `holds` when the preferred answer is the better grounded, `reversed` when
    the other one is, `undecided` when they tie (e.g. neither makes a checkable claim)."""

    id: str
    verdict: str
    preferred: Grounding
    other: Grounding
    longer_is_preferred: bool | None  # None: the same length in words
    lexical: str  # "right", "wrong" or "tie": the answer sharing more words with the documents


def check_pair(record: Mapping[str, Any]) -> PairCheck:
    """The rule's verdict on one judge-example record whose `meta.documents` hold its source documents."""
    if record.get("label") not in ("A", "B"):
        raise ValueError(f"record {record.get('id')!r}: label must be 'A' or 'B', got {record.get('label')!r}")
    documents = (record.get("meta") or {}).get("documents") or []
    if not documents:
        raise ValueError(f"record {record.get('id')!r} carries no source documents (meta.documents)")
    text = "\n".join(f"{d.get('title', '')}\n{d['text']}" for d in documents)
    good, bad = (record["answer_a"], record["answer_b"]) if record["label"] == "A" else (
        record["answer_b"], record["answer_a"])
    preferred, other = (grounding(a, text, record["question"]) for a in (good, bad))
    verdict = "holds" if preferred.score > other.score else "reversed" if preferred.score < other.score else (
        "undecided")
    lengths = len(good.split()), len(bad.split())
    lexical = lexical_verdict(text, record)
    return PairCheck(str(record["id"]), verdict, preferred, other,
                     None if lengths[0] == lengths[1] else lengths[0] > lengths[1],
                     "tie" if lexical == "tie" else "right" if lexical == record["label"] else "wrong")


def _share(flags: Sequence[bool]) -> dict[str, Any]:
    from eval.metrics import interval_of_mean

    values = [float(f) for f in flags]
    return {"share": sum(values) / len(values) if values else None,
            "ci95": interval_of_mean(values) if values else None, "n": len(values)}


def summary(checks: Sequence[PairCheck]) -> dict[str, Any]:
    """Shares (with seeded 95 % bootstrap intervals) of each rule verdict, of preferred answers holding a number the
    documents do not, and of what the length and lexical baselines score on all pairs and on those the rule
    confirms."""
    confirmed = [c for c in checks if c.verdict == "holds"]
    out: dict[str, Any] = {"pairs": len(checks)}
    for v in VERDICTS:
        out[v] = _share([c.verdict == v for c in checks])
    out["preferred_has_unsupported_number"] = _share([bool(c.preferred.unsupported_numbers) for c in checks])
    out["other_has_unsupported_number"] = _share([bool(c.other.unsupported_numbers) for c in checks])
    out["mean_claims"] = {
        side: {k: sum(len(getattr(getattr(c, side), k)) for c in checks) / max(len(checks), 1)
               for k in ("supported", "unsupported")} for side in ("preferred", "other")}
    for name, group in (("all", checks), ("confirmed", confirmed)):
        out[f"longer_wins_{name}"] = _share([c.longer_is_preferred is True for c in group])
        out[f"lexical_right_{name}"] = _share([c.lexical == "right" for c in group])
    return out


def _cell(s: Mapping[str, Any]) -> str:
    if s["share"] is None:
        return "-"
    lo, hi = s["ci95"]
    return f"{s['share']:.2f} ({lo:.2f}-{hi:.2f})"


def markdown(s: Mapping[str, Any]) -> str:
    """The summary as a markdown table."""
    rows = [("pairs", str(s["pairs"])),
            ("label holds by rule (preferred answer better grounded)", _cell(s["holds"])),
            ("label reversed by rule (the other answer better grounded)", _cell(s["reversed"])),
            ("undecided by rule (equal grounding)", _cell(s["undecided"])),
            ("preferred answer holds a number the documents do not", _cell(s["preferred_has_unsupported_number"])),
            ("other answer holds a number the documents do not", _cell(s["other_has_unsupported_number"])),
            ("longer answer is the preferred one: all pairs", _cell(s["longer_wins_all"])),
            ("longer answer is the preferred one: pairs the rule confirms", _cell(s["longer_wins_confirmed"])),
            ("lexical reference on the source documents: all pairs", _cell(s["lexical_right_all"])),
            ("lexical reference on the source documents: pairs the rule confirms", _cell(s["lexical_right_confirmed"]))]
    claims = s["mean_claims"]
    rows.append(("claims per answer, supported / unsupported: preferred; other",
                 f"{claims['preferred']['supported']:.1f} / {claims['preferred']['unsupported']:.1f}; "
                 f"{claims['other']['supported']:.1f} / {claims['other']['unsupported']:.1f}"))
    return "\n".join(["| measure | value (95 % CI) |", "|---|---|", *[f"| {k} | {v} |" for k, v in rows]]) + "\n"
