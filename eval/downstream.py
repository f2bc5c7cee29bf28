"""Downstream evaluation of a DPO-trained policy against its base model (the paper's Table 5): EleutherAI's
lm-evaluation-harness (HF backend) scores both checkpoints on TruthfulQA MC1/MC2, MMLU-Pro and TriviaQA, and this
writes them side by side: table.md (Δ = model − baseline in points, Δ % = 100·Δ / baseline), results.json and plot.png.

    python -m eval.downstream --model runs/dpo/final --baseline Qwen/Qwen2.5-3B --data_dir data/downstream \
        --out runs/downstream
    python -m eval.downstream --model runs/dpo/final --baseline Qwen/Qwen2.5-3B --hub_tasks  # harness's hub tasks

Offline by default: our task configs (eval/lm_eval_tasks/, the harness's own with local files) read the JSONL under
--data_dir that `python -m eval.benchmark_files` writes. The wiring is `eval.lm_harness`'.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from eval.lm_harness import DownstreamArguments, Row, markdown_table, run


def main(argv: Sequence[str] | None = None) -> list[Row]:
    from trl import TrlParser

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    parser = TrlParser(DownstreamArguments)
    try:
        (parsed,) = parser.parse_args_and_config(args=argv)
        result = run(parsed)
    except (ValueError, FileNotFoundError) as exc:
        parser.exit(2, f"eval.downstream: error: {exc}\n")
    print(markdown_table(result, parsed.baseline, parsed.model))
    return result


if __name__ == "__main__":
    main()
