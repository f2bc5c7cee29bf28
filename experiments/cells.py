"""What the experiments' tables are made of: a cell over seeds (mean ± sd), and the tournament statistics a policy
GRPO run logged. Imported by the scripts in experiments/ (agent_policy_proof, policy_learning_proof, learning_proof,
rubric_learning_proof); it runs nothing itself. Results files are written with plumbing.atomic."""

from __future__ import annotations

import json
import statistics
from collections.abc import Iterable
from pathlib import Path


def mean_sd(values: Iterable[float | None], digits: int = 2) -> str:
    """Mean ± sample sd over seeds to `digits` decimals; the mean alone for one value; "-" for none. A None (a run
    that did not report the metric) is left out."""
    kept = [v for v in values if v is not None]
    if not kept:
        return "-"
    mean = statistics.fmean(kept)
    return f"{mean:.{digits}f} ± {statistics.stdev(kept):.{digits}f}" if len(kept) > 1 else f"{mean:.{digits}f}"


def tournament_logs(run: Path) -> list[dict]:
    """The logged steps of a policy GRPO run (`train/grpo_policy.py`) that carry its tournament's statistics."""
    history = json.loads((run / "trainer_state.json").read_text())["log_history"]
    return [h for h in history if "tournament/judge_calls" in h]


def tournament_stats(run: Path) -> dict[str, float]:
    """Judge calls and tie rate per step (mean over the logged steps), wall seconds per step, steps."""
    state = json.loads((run / "trainer_state.json").read_text())
    logs = tournament_logs(run)
    runtime = next(h["train_runtime"] for h in state["log_history"] if "train_runtime" in h)
    return {"judge_calls_per_step": statistics.fmean(h["tournament/judge_calls"] for h in logs),
            "tie_rate": statistics.fmean(h["tournament/tie_rate"] for h in logs),
            "seconds_per_step": runtime / state["global_step"], "steps": state["global_step"]}
