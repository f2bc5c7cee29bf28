"""Rubric evaluation on held-out preference triplets (the rows of Table 1 of the query-specific rubrics paper):
preference accuracy and paired Cohen's d of four ways to score reports, side by side in one report.

    python -m eval.rubrics --triplets runs/rubrics/data/heldout.jsonl --generator_path runs/rubrics/grpo \
        --prompt_style compact --scorer toy --out runs/rubrics/eval
    python -m eval.rubrics --triplets data/test.jsonl --generator_server http://127.0.0.1:8001/v1 \
        --generator_model rubric-gen --scorer_server http://127.0.0.1:8000/v1 --scorer_model Qwen/Qwen3-235B-A22B

The methods and their metrics are `eval.rubric_methods`'.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from eval.rubric_methods import RubricEvalArguments, run


def main(argv: Sequence[str] | None = None) -> dict:
    from trl import TrlParser

    logging.basicConfig(level=logging.INFO, format="%(message)s")
    (parsed,) = TrlParser(RubricEvalArguments).parse_args_and_config(args=argv)
    return run(parsed)


if __name__ == "__main__":
    main()
