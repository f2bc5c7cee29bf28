"""Preference rows for judge-curated DPO data: one prompt, two or more candidate responses and whatever the file says
about which is better. Three shapes, told apart row by row, every skip, drop and adjustment counted with its reason:

- UltraFeedback raw (`instruction`, `completions[]` with `response` and `overall_score` / `fine-grained_score`) and
  our candidate JSONL (`question`/`prompt`, `candidates`, optional `ratings`), read by `eval.candidate_sets`;
- binarized pairs (`prompt`, `chosen`, `rejected`, optional `score_chosen`/`score_rejected` at the top level or in a
  `metadata` object, `prompt_id`/`id`):
  chosen/rejected as text, or as chat-message lists whose last message is the assistant's response (the earlier
  messages, the same in both, are the conversation: HuggingFaceH4/ultrafeedback_binarized, TRL's formats);
- any other JSONL through `fields` ({canonical name: the file's field}), e.g. {"prompt": "q", "chosen": "good"}.

    loaded = load_preference_sets("train_prefs.parquet")
    row = loaded.sets[0]; row.candidates, row.best, row.messages
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from eval.candidate_sets import RATINGS, CandidateSet, LoadedSets, gold_rating, read_candidate_set
from eval.loaders import COERCED, BadRow, Skip, answer_text, object_rows

logger = logging.getLogger(__name__)

CANONICAL = ("prompt", "chosen", "rejected", "score_chosen", "score_rejected", "candidates", "ratings", "id")
Message = dict[str, str]


@dataclass(frozen=True)
class PreferenceSet(CandidateSet):
    """A candidate set that may carry the file's own label and a conversation. `labelled`: the candidate the file
    calls chosen (binarized pairs: 0, the chosen response; rated sets: None). `messages`: the conversation the
    responses answer, for chat input (None: plain text)."""

    labelled: int | None = None
    messages: tuple[Message, ...] | None = None

    @property
    def best(self) -> list[int]:
        """The originally better response(s): the labelled one, unless the pair's scores tie; for a rated set, every
        candidate with the top rating; [] when the file says nothing."""
        if self.labelled is not None and not self.tied:
            return [self.labelled]
        return super().best

    @property
    def worst(self) -> list[int]:
        if self.labelled is not None and not self.tied:
            return [i for i in range(len(self.candidates)) if i != self.labelled]
        if self.ratings is None:
            return []
        return [i for i, r in enumerate(self.ratings) if r == min(self.ratings)]

    @property
    def tied(self) -> bool:
        """The original ratings do not tell the candidates apart."""
        return self.ratings is not None and len(set(self.ratings)) == 1

    @property
    def ordered(self) -> bool:
        """The file names a better response that is not every response: the row counts for selection accuracy."""
        return 0 < len(self.best) < len(self.candidates)


def parse_fields(fields: Mapping[str, str]) -> dict[str, str]:
    """Check a field mapping {canonical: file field}: known names, and a pair or a candidate list."""
    unknown = sorted(set(fields) - set(CANONICAL))
    if unknown:
        raise ValueError(f"--fields maps {CANONICAL}; unknown: {unknown}")
    pair, listed = {"chosen", "rejected"} <= set(fields), "candidates" in fields
    if pair == listed:
        raise ValueError("--fields must map either chosen and rejected (pairs) or candidates (sets), not both")
    if listed and "prompt" not in fields:
        raise ValueError("--fields must map prompt for candidate sets")
    return dict(fields)


def _mapped(row: Mapping[str, Any], fields: Mapping[str, str]) -> dict[str, Any]:
    out = {}
    for name, source in fields.items():
        if source in row:
            out[name] = row[source]
        elif name in ("prompt", "chosen", "rejected", "candidates"):
            if name != "prompt" or "chosen" not in fields:  # a pair's prompt may come from its conversation
                raise BadRow(f"missing field {source!r} (mapped to {name})")
    return out


def _messages(value: Any, what: str) -> list[Message]:
    if not isinstance(value, list) or not value:
        raise BadRow(f"{what} is not a non-empty list of chat messages")
    for m in value:
        if not isinstance(m, Mapping) or not isinstance(m.get("role"), str) or not isinstance(m.get("content"), str):
            raise BadRow(f"{what}: every message needs a role and text content")
    return [{"role": m["role"], "content": m["content"]} for m in value]


def conversation_text(messages: list[Message]) -> str:
    """What the judge is asked when the prompt is a conversation: a lone user turn as is, else every turn."""
    if len(messages) == 1 and messages[0]["role"] == "user":
        return messages[0]["content"]
    return "\n\n".join(f"{m['role']}: {m['content']}" for m in messages)


def _scores(row: Mapping[str, Any], notes: list[str]) -> Mapping[str, Any]:
    """Where a binarized row keeps its scores: top-level `score_chosen` / `score_rejected` (HuggingFaceH4's
    ultrafeedback_binarized), else the same keys inside a `metadata` object; {} when the row has none."""
    if "score_chosen" in row or "score_rejected" in row:
        return row
    meta = row.get("metadata")
    if meta is None:
        return {}
    if not isinstance(meta, Mapping):
        notes.append(f"metadata is {type(meta).__name__}, not an object: its scores ignored")
        return {}
    return meta if "score_chosen" in meta or "score_rejected" in meta else {}


def read_pair(row: Mapping[str, Any], index: int, where: str, loaded: LoadedSets) -> PreferenceSet:
    """A binarized row: candidate 0 is `chosen`, candidate 1 `rejected`, labelled 0."""
    for key in ("chosen", "rejected"):
        if key not in row:
            raise BadRow(f"missing field {key!r}")
    prompt, notes = row.get("prompt"), []
    if isinstance(row["chosen"], list) or isinstance(row["rejected"], list):
        chosen, rejected = _messages(row["chosen"], "chosen"), _messages(row["rejected"], "rejected")
        for name, turns in (("chosen", chosen), ("rejected", rejected)):
            if turns[-1]["role"] != "assistant":
                raise BadRow(f"{name}: the last message is not an assistant turn")
        if chosen[:-1] != rejected[:-1]:
            raise BadRow("chosen and rejected hold different conversations before their responses")
        messages = chosen[:-1] or (_messages(prompt, "prompt") if isinstance(prompt, list) else
                                   [{"role": "user", "content": prompt}] if isinstance(prompt, str) else None)
        if not messages:
            raise BadRow("no prompt: neither a prompt field nor a conversation before the responses")
        texts = [chosen[-1]["content"], rejected[-1]["content"]]
        notes += ["empty answer judged as is" for t in texts if not t.strip()]
    else:
        if isinstance(prompt, list):
            raise BadRow("prompt is chat messages but chosen/rejected are text")
        meta: dict[str, Any] = {}
        texts = [answer_text(row, "chosen", meta), answer_text(row, "rejected", meta)]
        notes += meta[COERCED]
        messages = None
    question = prompt if isinstance(prompt, str) else conversation_text(messages) if messages else None
    if not isinstance(question, str) or not question.strip():
        raise BadRow("no prompt text")
    ratings, scores = None, _scores(row, notes)
    if scores:
        (sc, why_c), (sr, why_r) = (gold_rating(scores[k]) if k in scores else (None, "field missing")
                                    for k in ("score_chosen", "score_rejected"))
        if sc is None or sr is None:
            notes.append(f"score unusable ({why_c if sc is None else why_r}): the chosen label alone")
        else:
            ratings = (sc, sr)
            notes += [why for why in (why_c, why_r) if why]
            if sc < sr:
                notes.append("score_chosen below score_rejected: the chosen label is kept")
    rid = row.get("prompt_id", row.get("id"))
    loaded.adjusted.extend(Skip(where, note) for note in notes)
    loaded.formats["binarized-chat" if messages else "binarized"] += 1
    return PreferenceSet(str(index) if rid is None else str(rid), index, question, tuple(texts), ratings, 0,
                         None if messages is None else tuple(messages))


def load_preference_sets(path: str | Path, rating: str = "overall_score", split: str | None = None,
                         limit: int | None = None, fields: Mapping[str, str] | None = None) -> LoadedSets:
    """The first `limit` usable rows of `path` (JSON, JSONL, parquet or an HF dataset folder) as `PreferenceSet`s.
    `rating`: the UltraFeedback completion field read as the gold rating; `fields`: see `parse_fields`. Ids may
    repeat (rows are keyed by their row number)."""
    if rating not in RATINGS:
        raise ValueError(f"rating must be one of {RATINGS}, got {rating!r}")
    fields = parse_fields(fields) if fields else None
    loaded = LoadedSets(str(path), [])
    for index, where, row in object_rows(path, split):
        if limit is not None and len(loaded.sets) >= limit:
            break
        try:
            if isinstance(row, BadRow):
                raise row
            row = _mapped(row, fields) if fields else row
            if "chosen" in row or "rejected" in row:
                got = read_pair(row, index, where, loaded)
            else:
                s = read_candidate_set(row, index, where, rating, loaded, set())
                got = PreferenceSet(s.id, s.index, s.question, s.candidates, s.ratings)
        except BadRow as exc:
            loaded.skipped.append(Skip(where, str(exc)))
            continue
        loaded.sets.append(got)
    if not loaded.sets:
        first = f"first: {loaded.skipped[0].where}: {loaded.skipped[0].reason}" if loaded.skipped else "empty file"
        raise ValueError(f"{path}: no usable rows; skipped {len(loaded.skipped)} ({first})")
    logger.info("%s: %d rows %s; skipped %s", path, len(loaded.sets), dict(loaded.formats),
                loaded.summary()["skipped_rows"])
    return loaded
