"""Benchmark files → judge examples (the record of DESIGN.md), each loader reporting what it skipped and why.

RewardBench, RM-Bench (3×3 style grid), PandaLM's human test set, MT-Bench human judgments, a generic pairwise
loader with presets (LLMBar, Auto-J, JudgeBench) and our own in-domain splits.
Files may be an HF `save_to_disk` folder, JSON, JSONL or parquet.

    loaded = load_benchmark("pandalm", "data/testset-v1.json")
    loaded.examples[0]["label"]  # "A" | "B" | "tie"
"""

from __future__ import annotations

import json
import logging
import math
import random
from collections import Counter
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from openrm.dataset import check_example
from plumbing.rows import BadRow, read_rows

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Skip:
    where: str  # file and row
    reason: str


@dataclass
class Loaded:
    benchmark: str
    source: str
    examples: list[dict[str, Any]]
    skipped: list[Skip] = field(default_factory=list)
    notes: dict[str, Any] = field(default_factory=dict)  # protocol facts the report prints (seed, label rule, ...)
    coerced: list[Skip] = field(default_factory=list)  # rows loaded after turning a non-text answer into text

    def skip_summary(self) -> dict[str, int]:
        return dict(Counter(s.reason for s in self.skipped).most_common())

    def coercion_summary(self) -> dict[str, int]:
        return dict(Counter(s.reason for s in self.coerced).most_common())


def object_rows(path: str | Path, split: str | None = None) -> Iterator[tuple[int, str, Any]]:
    """(index, where, row) for every row of `read_rows`; a row that is unreadable or not a JSON object comes as a
    `BadRow` for the caller to count."""
    for index, (where, row) in enumerate(read_rows(path, split)):
        if not isinstance(row, BadRow | Mapping):
            row = BadRow(f"a row must be an object, got {type(row).__name__}")
        yield index, where, row


def _text(row: Mapping[str, Any], key: str) -> str:
    if key not in row or row[key] is None:
        raise BadRow(f"missing field {key!r}")
    value = row[key]
    if not isinstance(value, str):
        raise BadRow(f"field {key!r} is {type(value).__name__}, not text")
    if not value.strip():
        raise BadRow(f"field {key!r} is empty")
    return value


COERCED = "coerced"  # meta key: what `answer_text` did to a row's answers, moved into Loaded.coerced by _collect


def _messages_text(value: list) -> str | None:
    """The assistant turns of a chat-message list, or None when `value` is not one."""
    if not value or not all(isinstance(m, Mapping) and isinstance(m.get("content"), str) for m in value):
        return None
    replies = [m["content"] for m in value if m.get("role") == "assistant"]
    return "\n\n".join(replies) if replies else None


def answer_text(row: Mapping[str, Any], key: str, meta: dict[str, Any]) -> str:
    """A candidate answer as the judge will see it. An empty or odd answer is part of a benchmark, not bad data, so
    only a missing field is a BadRow; anything that is not text becomes text and is noted in `meta[COERCED]`:
    null → "" ; true/false/numbers → Python's `str` (what PandaLM's own scripts fed their judge, e.g. "True");
    a chat-message list → its assistant turns; any other value → its JSON text. Empty text is kept and noted."""
    if key not in row:
        raise BadRow(f"missing field {key!r}")
    value = row[key]
    notes = meta.setdefault(COERCED, [])
    if isinstance(value, str):
        if not value.strip():
            notes.append("empty answer judged as is")
        return value
    if value is None:
        notes.append("null answer → empty text")
        return ""
    if isinstance(value, bool | int | float):
        notes.append(f"{type(value).__name__} answer → text")
        return str(value)
    if isinstance(value, list) and (text := _messages_text(value)) is not None:
        notes.append("chat-message list answer → its assistant turns")
        return text
    notes.append(f"{type(value).__name__} answer → JSON text")
    return json.dumps(value, ensure_ascii=False)


def check_benchmark_example(example: Mapping[str, Any]) -> None:
    """A benchmark example: like `openrm.dataset.check_example` except that answers may be empty (see answer_text)."""
    if not isinstance(example.get("question"), str) or not example["question"].strip():
        raise BadRow("no question text")
    for key in ("answer_a", "answer_b"):
        if not isinstance(example.get(key), str):
            raise BadRow(f"{key} is not text")
    if example.get("label") not in ("A", "B", "tie"):
        raise BadRow(f"label must be A, B or tie, got {example.get('label')!r}")


def _collect(benchmark: str, path: str | Path, split: str | None, convert, limit: int | None = None,
             notes: dict[str, Any] | None = None, strict: bool = False) -> Loaded:
    """Run `convert(row, index) -> example` over the file; bad rows and duplicate ids are skipped and recorded,
    coerced answers are recorded. `strict`: examples must pass `check_example` (training records: no empty answers);
    otherwise `check_benchmark_example`."""
    out = Loaded(benchmark, str(path), [], notes=dict(notes or {}))
    seen: set[str] = set()
    for index, where, row in object_rows(path, split):
        if limit is not None and len(out.examples) >= limit:
            break
        try:
            if isinstance(row, BadRow):
                raise row
            converted = convert(row, index)
            made = converted if isinstance(converted, list) else [converted]  # RM-Bench: nine pairs per row
            for example in made:
                if strict:
                    try:
                        check_example(example, where)
                    except ValueError as exc:
                        raise BadRow(str(exc).removeprefix(f"{where}: ")) from None
                else:
                    check_benchmark_example(example)
                if example["id"] in seen:
                    raise BadRow(f"duplicate id {example['id']!r}")
        except BadRow as exc:
            out.skipped.append(Skip(where, str(exc)))
            continue
        for example in made:
            seen.add(example["id"])
            out.coerced.extend(Skip(where, reason) for reason in example.get("meta", {}).pop(COERCED, []))
            out.examples.append(example)
    if out.skipped:
        logger.warning("%s: skipped %d rows: %s", path, len(out.skipped), out.skip_summary())
    if out.coerced:
        logger.info("%s: %d answers adjusted: %s", path, len(out.coerced), out.coercion_summary())
    if not out.examples:
        raise ValueError(f"{path}: no usable {benchmark} rows; skipped {len(out.skipped)}: {out.skip_summary()}")
    return out


def load_rewardbench(path: str | Path, split: str | None = None, seed: int = 0, limit: int | None = None) -> Loaded:
    """RewardBench rows (`prompt`, `chosen`, `rejected`, `subset`, `id`). The chosen answer goes to A or B by a coin
    seeded from (seed, id), so a subset or a reordering of the file keeps every example's placement."""

    def convert(row, index):
        subset = _text(row, "subset")
        rid = str(row["id"]) if row.get("id") is not None else f"{subset}-{index}"
        meta = {"subset": subset, "chosen_model": row.get("chosen_model"), "rejected_model": row.get("rejected_model")}
        chosen, rejected = answer_text(row, "chosen", meta), answer_text(row, "rejected", meta)
        position = "A" if random.Random(f"rewardbench:{seed}:{rid}").random() < 0.5 else "B"
        meta["chosen_position"] = position
        a, b = (chosen, rejected) if position == "A" else (rejected, chosen)
        return {"id": rid, "domain": f"rewardbench/{subset}", "question": _text(row, "prompt"), "answer_a": a,
                "answer_b": b, "label": position, "gold_tool": None, "meta": meta}

    return _collect("rewardbench", path, split, convert, limit,
                    {"placement": f"chosen placed A or B by a coin seeded from (seed={seed}, id)"})


PANDALM_LABELS = {0: "tie", 1: "A", 2: "B"}


def pandalm_majority(votes: list[Any]) -> str:
    """The label at least two of the three annotators gave; no majority is a BadRow."""
    try:
        votes = [int(v) for v in votes]
    except (TypeError, ValueError):
        raise BadRow(f"annotator votes must be 0, 1 or 2, got {votes}") from None
    if any(v not in PANDALM_LABELS for v in votes):
        raise BadRow(f"annotator votes must be 0, 1 or 2, got {votes}")
    vote, count = Counter(votes).most_common(1)[0]
    if 2 * count <= len(votes):
        raise BadRow(f"no majority among annotators {votes}")
    return PANDALM_LABELS[vote]


def load_pandalm(path: str | Path, split: str | None = None, limit: int | None = None) -> Loaded:
    """PandaLM's human-annotated `testset-v1.json`: label = the majority of annotator1..3 (0 tie, 1 / 2 better).

    A missing `input` is null or NaN (the public file writes NaN, which Python's json reads as a float nan)."""

    def convert(row, index):
        # A blank instruction with a real `input` is still a question: the input alone is asked.
        parts = [row.get(k) or "" for k in ("instruction", "input")]
        parts = ["" if isinstance(p, float) and math.isnan(p) else p for p in parts]
        if not all(isinstance(p, str) for p in parts):
            raise BadRow("field 'instruction' or 'input' is not text")
        question = "\n\n".join(p for p in parts if p.strip())
        votes = [row.get(f"annotator{k}") for k in (1, 2, 3)]
        if any(v is None for v in votes):
            raise BadRow("missing an annotator1..3 field")
        rid = str(row["idx"]) if row.get("idx") is not None else str(index)
        meta = {"annotators": votes, "motivation_app": row.get("motivation_app")}
        return {"id": rid, "domain": "pandalm", "question": question, "answer_a": answer_text(row, "response1", meta),
                "answer_b": answer_text(row, "response2", meta), "label": pandalm_majority(votes),
                "gold_tool": None, "meta": meta}

    return _collect("pandalm", path, split, convert, limit,
                    {"label": "majority of 3 annotators (0 = tie, 1 = response1, 2 = response2); no majority: skipped",
                     "answers": "every row with a majority label is judged; empty answers as they are, JSON "
                                "true/false/numbers as Python text (see 'adjusted answers')"})


@dataclass(frozen=True)
class PairwiseSpec:
    """Where a pairwise file keeps each part of a judge example, and how its labels read."""

    question: str
    answer_a: str
    answer_b: str
    label: str
    labels: Mapping[str, str]  # the file's label value (as text) → "A" | "B" | "tie"
    id: str | None = None  # None: the row number
    subset: str | None = None  # a field naming a sub-category: domain becomes "<benchmark>/<subset>"
    context: str | None = None  # an optional field appended to the question (e.g. an instruction's input)

    def __post_init__(self):
        bad = sorted({v for v in self.labels.values()} - {"A", "B", "tie"})
        if bad or not self.labels:
            raise ValueError(f"label map must send file values to A, B or tie; got {dict(self.labels)}")


PRESETS = {
    "llmbar": PairwiseSpec("input", "output_1", "output_2", "label", {"1": "A", "2": "B"}),
    "autoj": PairwiseSpec("prompt", "response 1", "response 2", "label", {"0": "A", "1": "B", "2": "tie"},
                          subset="scenario"),
    "judgebench": PairwiseSpec("question", "response_A", "response_B", "label", {"A>B": "A", "B>A": "B"},
                               id="pair_id", subset="source"),
}


def load_pairwise(path: str | Path, spec: PairwiseSpec, benchmark: str = "pairwise", split: str | None = None,
                  limit: int | None = None) -> Loaded:
    """Any pairwise file, read through `spec`."""

    def convert(row, index):
        if spec.label not in row or row[spec.label] is None:
            raise BadRow(f"missing field {spec.label!r}")
        raw = str(row[spec.label]).strip()
        if raw not in spec.labels:
            raise BadRow(f"label {raw!r} is not one of {sorted(spec.labels)}")
        question = _text(row, spec.question)
        if spec.context and isinstance(row.get(spec.context), str) and row[spec.context].strip():
            question = f"{question}\n\n{row[spec.context]}"
        domain = benchmark
        if spec.subset and row.get(spec.subset) not in (None, ""):
            domain = f"{benchmark}/{row[spec.subset]}"
        rid = str(row[spec.id]) if spec.id and row.get(spec.id) is not None else str(index)
        meta = {"source_label": raw}
        return {"id": rid, "domain": domain, "question": question, "answer_a": answer_text(row, spec.answer_a, meta),
                "answer_b": answer_text(row, spec.answer_b, meta), "label": spec.labels[raw], "gold_tool": None,
                "meta": meta}

    return _collect(benchmark, path, split, convert, limit,
                    {"fields": {k: getattr(spec, k) for k in ("question", "answer_a", "answer_b", "label")},
                     "labels": dict(spec.labels)})


MTBENCH_WINNERS = {"model_a": "A", "model_b": "B", "tie": "tie", "tie (bothbad)": "tie"}


def _turns(conversation: Any, role: str, where: str) -> list[str]:
    if not isinstance(conversation, list):
        raise BadRow(f"{where} must be a list of messages")
    out = [m.get("content") for m in conversation if isinstance(m, Mapping) and m.get("role") == role]
    # an empty reply is a (bad) answer the annotators judged; an empty user turn leaves nothing to judge
    if not out or not all(isinstance(t, str) and (t.strip() or role == "assistant") for t in out):
        raise BadRow(f"{where} has an empty or missing {role} turn")
    return out


def load_mtbench(path: str | Path, split: str | None = None, limit: int | None = None) -> Loaded:
    """MT-Bench human judgments (`question_id`, `model_a`, `model_b`, `winner`, `judge`, `conversation_a/_b`,
    `turn`). Turn 2 is judged on the whole two-turn exchange; each (pair, judge, turn) is one example."""

    def convert(row, index):
        winner = str(row.get("winner", "")).strip()
        if winner not in MTBENCH_WINNERS:
            raise BadRow(f"winner {winner!r} is not one of {sorted(MTBENCH_WINNERS)}")
        turn = row.get("turn", 1)
        if turn not in (1, 2):
            raise BadRow(f"turn must be 1 or 2, got {turn!r}")
        user = _turns(row.get("conversation_a"), "user", "conversation_a")
        replies = [_turns(row.get(f"conversation_{s}"), "assistant", f"conversation_{s}") for s in ("a", "b")]
        if len(user) < turn or any(len(r) < turn for r in replies):
            raise BadRow(f"conversation shorter than turn {turn}")
        if turn == 1:
            question, (a, b) = user[0], (r[0] for r in replies)
        else:
            question = f"[Turn 1]\n{user[0]}\n\n[Turn 2]\n{user[1]}\n\nJudge the replies to turn 2."
            a, b = (f"[Turn 1]\n{r[0]}\n\n[Turn 2]\n{r[1]}" for r in replies)
        rid = f"{row.get('question_id')}/t{turn}/{row.get('model_a')}-vs-{row.get('model_b')}/{row.get('judge')}"
        return {"id": rid, "domain": f"mtbench/turn{turn}", "question": question, "answer_a": a, "answer_b": b,
                "label": MTBENCH_WINNERS[winner], "gold_tool": None,
                "meta": {"question_id": row.get("question_id"), "model_a": row.get("model_a"),
                         "model_b": row.get("model_b"), "judge": row.get("judge")}}

    return _collect("mtbench", path, split, convert, limit, {"label": "winner; 'tie (bothbad)' counts as tie"})


def load_in_domain(path: str | Path, split: str | None = "test", limit: int | None = None) -> Loaded:
    """Our own judge examples (toy world or data_synthesis output): the test split, per `domain`."""

    def convert(row, index):
        example = dict(row)
        if not example.get("domain"):
            raise BadRow("missing field 'domain'")
        example["id"] = str(example.get("id", index))
        return example

    return _collect("in-domain", path, split, convert, limit, strict=True)


RMBENCH_STYLES = ("concise", "detailed", "detailed+markdown")  # the order of RM-Bench's chosen / rejected lists


RMBENCH_DOMAINS = ("chat", "code", "math", "safety-refuse", "safety-response")


def rmbench_domain(row: Mapping[str, Any], path: str | Path) -> str:
    """An RM-Bench row's domain: its `domain` field (the combined `total_dataset.json`); else its `subset`; else the
    file's name (the per-domain `chat_filtered.json`, `safety-refuse_filtered.json`, ... hold no `domain`)."""
    for key in ("domain", "subset"):
        value = row.get(key)
        if isinstance(value, str) and value.strip():
            return value.strip()
    stem = Path(path).name.split(".")[0].lower()
    found = [d for d in RMBENCH_DOMAINS if stem == d or stem.startswith((f"{d}_", f"{d}-"))]
    if not found:
        raise BadRow(f"no 'domain' or 'subset', and the file name {Path(path).name!r} names none of "
                     f"{', '.join(RMBENCH_DOMAINS)}")
    return max(found, key=len)


def load_rmbench(path: str | Path, split: str | None = None, seed: int = 0, limit: int | None = None) -> Loaded:
    """RM-Bench rows (`id`, `prompt`, `chosen` and `rejected`: three style variants each, and the domain in `domain`,
    in `subset` or in the file's name, see `rmbench_domain`): every row becomes
    the nine pairs of its chosen × rejected style grid, id `<id>/c<i>r<j>`, domain `rmbench/<chat|code|math|safety>`
    (safety-refuse and safety-response are RM-Bench's safety). The chosen answer goes to A or B by a coin seeded
    from (seed, pair id). `metrics.rmbench_accuracies` turns the grid into easy / normal / hard accuracy."""

    def convert(row, index):
        rid = str(row["id"]) if row.get("id") is not None else str(index)
        source = rmbench_domain(row, path)
        domain = source.split("-")[0]
        question = _text(row, "prompt")
        lists = {k: row.get(k) for k in ("chosen", "rejected")}
        for k, v in lists.items():
            if not isinstance(v, list) or len(v) != len(RMBENCH_STYLES):
                raise BadRow(f"field {k!r} must be a list of {len(RMBENCH_STYLES)} style variants")
        out = []
        for i in range(len(RMBENCH_STYLES)):
            for j in range(len(RMBENCH_STYLES)):
                pid = f"{rid}/c{i}r{j}"
                meta = {"rmbench_id": rid, "chosen_style": i, "rejected_style": j, "source_domain": source}
                pair = {"c": lists["chosen"][i], "r": lists["rejected"][j]}
                chosen, rejected = answer_text(pair, "c", meta), answer_text(pair, "r", meta)
                position = "A" if random.Random(f"rmbench:{seed}:{pid}").random() < 0.5 else "B"
                a, b = (chosen, rejected) if position == "A" else (rejected, chosen)
                meta["chosen_position"] = position
                out.append({"id": pid, "domain": f"rmbench/{domain}", "question": question, "answer_a": a,
                            "answer_b": b, "label": position, "gold_tool": None, "meta": meta})
        return out

    return _collect("rmbench", path, split, convert, limit,
                    {"placement": f"chosen placed A or B by a coin seeded from (seed={seed}, pair id)",
                     "grid": "3 chosen × 3 rejected styles (concise, detailed, detailed+markdown) per prompt; hard = "
                             "chosen less styled than rejected, normal = same style, easy = chosen more styled"})


BENCHMARKS = ("rewardbench", "pandalm", "mtbench", "in-domain", "pairwise", "rmbench", *PRESETS)


def load_benchmark(name: str, path: str | Path, split: str | None = None, seed: int = 0, limit: int | None = None,
                   spec: PairwiseSpec | None = None) -> Loaded:
    """Dispatch by benchmark name; `pairwise` needs a `spec`, the presets bring their own."""
    if name == "rewardbench":
        return load_rewardbench(path, split, seed, limit)
    if name == "pandalm":
        return load_pandalm(path, split, limit)
    if name == "rmbench":
        return load_rmbench(path, split, seed, limit)
    if name == "mtbench":
        return load_mtbench(path, split, limit)
    if name == "in-domain":
        return load_in_domain(path, split or "test", limit)
    if name in PRESETS or name == "pairwise":
        spec = spec or PRESETS.get(name)
        if spec is None:
            raise ValueError("--benchmark pairwise needs a field map (--fields) and a label map (--labels)")
        return load_pairwise(path, spec, name, split, limit)
    raise ValueError(f"unknown benchmark {name!r}; known: {BENCHMARKS}")
