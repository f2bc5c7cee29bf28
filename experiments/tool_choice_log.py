"""What GRPO paid for each tool choice: a `--trajectory_log` JSONL of train/grpo_openrm.py, summarised per window of
steps by gold tool → first tool called (completions, mean reward, mean R_EM).

    .venv/bin/python -m experiments.tool_choice_log runs/x/trajectories.rank0.jsonl --window 5

If a row's reward is higher for the right tool but its count falls from window to window, the policy moves away from
the tool its reward pays (TRL's 'dapo' loss did that to the from-scratch judge's tool choice; the learning proof
uses the per-trajectory 'grpo' loss).
"""

from __future__ import annotations

import argparse
import json
import re
from collections import defaultdict
from pathlib import Path

FIRST_CALL = re.compile(r"<search>\s*([A-Za-z_]+)\s*\(")


def first_tool(completion: str) -> str:
    match = FIRST_CALL.search(completion)
    return match.group(1) if match else "none"


def summarise(lines: list[str], window: int) -> list[dict]:
    """One dict per window of steps: {"step": first step, "<gold>-><called>": (n, mean reward, mean R_EM)}."""
    cells: dict[int, dict[str, list[tuple[float, float]]]] = defaultdict(lambda: defaultdict(list))
    for n, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            step, gold, total, em = int(row["step"]), row["gold_tool"], float(row["total"]), float(row["em"])
            called = first_tool(row["completion"])
        except (json.JSONDecodeError, KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"line {n}: not a trajectory-log record ({exc})") from exc
        cells[step // window][f"{gold}->{called}"].append((total, em))
    return [{"step": w * window, **{k: (len(v), sum(t for t, _ in v) / len(v), sum(e for _, e in v) / len(v))
                                    for k, v in sorted(cells[w].items())}} for w in sorted(cells)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("log", type=Path, help="a trajectory log (one JSON line per scored completion)")
    parser.add_argument("--window", type=int, default=5, help="steps per row")
    args = parser.parse_args()
    if args.window < 1:
        parser.error("--window must be >= 1")
    for row in summarise(args.log.read_text(encoding="utf-8").splitlines(), args.window):
        cells = [f"{k} n={v[0]} R={v[1]:.2f} em={v[2]:.2f}" for k, v in row.items() if k != "step"]
        print(f"steps {row['step']}+: " + " | ".join(cells))


if __name__ == "__main__":
    main()
