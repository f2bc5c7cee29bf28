"""The quickstarts' one stage runner: a stage's folder is reused when it was made from the same inputs, rebuilt when
not, and a training stage interrupted midway resumes from its newest checkpoint.

    model = built(out / "warm", {"base": str(base), "steps": 40}, lambda: sft(...), "the SFT warm-up")
    run = trained(out / "grpo", {"model": str(model), "values": values}, 30, policy_trainer.RUN_FILE,
                  lambda resume: policy_trainer.train_policy(*policy_trainer.configs(
                      CONFIG, resume_from_checkpoint=resume, **values)), "GRPO of the policy")
"""

from __future__ import annotations

import json
import logging
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

from plumbing.records import STAGE

logger = logging.getLogger("toy.stages")



def as_json(value: Any) -> Any:
    """`value` as it reads back from JSON (tuples as lists, paths as strings), so a marker compares equal to the
    inputs it was written from."""
    return json.loads(json.dumps(value, default=str))


def built(out: Path, want: dict[str, Any], build: Callable[[], Any], what: str, marker: str = STAGE,
          log: Callable[..., None] = logger.info) -> Path:
    """`build()` into `out` unless `out/<marker>` records the same `want`; the marker is written last, so a build
    cut short is redone."""
    done, want = out / marker, as_json(want)
    if done.exists() and json.loads(done.read_text()) == want:
        log("reusing %s at %s", what, out)
        return out
    log("%s into %s", what, out)
    build()
    out.mkdir(parents=True, exist_ok=True)
    done.write_text(json.dumps(want) + "\n")
    return out


def trained(out: Path, origin: dict[str, Any], steps: int, run_file: str, train: Callable[[str | None], Any],
            what: str, log: Callable[..., None] = logger.info) -> Path:
    """A training stage of `steps` into `out`: `train(resume)` runs it, where `resume` is the newest checkpoint an
    interrupted run of the same `origin` left (None: start afresh). A folder made from another origin is
    discarded; one whose run record (`run_file`) reached `steps` is reused. What it started from is its `stage.json`."""
    from transformers.trainer_utils import get_last_checkpoint

    marker, origin = out / STAGE, as_json(origin)
    if out.is_dir() and (not marker.exists() or json.loads(marker.read_text()) != origin):
        log("discarding %s: it started from other inputs or settings", out)
        shutil.rmtree(out)
    run = out / run_file
    if run.exists() and json.loads(run.read_text())["global_step"] >= steps:
        log("reusing %s at %s", what, out)
        return out
    out.mkdir(parents=True, exist_ok=True)
    marker.write_text(json.dumps(origin) + "\n")
    last = get_last_checkpoint(str(out))
    log("%s, %d steps%s", what, steps, f" (resuming {last})" if last else "")
    train(last)
    return out


def on_gpu() -> bool:
    """Whether the stages train and judge on a CUDA GPU (one is visible) rather than the CPU. Weights stay float32
    either way, so a GPU run repeats the CPU recipe; only the speed differs."""
    import torch

    return torch.cuda.is_available()


def write_task_files(out: Path, parts: dict[str, Any]) -> Path:
    """A task's files: each `name -> rows` as `out/<name>.jsonl`, one JSON record a line."""
    out.mkdir(parents=True, exist_ok=True)
    for name, rows in parts.items():
        with (out / f"{name}.jsonl").open("w", encoding="utf-8") as f:
            for row in rows:
                f.write(json.dumps(row) + "\n")
    return out
