"""Judging a benchmark with an `openrm.judge.Judge`, resumably: every verdict is appended to `verdicts.jsonl` as soon
as its chunk is done, and a rerun skips the ids already there. Three modes: `tools` (the trained protocol),
`no-tools` (direct judgement) and `retrieve-then-judge` (passages for the question go into the prompt, no tool loop).
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from openrm.evidence import Evidence

logger = logging.getLogger(__name__)

MODES = ("tools", "no-tools", "retrieve-then-judge")


def prediction_of(verdict: Any) -> str:
    """A `Verdict` as a prediction: its winner, or "fail" when neither order produced a parseable answer."""
    if all(run.answer is None for run in verdict.orders):
        return "fail"
    return verdict.winner


class VerdictStore:
    """Append-only JSONL of per-example verdict records, keyed by example id (or by the tuple of the `key` fields,
    e.g. ("topology", "id") for best-of-N picks).

    Opening it reads what is there; a last line cut short by a killed run is dropped (and truncated away) so the
    example is judged again. Any other unreadable line is an error: it means the file is not ours."""

    def __init__(self, path: str | Path, key: str | tuple[str, ...] = "id"):
        self.path = Path(path)
        self.key = key
        self.records: dict[Any, dict[str, Any]] = {}
        self._lock = threading.Lock()
        if self.path.exists():
            self._load()

    def _load(self) -> None:
        raw = self.path.read_bytes()
        complete, newline, tail = raw.rpartition(b"\n")  # every record is written with its newline in one write
        if tail:
            logger.warning("%s: dropping a truncated last line (that example will be judged again)", self.path)
            with self.path.open("r+b") as f:
                f.truncate(len(complete) + len(newline))
        for n, line in enumerate(complete.split(b"\n") if newline else [], start=1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
                fields = (self.key,) if isinstance(self.key, str) else self.key
                if not isinstance(record, dict) or any(f not in record for f in fields):
                    raise ValueError("not a verdict record")
            except ValueError as exc:
                raise ValueError(f"{self.path}:{n}: unreadable verdict record ({exc}); move the file away or "
                                 "pick another --out") from None
            if self.key_of(record) in self.records:
                raise ValueError(f"{self.path}:{n}: example {self.key_of(record)!r} appears twice")
            self.records[self.key_of(record)] = record

    def key_of(self, record: dict[str, Any]) -> Any:
        return record[self.key] if isinstance(self.key, str) else tuple(record[f] for f in self.key)

    def __contains__(self, key: Any) -> bool:
        return key in self.records

    def __len__(self) -> int:
        return len(self.records)

    def add(self, records: Sequence[dict[str, Any]]) -> None:
        """Append and fsync, so a finished chunk survives a kill."""
        with self._lock:
            fresh = [r for r in records if self.key_of(r) not in self.records]
            if not fresh:
                return
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with self.path.open("a", encoding="utf-8") as f:
                f.write("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in fresh))
                f.flush()
                os.fsync(f.fileno())
            self.records.update((self.key_of(r), r) for r in fresh)


def record_of(example: dict[str, Any], verdict: Any, mode: str, seconds: float,
              evidence: str | None = None) -> dict[str, Any]:
    summary = verdict.summary()
    record = {"id": example["id"], "domain": example["domain"], "label": example["label"],
              "prediction": prediction_of(verdict), "p_a": summary["p_a"], "consistent": summary["consistent"],
              "searches": sum(len(o["searches"]) for o in summary["orders"]),
              "unparsed_orders": sum(o["answer"] is None for o in summary["orders"]),
              "seconds": round(seconds, 4), "mode": mode, "context": summary["context"], "orders": summary["orders"]}
    if evidence is not None:
        record["evidence"] = evidence
    return record


def judge_examples(judge: Any, examples: Sequence[dict[str, Any]], store: VerdictStore, mode: str = "tools",
                   chunk_size: int = 16, concurrency: int = 1, evidence: Evidence | None = None,
                   progress: bool = True) -> int:
    """Judge every example whose id is not yet in `store`, `chunk_size` pairs per `compare_batch` call, with up to
    `concurrency` calls in flight (for a served judge); returns how many were judged now."""
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
    if (mode == "retrieve-then-judge") != (evidence is not None):
        raise ValueError("retrieve-then-judge needs an Evidence retriever, and only it uses one")
    if chunk_size < 1 or concurrency < 1:
        raise ValueError(f"chunk_size and concurrency must be >= 1, got {chunk_size}, {concurrency}")
    todo = [e for e in examples if e["id"] not in store]
    if len(todo) < len(examples):
        logger.info("%d of %d examples already judged in %s; judging the other %d", len(examples) - len(todo),
                    len(examples), store.path, len(todo))
    chunks = [todo[i:i + chunk_size] for i in range(0, len(todo), chunk_size)]

    def run(chunk: list[dict[str, Any]]) -> int:
        start = time.perf_counter()
        info = evidence([e["question"] for e in chunk]) if evidence is not None else None
        pairs = [(e["question"], e["answer_a"], e["answer_b"]) for e in chunk]
        references = [e.get("reference") if isinstance(e.get("reference"), str) else None for e in chunk]
        if any(references):  # an example's reference answer: shown by a judge run with show_reference
            verdicts = judge.compare_batch(pairs, evidence=info, references=references)
        else:
            verdicts = judge.compare_batch(pairs, evidence=info)
        per = (time.perf_counter() - start) / len(chunk)
        store.add([record_of(e, v, mode, per, info[i] if info else None)
                   for i, (e, v) in enumerate(zip(chunk, verdicts, strict=True))])
        return len(chunk)

    from tqdm.auto import tqdm

    done = 0
    with tqdm(total=len(todo), desc=f"judging ({mode})", unit="pair", disable=not progress) as bar:
        if concurrency == 1:
            for chunk in chunks:
                done += run(chunk)
                bar.update(len(chunk))
        else:
            with ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix="judge") as pool:
                for future in as_completed([pool.submit(run, c) for c in chunks]):
                    n = future.result()
                    done += n
                    bar.update(n)
    return done
