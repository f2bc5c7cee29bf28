"""What every trainer here shares about a run: one resume rule and one run-record writer.

    trainer.train(resume_from_checkpoint=resume_point(training_args))
    write_run_record(trainer, training_args.output_dir, "dpo_run.json", {"base_model": ..., "data": ...})

Resume rule (`--resume_from_checkpoint`): empty or false starts fresh; `true` or `last` resumes from the newest
checkpoint in the output folder, and starts fresh (logged) when there is none, so the same command serves a first
run and a restart; a path resumes from that checkpoint, which must exist.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any

from plumbing import atomic

logger = logging.getLogger(__name__)

LATEST = ("true", "last")


def resume_point(training_args: Any) -> str | None:
    """The checkpoint `training_args.resume_from_checkpoint` asks for, by the rule above (None: start fresh)."""
    from transformers.trainer_utils import get_last_checkpoint

    value = training_args.resume_from_checkpoint
    if value is None or value is False or str(value).strip().lower() in ("", "false", "none"):
        return None
    if value is True or str(value).strip().lower() in LATEST:
        out = Path(training_args.output_dir)
        last = get_last_checkpoint(str(out)) if out.is_dir() else None
        if last is None:
            logger.info("no checkpoint in %s to resume from: starting fresh", out)
        return last
    if not Path(value).is_dir():
        raise FileNotFoundError(f"--resume_from_checkpoint {value}: no such checkpoint folder (or pass 'last')")
    return str(value)


def write_run_record(trainer: Any, folder: str | os.PathLike, name: str, record: dict[str, Any]) -> Path | None:
    """Write `record` as `<folder>/<name>` on the main process, atomically (a reader never sees half a file);
    returns the path, or None on the other processes."""
    if not trainer.accelerator.is_main_process:
        return None
    return atomic.write_json(Path(folder) / name, record)
