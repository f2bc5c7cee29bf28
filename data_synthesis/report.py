"""What a synthesis run leaves behind: the DatasetDict, JSONL splits, the rejects file, `stats.md` (counts per
domain and split and mean lengths, like the paper's Table 1) and `summary.json` (calls, tokens, cache, drops).

Every file is written to a temporary name and renamed, so a killed run never leaves a half-written one.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from plumbing import atomic


def _words(text: str) -> int:
    return len(text.split())


def _mean(values: Sequence[int]) -> str:
    return f"{sum(values) / len(values):.1f}" if values else "-"


def length_rows(records: Mapping[str, Sequence[Mapping[str, Any]]]) -> list[dict[str, Any]]:
    """Per split and domain (and per split overall): pairs, mean words of question, positive, negative, both."""
    rows = []
    for split, recs in records.items():
        domains = sorted({r["domain"] for r in recs})
        for domain in [*domains, "all"]:
            group = [r for r in recs if domain in ("all", r["domain"])]
            pos = [_words(r["answer_a"] if r["label"] == "A" else r["answer_b"]) for r in group]
            neg = [_words(r["answer_b"] if r["label"] == "A" else r["answer_a"]) for r in group]
            rows.append({"split": split, "domain": domain, "pairs": len(group),
                         "label_a": sum(r["label"] == "A" for r in group),
                         "question": _mean([_words(r["question"]) for r in group]),
                         "positive": _mean(pos), "negative": _mean(neg), "answer": _mean(pos + neg)})
    return rows


def stats_markdown(records: Mapping[str, Sequence[Mapping[str, Any]]], drops: Counter,
                   summary: Mapping[str, Any]) -> str:
    lines = ["# Synthesised judge pairs", "",
             f"Generator: `{summary['generator']}`, prompts `{summary['prompts_version']}`, seed {summary['seed']}. "
             "Lengths are mean whitespace words.", "",
             "| split | domain | pairs | label A | question | positive | negative | answer (both) |",
             "|---|---|---:|---:|---:|---:|---:|---:|"]
    for r in length_rows(records):
        name = f"**{r['domain']}**" if r["domain"] == "all" else r["domain"]
        lines.append(f"| {r['split']} | {name} | {r['pairs']} | {r['label_a']} | {r['question']} | "
                     f"{r['positive']} | {r['negative']} | {r['answer']} |")
    lines += ["", "## Dropped", "", "| reason | count |", "|---|---:|"]
    lines += [f"| {reason} | {n} |" for reason, n in sorted(drops.items(), key=lambda kv: (-kv[1], kv[0]))]
    if not drops:
        lines.append("| (none) | 0 |")
    client = summary.get("client")
    if client:
        lines += ["", "## LLM calls", "", "| measure | value |", "|---|---:|"]
        for key in ("requests", "http_attempts", "answered", "failed", "cache_hits", "cache_hit_rate",
                    "deduplicated", "json_repairs", "prompt_tokens", "completion_tokens"):
            lines.append(f"| {key} | {client[key]} |")
        lines.append(f"| retries by reason | {client['retries'] or '-'} |")
        lines.append(f"| failures by reason | {client['failures'] or '-'} |")
    return "\n".join(lines) + "\n"


def _jsonl(rows: Iterable[Mapping[str, Any]]) -> str:
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)


def write_outputs(out: Path, records: Mapping[str, Sequence[dict[str, Any]]], rejects: Sequence[dict[str, Any]],
                  drops: Counter, summary: dict[str, Any]) -> None:
    """The DatasetDict (save_to_disk in `out`), `<split>.jsonl`, `rejects.jsonl`, `stats.md`, `summary.json`."""
    from datasets import Dataset, DatasetDict

    from data_synthesis.pairs import features

    out.mkdir(parents=True, exist_ok=True)
    for split, rows in records.items():
        atomic.write_text(out / f"{split}.jsonl", _jsonl(rows))
    atomic.write_text(out / "rejects.jsonl", _jsonl(rejects))
    feats = features()
    # An empty split needs its columns declared and one (empty) shard, or load_from_disk cannot read it back.
    splits = {split: Dataset.from_list(list(rows), features=feats) if rows else
              Dataset.from_dict({name: [] for name in feats}, features=feats) for split, rows in records.items()}
    shards = {split: 1 for split, rows in records.items() if not rows}
    DatasetDict(splits).save_to_disk(str(out), num_shards=shards or None)
    atomic.write_text(out / "stats.md", stats_markdown(records, drops, summary))
    atomic.write_text(out / "summary.json", json.dumps(summary, indent=2, ensure_ascii=False) + "\n")
