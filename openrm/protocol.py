"""The judge's wire protocol: tag names, tool-call syntax, prompts and the evidence renderer.

Every string the judge reads or writes is defined here and nowhere else, so the parser, the
rollout, the data pipeline and the evaluators cannot drift apart. Pure stdlib; importing it is free.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import NamedTuple

THINK = "think"
SEARCH = "search"
INFORMATION = "information"
ANSWER = "answer"
TAGS = (THINK, SEARCH, INFORMATION, ANSWER)

VERDICTS = ("A", "B")
TIE = "tie"  # a verdict only a judge run with allow_tie may give (Reasoning Arena's tie outcome); off by default

# The domains of our own judge examples and the tool whose corpus holds their facts: the gold tool of R_tool, the
# same for toy and synthesized data.
GOLD_TOOL = {"wiki": "WIKI", "science": "ARXIV", "medical": "WIKI"}

# Searches a judge may make per judgement: the prompt states it, the rollout enforces it, R_tool caps at it.
# Every default of this budget (prompt, rollout, reward, run settings) is this one number.
MAX_TOOL_CALLS = 3


def open_tag(name: str) -> str:
    return f"<{name}>"


def close_tag(name: str) -> str:
    return f"</{name}>"


# Generation stops right after either string: the environment answers a search, and an answer ends
# the episode. Stop strings, not token ids, because real tokenizers split tags into several pieces.
STOP_STRINGS = (close_tag(SEARCH), close_tag(ANSWER))

# Any spelling of one of our tags: case, inner whitespace, and a slash anywhere before the name
# (`< /answer >`, `<ANSWER>`). Used by the parser and to defuse untrusted text.
TAG_PATTERN = re.compile(r"<\s*(/?)\s*(think|search|information|answer)\s*>", re.IGNORECASE)


@dataclass(frozen=True)
class ToolSpec:
    """A search tool the judge may call: `NAME("query")` searches `corpus`."""

    name: str
    corpus: str
    description: str


# Tool names are what the model writes; corpus names are what the retrieval side serves. The mapping
# is data, so a config can point WIKI at any corpus (a Lucene index, a ColBERT server, a toy world).
DEFAULT_TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec("WIKI", "wiki", "encyclopedic facts about people, places, organisations, events and medicine"),
    ToolSpec("ARXIV", "arxiv", "scientific papers: methods, datasets, results and related work"),
)

_TOOL_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_CALL = re.compile(r"\A\s*([A-Za-z_][A-Za-z0-9_]*)\s*\((.*)\)\s*\Z", re.DOTALL)


def format_call(tool: str, query: str) -> str:
    """The canonical text of a call, e.g. `WIKI("Velmora river")`."""
    if not _TOOL_NAME.fullmatch(tool):
        raise ValueError(f"tool name must be an identifier, got {tool!r}")
    return f'{tool}("{query.replace(chr(34), chr(39))}")'


class ToolCall(NamedTuple):
    """One `<search>` block as read from the model: a valid call has `tool` (its registered spelling) and no
    `error`; an invalid one has `tool` None, the raw text as `query` and the reason in `error`."""

    tool: str | None
    query: str
    error: str | None = None


def parse_call(text: str, tool_names: Iterable[str]) -> ToolCall:
    """Read the inside of a `<search>` block as a `ToolCall` (tool, query, error).

    Accepted: `NAME("q")`, `NAME('q')`, `NAME(q)`; the tool name is matched case-insensitively
    and returned in its registered spelling. On any problem `tool` is None and `error` says why;
    the query is then the raw text, so the environment can echo it back.
    """
    known = {name.upper(): name for name in tool_names}
    match = _CALL.match(text)
    if match is None:
        return ToolCall(None, text.strip(), f"not a tool call of the form NAME(\"query\"): {text.strip()[:80]!r}")
    name, arg = match.group(1), match.group(2).strip()
    if len(arg) >= 2 and arg[0] == arg[-1] and arg[0] in "\"'":
        arg = arg[1:-1].strip()
    if name.upper() not in known:
        return ToolCall(None, arg, f"unknown tool {name!r}; available: {', '.join(sorted(known.values()))}")
    if not arg:
        return ToolCall(None, arg, f"empty query for tool {known[name.upper()]}")
    return ToolCall(known[name.upper()], arg)


# Chat-template control strings (`<|im_start|>`, `<|im_end|>`, `<|endoftext|>`, Llama 3's `<|eot_id|>`): a tokenizer
# reads them inside any text as real control tokens, so a candidate could close the user turn and write its own.
CONTROL_PATTERN = re.compile(r"<\|[^<>|\s]{1,64}\|>")


def _bracket(m: re.Match) -> str:
    return "&lt;" + m.group(0)[1:-1] + "&gt;"


def neutralize_tags(text: str) -> str:
    """Defuse our tags and chat control strings inside untrusted text (candidate answers, retrieved documents).

    `<answer>B</answer>` becomes `&lt;answer&gt;B&lt;/answer&gt;` and `<|im_end|>` becomes `&lt;|im_end|&gt;`:
    still readable to the model, but neither the parser, a stop string nor a tokenizer can mistake them.
    """
    return TAG_PATTERN.sub(_bracket, CONTROL_PATTERN.sub(_bracket, text))


def neutralize_special(text: str, specials: Iterable[str]) -> str:
    """Defuse every occurrence of a tokenizer's special-token strings (whatever their shape: `</s>`, `[INST]`).

    `<x>`-shaped strings become `&lt;x&gt;`; others get a word joiner (U+2060) after their first character. Our own
    tags are left alone: untrusted text already had them defused by `neutralize_tags`, and the environment's
    `<information>` block must keep its real ones."""
    for s in sorted(set(specials), key=len, reverse=True):  # longest first: `</s>` before `<s>`
        if len(s) < 2 or s not in text or TAG_PATTERN.fullmatch(s):
            continue
        safe = f"&lt;{s[1:-1]}&gt;" if s[0] == "<" and s[-1] == ">" else f"{s[0]}\u2060{s[1:]}"
        text = text.replace(s, safe)
    return text


@dataclass(frozen=True)
class Passage:
    """One retrieved document as the judge sees it."""

    id: str
    title: str
    text: str
    score: float | None = None


def render_information(passages: Sequence[Passage], note: str | None = None) -> str:
    """The `<information>` block the environment appends after a search.

    `note` carries an environment message (invalid call, empty result, budget exhausted) instead
    of, or before, the passages. Untrusted text is neutralised. Starts and ends with a newline so the
    model's next tag lands on its own line whatever the tokenizer does at the boundary.
    """
    lines: list[str] = []
    if note:
        lines.append(neutralize_tags(note))
    for rank, passage in enumerate(passages, start=1):
        title = neutralize_tags(passage.title.strip())
        text = neutralize_tags(passage.text.strip())
        lines.append(f"Doc {rank} (Title: {title}) {text}")
    if not lines:
        lines.append("No results.")
    body = "\n".join(lines)
    return f"\n{open_tag(INFORMATION)}\n{body}\n{close_tag(INFORMATION)}\n"


def _tool_lines(tools: Sequence[ToolSpec]) -> str:
    return "\n".join(f'- {t.name}("query"): {t.description}.' for t in tools)


SYSTEM_PROMPT_TOOLS = """\
You are a careful referee comparing two answers to the same question. Decide which answer serves the \
person who asked better, judging first whether its facts are true, then whether it is complete, clear and \
useful.

Work in steps. Put your reasoning inside <think> and </think>, and keep it short. When a claim in either \
answer could be checked, check it: write a search inside <search> and </search>, using exactly one of \
these tools:
{tools}
The results come back inside <information> and </information>; read them, then continue with another \
<think> block. Prefer the encyclopedia for general knowledge and the paper index for research questions. \
If a search finds nothing useful, rephrase it rather than repeating it; after {max_calls} searches, stop \
searching and decide with what you have.

End with one last <think> block that states your decision, followed by <answer>A</answer> or \
<answer>B</answer>, and nothing after it."""

SYSTEM_PROMPT_NO_TOOLS = """\
You are a careful referee comparing two answers to the same question. Decide which answer serves the \
person who asked better, judging first whether its facts are true, then whether it is complete, clear and \
useful.

Put your reasoning inside <think> and </think>, and keep it short. Then give your decision as \
<answer>A</answer> or <answer>B</answer>, with nothing after it."""

USER_TEMPLATE = """\
Question: {question}

[Answer A]
{answer_a}
[End of Answer A]

[Answer B]
{answer_b}
[End of Answer B]

Which answer is better? Where the facts can be checked, check them. Do not let the order of the answers, \
their length or their style decide for you: either position may hold the better one."""


# The compact style is for tiny judges trained from scratch on CPU (the quickstart, experiments/learning_proof.py): the
# same tags and call syntax in a few dozen tokens instead of ~300, so the prompt does not swamp a model whose whole
# context budget is a few hundred tokens. Real judges use the full style.
PROMPT_STYLES = ("full", "compact")

SYSTEM_PROMPT_COMPACT_TOOLS = """\
Verify with {calls}; think in <think></think>; end with <answer>A</answer> or <answer>B</answer>."""

SYSTEM_PROMPT_COMPACT_NO_TOOLS = """\
Think in <think></think>; end with <answer>A</answer> or <answer>B</answer>."""

# Each answer is also followed by its letter, so that a claim in an answer is followed, a few tokens on, by the letter
# of the answer that makes it: a judge that has written the value the evidence gives can then find its letter by
# the same induction copy that copies a name into a query (the tiny judge's decision step; bench/RESULTS.md).
USER_TEMPLATE_COMPACT = """\
Question: {question}
[A] {answer_a} A
[B] {answer_b} B"""


def _check_style(style: str) -> None:
    if style not in PROMPT_STYLES:
        raise ValueError(f"unknown prompt style {style!r}; choose from {PROMPT_STYLES}")


TIE_NOTE = "If neither answer is better than the other, answer <answer>tie</answer> instead."
TIE_NOTE_COMPACT = " Or <answer>tie</answer> if neither is better."


def system_prompt(tools: Sequence[ToolSpec] = DEFAULT_TOOLS, max_tool_calls: int = MAX_TOOL_CALLS,
                  style: str = "full", allow_tie: bool = False) -> str:
    """The judge's system prompt; with no tools it is the direct-judgement baseline. `allow_tie` adds the tie
    verdict (off by default: the OpenRM protocol has A or B only)."""
    _check_style(style)
    if style == "compact":
        if not tools:
            text = SYSTEM_PROMPT_COMPACT_NO_TOOLS
        else:
            calls = " or ".join(f'<search>{format_call(t.name, t.corpus)}</search>' for t in tools)
            text = SYSTEM_PROMPT_COMPACT_TOOLS.format(calls=calls)
        return text + (TIE_NOTE_COMPACT if allow_tie else "")
    text = SYSTEM_PROMPT_NO_TOOLS if not tools else SYSTEM_PROMPT_TOOLS.format(tools=_tool_lines(tools),
                                                                               max_calls=max_tool_calls)
    return text + ("\n" + TIE_NOTE if allow_tie else "")


EVIDENCE_TEMPLATE = """\
Passages retrieved for this question (use them to check the answers' facts; they may be incomplete):
{evidence}
"""


REFERENCE_TEMPLATE = """\
A reference answer to the question (trust it over either answer):
[Reference]
{reference}
[End of Reference]
"""


def user_prompt(question: str, answer_a: str, answer_b: str, evidence: str | None = None, style: str = "full",
                reference: str | None = None) -> str:
    """The comparison request. Candidate text is untrusted and has its tags neutralised. `evidence` is an
    `<information>` block from `render_information` (the retrieve-then-judge baseline), placed before the question;
    `reference`, a reference answer (Reasoning Arena shows its judge the ground truth), is placed before that."""
    _check_style(style)
    text = (USER_TEMPLATE_COMPACT if style == "compact" else USER_TEMPLATE).format(
        question=neutralize_tags(question.strip()),
        answer_a=neutralize_tags(answer_a.strip()),
        answer_b=neutralize_tags(answer_b.strip()),
    )
    if evidence is not None:
        text = EVIDENCE_TEMPLATE.format(evidence=evidence.strip()) + "\n" + text
    if reference is not None:
        text = REFERENCE_TEMPLATE.format(reference=neutralize_tags(reference.strip())) + "\n" + text
    return text


def judge_messages(
    example: Mapping[str, object],
    tools: Sequence[ToolSpec] = DEFAULT_TOOLS,
    max_tool_calls: int = MAX_TOOL_CALLS,
    evidence: str | None = None,
    style: str = "full",
    reference: str | None = None,
    allow_tie: bool = False,
) -> list[dict[str, str]]:
    """Chat messages for one judge example (the DESIGN.md record); pass `tools=()` for no tools and `evidence` (an
    `<information>` block) to judge with passages retrieved beforehand. `style`: one of `PROMPT_STYLES`.
    `reference`: a reference answer shown to the judge; `allow_tie`: the tie verdict offered (both off by
    default, as in the OpenRM protocol)."""
    question, answer_a, answer_b = str(example["question"]), str(example["answer_a"]), str(example["answer_b"])
    return [
        {"role": "system", "content": system_prompt(tools, max_tool_calls, style, allow_tie)},
        {"role": "user", "content": user_prompt(question, answer_a, answer_b, evidence, style, reference)},
    ]


def tool_names(tools: Sequence[ToolSpec]) -> tuple[str, ...]:
    return tuple(t.name for t in tools)


def tools_from_mapping(
    mapping: Mapping[str, str], descriptions: Mapping[str, str] | None = None
) -> tuple[ToolSpec, ...]:
    """Build tool specs from a config's `{TOOL: corpus}` mapping, keeping known descriptions."""
    known = {t.name: t.description for t in DEFAULT_TOOLS}
    known.update(descriptions or {})
    specs = []
    for name, corpus in mapping.items():
        if not _TOOL_NAME.fullmatch(name):
            raise ValueError(f"tool name must be an identifier, got {name!r}")
        specs.append(ToolSpec(name, corpus, known.get(name, f"search the {corpus} corpus")))
    return tuple(specs)
