"""Downstream task files from real Wikipedia text, shaped like the real benchmarks' files, so the local
lm-evaluation-harness configs (eval/lm_eval_tasks/) run them unchanged and a real model's scores mean something
offline (the questions are `eval.wiki_questions`').

    python -m eval.wiki_downstream --out data/wiki-downstream [--n 400] [--seed 0]
    python -m eval.downstream --model runs/dpo/a --baseline smollm2-135m-instruct --data_dir data/wiki-downstream \
        --tasks truthfulqa_mc1 truthfulqa_mc2 triviaqa mmlu_pro --out runs/downstream

Written once per --out (atomic); `summary.json` counts the articles used and skipped by reason.
"""

from __future__ import annotations

import argparse
import json

from eval.wiki_questions import write


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, help="DATA_DIR to write (pass it to eval.downstream --data_dir)")
    parser.add_argument("--n", type=int, default=400, help="questions per task")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--summaries", default=None, help="a lead-section JSON file (default: the packaged one)")
    args = parser.parse_args(argv)
    if args.n < 1:
        parser.error("--n must be >= 1")
    print(json.dumps(write(args.out, args.n, args.seed, args.summaries), indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
