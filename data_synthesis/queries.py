"""Target-aware question generation: chat messages that ask an LLM for one self-contained question about a few
related documents, per domain (wiki / science / medical), and the checks a question must pass.

The prompt wording is ours; bump PROMPTS_VERSION when it changes (it is stored in every record's meta, and the
request cache keys on the messages, so changed prompts are sent again rather than served stale).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from data_synthesis.filters import shares_ngram
from retrieval.corpus import CorpusPassage

PROMPTS_VERSION = "openrm-synth-v1"
WIKI, SCIENCE, MEDICAL = "wiki", "science", "medical"
DOMAIN_OF_CORPUS = {"wiki": WIKI, "arxiv": SCIENCE, "science": SCIENCE, "medical": MEDICAL}

_FOCUS = {
    WIKI: ("an encyclopedia reader",
           "Ask about the specific people, places, organisations, events or works the material describes: "
           "their history, role, relationships or significance. Prefer questions whose good answer needs "
           "concrete names, dates and figures."),
    SCIENCE: ("a researcher or graduate student",
              "Ask for a technical explanation, a short survey or a comparison tied to the research the material "
              "reports: what problem it tackles, how the method works, what it was evaluated on and what it found. "
              "Name the method, model or phenomenon explicitly."),
    MEDICAL: ("a patient, a caregiver or a medical student",
              "Ask about the condition, drug or procedure the material covers: causes, symptoms, diagnosis, "
              "treatment options, risks or outlook. Name it explicitly."),
}

_QUERY_SYSTEM = (
    "You design evaluation questions for long-form question answering. You are shown source material; you "
    "write one question that {who} could plausibly ask and that the material answers well.\n\n"
    "{focus}\n\n"
    "Requirements:\n"
    "- The question must make sense to someone who has never seen the material: name its subject; never "
    "say 'this passage', 'the document', 'the text above' or similar.\n"
    "- It needs an explanatory answer of a few paragraphs; it must not be answerable with yes or no.\n"
    "- Use your own words; do not copy phrases from the material.\n"
    "{multi}"
    "{reply}"
)
_REPLY = {"json": "- Reply with a JSON object of the form {\"question\": \"...\"} and nothing else.",
          "text": "- Reply with the question alone, on one line ending with a question mark, and nothing else."}
_ASK = {"json": "Write the question as JSON.", "text": "Write the question."}
QUESTION_FORMATS = tuple(_REPLY)
_MULTI = "- Several related passages are given; ask something whose full answer draws on more than one of them.\n"

_YES_NO_START = frozenset(
    "is are was were am do does did can could will would shall should has have had may might must".split())
_DEICTIC = re.compile(
    r"\b(?:this|these|that|those|above|following|given|provided|aforementioned|attached)\s+"
    r"(?:document|passage|excerpt|text|article|paper|study|abstract|context|material|source|snippet)s?\b"
    r"|\bthe\s+(?:passage|excerpt|document|context|material|snippet)s?\b"
    r"|\b(?:mentioned|described|discussed)\s+(?:above|here)\b", re.IGNORECASE)


@dataclass(frozen=True)
class QuestionRules:
    min_words: int = 5
    max_words: int = 80
    quote_ngram: int = 10  # a question sharing this many consecutive tokens with a document quotes it

    def __post_init__(self) -> None:
        if not 1 <= self.min_words <= self.max_words or self.quote_ngram < 2:
            raise ValueError(f"need 1 <= min_words <= max_words and quote_ngram >= 2; got {self}")


def render_documents(documents: Sequence[CorpusPassage], max_chars: int) -> str:
    """Numbered documents for a prompt, each body cut at `max_chars` characters."""
    blocks = []
    for n, doc in enumerate(documents, start=1):
        body = doc.text if len(doc.text) <= max_chars else doc.text[:max_chars].rsplit(" ", 1)[0] + " ..."
        blocks.append(f"[{n}] {doc.title}\n{body}" if doc.title else f"[{n}]\n{body}")
    return "\n\n".join(blocks)


def query_messages(domain: str, documents: Sequence[CorpusPassage], max_doc_chars: int = 4000,
                   question_format: str = "json") -> list[dict]:
    """The chat that asks for one question about `documents`, as a JSON object or (`question_format="text"`, for
    small models that rarely close a JSON object) as one plain line."""
    if domain not in _FOCUS:
        raise ValueError(f"unknown domain {domain!r}; expected one of {sorted(_FOCUS)}")
    if question_format not in _REPLY:
        raise ValueError(f"unknown question format {question_format!r}; expected one of {QUESTION_FORMATS}")
    who, focus = _FOCUS[domain]
    system = _QUERY_SYSTEM.format(who=who, focus=focus, multi=_MULTI if len(documents) > 1 else "",
                                  reply=_REPLY[question_format])
    user = f"Source material:\n\n{render_documents(documents, max_doc_chars)}\n\n{_ASK[question_format]}"
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


_LINE_PREFIX = re.compile(r"^(?:\s*(?:question\s*\d*\s*:|q\s*:|\[\d+\]|\d+[.)]|[-*•]|#+)\s*)+", re.IGNORECASE)


def parse_text_question(text: str) -> str:
    """The first line of a plain-text reply that ends with a question mark, without list markers or a
    "Question:" label; ValueError when no line does."""
    for line in text.splitlines():
        line = _LINE_PREFIX.sub("", line.strip()).strip().strip('"\'*` ')
        if line.endswith("?") and len(line) > 1:
            return " ".join(line.split())
    raise ValueError("no line of the reply ends with a question mark")


def parse_question(obj: Mapping[str, Any]) -> str:
    """The question from the model's JSON object; ValueError if it is missing or not text."""
    question = obj.get("question")
    if not isinstance(question, str) or not question.strip():
        raise ValueError(f"the JSON object has no non-empty 'question' string (keys: {sorted(obj)})")
    return " ".join(question.split())


def question_problem(question: str, documents: Sequence[CorpusPassage], rules: QuestionRules) -> str | None:
    """Why a generated question is unusable (too_short, too_long, yes_no, not_self_contained,
    quotes_document), or None."""
    words = question.split()
    if len(words) < rules.min_words:
        return "too_short"
    if len(words) > rules.max_words:
        return "too_long"
    if words[0].lower().strip("\"'(") in _YES_NO_START:
        return "yes_no"
    if _DEICTIC.search(question):
        return "not_self_contained"
    if shares_ngram(question, [d.text for d in documents], rules.quote_ngram):
        return "quotes_document"
    return None
