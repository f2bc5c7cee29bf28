"""Evaluate a pairwise judge on a benchmark: load → judge (or read published predictions) → score → report.

    python -m eval.run --benchmark pandalm --data testset-v1.json --judge judges/openrm-7b \
        --retrievers wiki=indexes/wiki arxiv=http://127.0.0.1:8000 --out runs/eval/pandalm
    python -m eval.run --benchmark pandalm --data testset-v1.json --predictions pandalm-7b.json \
        --predictions_format pandalm --out runs/eval/pandalm-published

Writes results.json, verdicts.jsonl and run.json (judging runs; a rerun with the same settings skips the ids
already there, one with other settings is refused), report.md and report.png. The run is `eval.evaluation`'s.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from eval.evaluation import EvalArguments, evaluate
from eval.scorecard import markdown


def main(argv: Sequence[str] | None = None) -> dict:
    from trl import TrlParser

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    parser = TrlParser(EvalArguments)
    try:
        (args,) = parser.parse_args_and_config(args=argv)
        results = evaluate(args)
    except (ValueError, FileNotFoundError) as exc:  # bad input: one clear line, not a traceback
        parser.exit(2, f"eval.run: error: {exc}\n")
    print(markdown(results))
    return results


if __name__ == "__main__":
    main()
