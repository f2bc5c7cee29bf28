"""Parse a judge completion into searches, a verdict and a well-formedness report.

`parse_response(text)` receives the completion only (never the prompt) and never raises.

Well-formedness rules (a response is well formed iff it breaks none; each broken rule adds an error):

1. Blocks are `<think>`, `<search>`, `<information>`, `<answer>`, spelled exactly so (lower case, no
   inner spaces). Other spellings (`<Answer>`, `< /answer >`) are still read as tags, so they can never
   hide an action, but they make the response malformed.
2. Blocks do not nest and are all closed; no stray closing tag; nothing but whitespace between blocks.
3. The first block is `<think>`.
4. Every `<search>` is followed directly by an `<information>` block (inserted by the environment), and
   an `<information>` block only ever follows a `<search>`.
5. Exactly one `<answer>`; it is the last block, nothing but whitespace follows it, and the block
   before it is a `<think>` (the decision is reasoned, not blurted).
6. The answer's content, stripped, is exactly `A` or `B` (or `tie`, when the caller allows ties).

Reading rules (these decide what the response *does*, well formed or not):

- Text inside `<information>` is evidence, never action: tags in it are ignored up to the first
  `</information>`. The environment neutralises our tags in retrieved text (`protocol.render_information`),
  so that first closing tag is the environment's own.
- Text inside `<think>` is opaque up to `</think>`; a tag inside it is a nesting error, not an action.
- Each top-level `<search>` is one call, `(tool, query)`; a call that does not parse or names an unknown
  tool has `tool=None` and an `error` (the reward counts it as wrong tool use; it is not a format error).
- `answer` is the verdict iff there is exactly one top-level answer block and its content is A or B;
  otherwise None. A verdict can therefore be read from a malformed response; the reward decides whether
  to honour it (`RewardConfig.require_well_formed`).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import NamedTuple

from openrm.protocol import (
    ANSWER,
    DEFAULT_TOOLS,
    INFORMATION,
    SEARCH,
    TAG_PATTERN,
    THINK,
    TIE,
    VERDICTS,
    ToolCall,
    parse_call,
    tool_names,
)


class Block(NamedTuple):
    kind: str  # one of protocol.TAGS
    content: str
    start: int  # character offsets of the whole block in the completion
    end: int
    closed: bool


@dataclass
class ParsedResponse:
    searches: list[ToolCall] = field(default_factory=list)
    answer: str | None = None
    well_formed: bool = False
    errors: list[str] = field(default_factory=list)
    blocks: list[Block] = field(default_factory=list)

    @property
    def evidence(self) -> list[str]:
        return [b.content for b in self.blocks if b.kind == INFORMATION]

    @property
    def n_invalid_calls(self) -> int:
        return sum(1 for call in self.searches if call.tool is None)


_DEFAULT_TOOL_NAMES = tool_names(DEFAULT_TOOLS)


def _scan(text: str, errors: list[str]) -> list[Block]:
    """Split `text` into top-level blocks, recording structural errors."""
    blocks: list[Block] = []
    pos = 0
    open_kind: str | None = None
    open_start = content_start = 0
    for match in TAG_PATTERN.finditer(text):
        is_close, kind = match.group(1) == "/", match.group(2).lower()
        raw = match.group(0)
        if open_kind is None:
            gap = text[pos : match.start()]
            if gap.strip():
                errors.append(f"text outside tags at {pos}: {gap.strip()[:40]!r}")
            if is_close:
                errors.append(f"stray closing tag {raw!r} at {match.start()}")
                pos = match.end()
                continue
            if raw != f"<{kind}>":
                errors.append(f"non-canonical tag {raw!r} at {match.start()}")
            open_kind, open_start, content_start = kind, match.start(), match.end()
            continue
        if is_close and kind == open_kind:
            if raw != f"</{kind}>":
                errors.append(f"non-canonical tag {raw!r} at {match.start()}")
            blocks.append(Block(kind, text[content_start : match.start()], open_start, match.end(), True))
            open_kind, pos = None, match.end()
        elif open_kind != INFORMATION:
            # Inside evidence anything goes; elsewhere a foreign tag is nesting, never an action.
            errors.append(f"tag {raw!r} inside <{open_kind}> at {match.start()}")
    if open_kind is not None:
        errors.append(f"unterminated <{open_kind}> at {open_start}")
        blocks.append(Block(open_kind, text[content_start:], open_start, len(text), False))
    else:
        tail = text[pos:]
        if tail.strip():
            errors.append(f"text outside tags at {pos}: {tail.strip()[:40]!r}")
    return blocks


def _check_order(blocks: list[Block], errors: list[str]) -> None:
    if not blocks:
        errors.append("empty response: no blocks")
        return
    if blocks[0].kind != THINK:
        errors.append(f"response must start with <think>, starts with <{blocks[0].kind}>")
    for i, block in enumerate(blocks):
        nxt = blocks[i + 1].kind if i + 1 < len(blocks) else None
        prev = blocks[i - 1].kind if i > 0 else None
        if block.kind == SEARCH and nxt != INFORMATION:
            errors.append(f"<search> #{i} is not followed by <information>")
        if block.kind == INFORMATION and prev != SEARCH:
            errors.append(f"<information> #{i} does not follow a <search>")
    answers = [i for i, b in enumerate(blocks) if b.kind == ANSWER]
    if not answers:
        errors.append("no <answer> block")
    elif len(answers) > 1:
        errors.append(f"{len(answers)} <answer> blocks, expected exactly one")
    else:
        i = answers[0]
        if i != len(blocks) - 1:
            errors.append("<answer> is not the last block")
        if i == 0 or blocks[i - 1].kind != THINK:
            errors.append("<answer> is not preceded by a <think> block")


def parse_response(text: object, tools: Iterable[str] = _DEFAULT_TOOL_NAMES, allow_tie: bool = False) -> ParsedResponse:
    """Parse a judge completion. Never raises: any input yields a `ParsedResponse`. `allow_tie`: `tie` is a verdict
    too (only for a judge whose prompt offered it)."""
    if not isinstance(text, str):
        return ParsedResponse(errors=[f"completion is {type(text).__name__}, not str"])
    names = tuple(tools)
    errors: list[str] = []
    blocks = _scan(text, errors)
    _check_order(blocks, errors)

    searches = []
    for block in blocks:
        if block.kind == SEARCH and block.closed:
            tool, query, error = parse_call(block.content, names)
            searches.append(ToolCall(tool, query, error))

    answer = None
    answer_blocks = [b for b in blocks if b.kind == ANSWER]
    if len(answer_blocks) == 1 and answer_blocks[0].closed:
        content = answer_blocks[0].content.strip()
        if content in VERDICTS or (allow_tie and content == TIE):
            answer = content
        else:
            errors.append(f"answer content must be exactly A or B{' or tie' if allow_tie else ''}, "
                          f"got {content[:20]!r}")
    return ParsedResponse(searches, answer, not errors, errors, blocks)
