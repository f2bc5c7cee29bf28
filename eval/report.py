"""Lays several eval runs side by side like the paper's Tables 2–3, the papers' published rows beneath:

    python -m eval.report runs/eval/pandalm-notools runs/eval/pandalm-tools --out runs/eval/pandalm.md

The scoring and the tables are `eval.scorecard`'s.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from pathlib import Path

from eval.scorecard import PUBLISHED, comparison_table, published_rows, published_table


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Lay several eval runs side by side (a paper-style table).")
    parser.add_argument("runs", nargs="+", help="eval output folders (each holding results.json)")
    parser.add_argument("--out", help="write the table here as well as printing it")
    parser.add_argument("--no-published", action="store_true",
                        help="leave out the papers' published rows (eval/data/published.json)")
    args = parser.parse_args(argv)
    runs = []
    for folder in args.runs:
        path = Path(folder) / "results.json"
        if not path.is_file():
            parser.error(f"{path}: no results.json (run python -m eval.run first)")
        runs.append(json.loads(path.read_text(encoding="utf-8")))
    published = [] if args.no_published else published_rows(sorted({r.get("benchmark") for r in runs}))
    table = comparison_table(runs)
    if published:
        table += ("\n\n" + published_table(published) + "\n\nSource: "
                  + json.loads(PUBLISHED.read_text(encoding="utf-8"))["source"] + " Our `Overall` / `Score` columns "
                  "count a pair as right only when both orders agree on the right answer; `1 order` scores each "
                  "order alone, as the papers do.")
    print(table)
    if args.out:
        Path(args.out).write_text(table + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
