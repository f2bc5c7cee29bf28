"""What a searching judge can see: the evidence a search shows for each pair, whether it holds the words that
separate the two answers (the ceiling of any judge that searches), and the lexical reference (the answer sharing
more words with that evidence wins), which a judge must beat to show it reads.

    shown = shown_evidence(examples, toolbox, tokenizer, information_tokens=256)
    coverage = [separates(shown[e["id"]], e) for e in examples]
    reference = [lexical_verdict(shown[e["id"]], e) for e in examples]
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from openrm import protocol

WORD = re.compile(r"\d+(?:[.,]\d+)*|\w+")
STOPWORDS = frozenset("a an and are as at be by for from has have in is it its of on or that the this to was were "
                      "which with".split())
# words that ask rather than name: left out of a query so the search is about the question's subject
ASKING = STOPWORDS | frozenset("write short brief encyclopedia entry overview summary summarize about what who when "
                               "where why how whom whose does do did can could would should please tell me give "
                               "explain describe".split())



def query_of(question: str, words: int = 10) -> str:
    """The question's first `words` content words (words that only ask, like "what", "write" or "about", left out),
    punctuation and quotes dropped (a call's query is plain text)."""
    return " ".join([w for w in WORD.findall(question) if w.lower() not in ASKING][:words])


def _ngrams(tokens: Sequence[str], n: int) -> set[tuple[str, ...]]:
    return {tuple(tokens[i:i + n]) for i in range(len(tokens) - n + 1)}


def evidence_span(evidence: str, right: str, wrong: str, max_words: int = 6) -> str | None:
    """The longest run of words (as written in `evidence`) that `evidence` and `right` share and `wrong` does not
    hold, earliest first among equals. A run counts only when it is specific: three words or more, or holding a
    number of two digits or more (a lone common word matches by chance). None when there is none."""
    matches = list(WORD.finditer(evidence))
    tokens = [m.group(0).lower() for m in matches]
    right_tokens = [m.group(0).lower() for m in WORD.finditer(right)]
    wrong_tokens = [m.group(0).lower() for m in WORD.finditer(wrong)]
    for n in range(max_words, 0, -1):
        shared = _ngrams(right_tokens, n) - _ngrams(wrong_tokens, n)
        if not shared:
            continue
        for i in range(len(tokens) - n + 1):
            gram = tuple(tokens[i:i + n])
            if gram in shared and (n >= 3 and not set(gram) <= STOPWORDS
                                   or any(t[:1].isdigit() and len(t) >= 2 for t in gram)):
                return evidence[matches[i].start():matches[i + n - 1].end()]
    return None


def differing_quotes(a: str, b: str, context: int = 2, max_words: int = 8) -> tuple[str, str] | None:
    """Where two answers part: from `context` words before their first differing word to `context` words after
    their last one, at most `max_words` words of each, as written in each answer (a word-level diff, case-blind).
    None when the answers hold the same words."""
    from difflib import SequenceMatcher

    words = [list(WORD.finditer(text)) for text in (a, b)]
    tokens = [[m.group(0).lower() for m in w] for w in words]
    changed = [op for op in SequenceMatcher(None, *tokens, autojunk=False).get_opcodes() if op[0] != "equal"]
    if not changed:
        return None
    quotes = []
    for text, w, first, last in ((a, words[0], changed[0][1], changed[-1][2]),
                                 (b, words[1], changed[0][3], changed[-1][4])):
        start = max(0, first - context)
        stop = min(len(w), max(last + context, first + 1), start + max_words)
        quotes.append(text[w[start].start():w[stop - 1].end()] if stop > start else "")
    return quotes[0], quotes[1]


def shown_evidence(examples: Sequence[Mapping[str, Any]], toolbox: Any, tokenizer: Any, information_tokens: int,
                   query_words: int = 10) -> dict[str, str]:
    """Per example id: the `<information>` body a rollout shows after searching the question's content words on
    the example's gold tool (the gold trajectory's search), cut to `information_tokens` as live; "" when the search
    fails or the example has no tool."""
    from openrm.rollout import information_ids

    tools = {spec.name for spec in toolbox.tools}
    asked = [(e, protocol.ToolCall(e["gold_tool"], query_of(e["question"], query_words))) for e in examples
             if e.get("gold_tool") in tools]
    out = {str(e["id"]): "" for e in examples}
    results = toolbox.run([call for _, call in asked]) if asked else []
    for (e, _), result in zip(asked, results, strict=True):
        if result.error or not result.passages:
            continue
        shown = tokenizer.decode(information_ids(tokenizer, result, information_tokens))
        out[str(e["id"])] = shown.split(protocol.open_tag(protocol.INFORMATION), 1)[-1]
    return out


def _right_wrong(example: Mapping[str, Any]) -> tuple[str, str]:
    a, b = example["answer_a"], example["answer_b"]
    return (a, b) if example["label"] == "A" else (b, a)


def separates(evidence: str, example: Mapping[str, Any]) -> bool:
    """Whether `evidence` holds a span that the right answer repeats and the wrong one does not (the rule the gold
    trajectories copy: three words or more, or a number of two digits or more)."""
    if example["label"] not in ("A", "B") or not evidence:
        return False
    right, wrong = _right_wrong(example)
    return evidence_span(evidence, right, wrong) is not None


def overlap(evidence: str, answer: str) -> float:
    """The share of `answer`'s distinct words (lower case) that `evidence` holds."""
    words = {w.lower() for w in WORD.findall(answer)}
    seen = {w.lower() for w in WORD.findall(evidence)}
    return len(words & seen) / len(words) if words else 0.0


def lexical_verdict(evidence: str, example: Mapping[str, Any]) -> str:
    """"A" or "B": the answer whose words the evidence holds the larger share of; "tie" when equal."""
    a, b = overlap(evidence, example["answer_a"]), overlap(evidence, example["answer_b"])
    return "tie" if a == b else ("A" if a > b else "B")


@dataclass
class Evidence:
    """Retrieve-then-judge: one search per question in each corpus, rendered as one `<information>` block and cut to
    `max_tokens` tokens of the judge's tokenizer."""

    toolbox: Any  # openrm.tools.ToolBox
    tokenizer: Any
    max_tokens: int = 512

    def __call__(self, questions: Sequence[str]) -> list[str]:
        corpora = list(dict.fromkeys(t.corpus for t in self.toolbox.tools))
        hits = {corpus: self.toolbox.search(corpus, list(questions)) for corpus in corpora}
        blocks = []
        for i in range(len(questions)):
            passages = [p for corpus in corpora for p in hits[corpus][i]]
            block = protocol.render_information(passages)
            ids = self.tokenizer.encode(block, add_special_tokens=False)
            if len(ids) > self.max_tokens:  # cut the passages, keep the block closed
                cut = self.tokenizer.decode(ids[: self.max_tokens]).rstrip()
                block = f"{cut} ...\n{protocol.close_tag(protocol.INFORMATION)}\n"
            blocks.append(block)
        return blocks
