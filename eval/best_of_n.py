"""Best-of-N with a match judge: each prompt's N candidates play a tournament (any topology of
`openrm.tournament`), the best-ranked candidate is the pick, and picks are scored against the gold ratings.

    python -m eval.best_of_n --data ultrafeedback.jsonl --judge judges/openrm-7b --retrievers wiki=indexes/wiki \
        --topologies round_robin swiss seeded_single_elimination --budget 12 --out runs/bon/uf
    python -m eval.best_of_n --data runs/bon/toy.jsonl --judge toy-oracle --world_seed 0 --out runs/bon/toy

The judge's flags are openrm.judge_spec.JudgeSpec's, as in every command that judges. Writes
picks.jsonl, results.json and report.md; the run is `eval.picks`'.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from eval.picks import BestOfNArguments, markdown, run


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    from trl import TrlParser

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    parser = TrlParser(BestOfNArguments)
    try:
        (args,) = parser.parse_args_and_config(args=argv)
        results = run(args)
    except (ValueError, FileNotFoundError) as exc:
        parser.exit(2, f"eval.best_of_n: error: {exc}\n")
    print(markdown(results))
    return results


if __name__ == "__main__":
    main()
