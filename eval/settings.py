"""What produced the verdicts in an eval `--out` folder: mode, judge, retrievers, budgets and the benchmark file's
hash, kept in `run.json` beside `verdicts.jsonl`. A resumed run must have the same settings, or it would mix verdicts
judged one way with verdicts judged another (e.g. no-tools verdicts reported as tool-mode results).

    settings = VerdictSettings.of(args)
    settings.check_or_write(Path(args.out))   # ValueError naming each difference
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from plumbing import atomic

FILE = "run.json"


def data_sha256(path: str | Path) -> str:
    """sha256 of a benchmark file, or of every file of a dataset folder (relative names and contents, sorted)."""
    path = Path(path)
    digest = hashlib.sha256()
    files = sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path]
    for file in files:
        if path.is_dir():
            digest.update(str(file.relative_to(path)).encode() + b"\0")
        with file.open("rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                digest.update(block)
    return digest.hexdigest()


@dataclass(frozen=True)
class VerdictSettings:
    """Everything that changes a verdict or an example's label. Not here: --limit, chunking, concurrency, device
    and scoring policies, which a resumed run may change freely."""

    benchmark: str
    data_sha256: str
    split: str | None
    seed: int  # RewardBench's A/B placement depends on it
    pairwise_spec: str | None  # --fields / --labels of a custom pairwise file
    mode: str
    judge: str  # checkpoint folder, or server URL + model name
    retrievers: dict[str, str]  # corpus → location; empty when the mode searches nothing
    max_completion_tokens: int | None
    max_new_tokens: int | None
    evidence_tokens: int | None  # retrieve-then-judge only
    context_policy: str  # what a prompt longer than the context becomes (openrm.context)
    max_context_tokens: int | None  # None: the checkpoint's own

    @classmethod
    def of(cls, args: Any) -> VerdictSettings:
        judge = args.judge_id()
        searches = args.mode in ("tools", "retrieve-then-judge")
        spec = f"fields={args.fields} labels={args.labels}" if args.benchmark == "pairwise" else None
        return cls(args.benchmark, data_sha256(args.data), args.split, args.seed, spec, args.mode, judge,
                   dict(sorted(args.locations.items())) if searches else {}, args.judge_max_completion_tokens,
                   args.judge_max_new_tokens, args.evidence_tokens if args.mode == "retrieve-then-judge" else None,
                   args.judge_context_policy, args.judge_max_context_tokens)

    def differences(self, other: dict[str, Any]) -> list[str]:
        mine = asdict(self)
        return [f"{k}: {other.get(k)!r} there, {v!r} now" for k, v in mine.items() if other.get(k) != v]

    def check_or_write(self, out: Path, has_verdicts: bool) -> None:
        """Write `run.json` for a fresh folder; for a folder with verdicts, refuse unless its settings are ours."""
        path = out / FILE
        if path.is_file():
            try:
                held = json.loads(path.read_text(encoding="utf-8"))
            except json.JSONDecodeError:
                raise ValueError(f"{path}: unreadable; move the folder away or pick another --out") from None
            diffs = self.differences(held)
            if diffs:
                raise ValueError(f"{out} holds verdicts judged with other settings ({'; '.join(diffs)}); "
                                 "resuming would mix them: use another --out or remove that folder")
            return
        if has_verdicts:
            raise ValueError(f"{out} holds verdicts but no {FILE}, so their settings are unknown; use another --out")
        atomic.write_json(path, asdict(self))
