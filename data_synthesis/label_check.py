"""Whether a synthesised pair's label holds, checked by rule (`data_synthesis.label_rule`) against the documents its
question was written from; writes each pair's check, the summary as JSON and its table:

    python -m data_synthesis.label_check --dataset runs/wiki-synth-llm --out runs/wiki-synth-llm/label-check
"""

from __future__ import annotations

import argparse
import json
from dataclasses import asdict
from pathlib import Path
from typing import Any

from data_synthesis.label_rule import check_pair, markdown, summary


def read_split(dataset: Path, split: str) -> list[dict[str, Any]]:
    """A build_dataset split (`<dataset>/<split>.jsonl`); a line that is not JSON stops with its line number."""
    path = dataset / f"{split}.jsonl"
    if not path.exists():
        raise SystemExit(f"{path} does not exist: --dataset takes a build_dataset output folder")
    records = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if line.strip():
            try:
                records.append(json.loads(line))
            except json.JSONDecodeError as e:
                raise SystemExit(f"{path}:{n}: not a JSON record ({e})") from None
    return records


def main(argv: list[str] | None = None) -> int:
    from plumbing import atomic

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dataset", type=Path, required=True, help="a build_dataset output folder")
    parser.add_argument("--split", default="test", help="which split's JSONL to check")
    parser.add_argument("--out", type=Path, required=True, help="where label_check.json/.md and pairs.jsonl go")
    args = parser.parse_args(argv)
    checks = [check_pair(r) for r in read_split(args.dataset, args.split)]
    s = summary(checks)
    atomic.write_jsonl(args.out / "pairs.jsonl", [asdict(c) for c in checks])
    atomic.write_json(args.out / "label_check.json", s)
    atomic.write_text(args.out / "label_check.md", markdown(s))
    print(markdown(s), end="")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
