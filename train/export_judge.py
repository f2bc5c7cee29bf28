"""Export a trained judge: merge a LoRA adapter into its base (or take a full model), save model and tokenizer
(safetensors) and a `judge_card.json` saying what it is and how to run it. `Judge.from_pretrained(out)` loads it.

    python -m train.export_judge --checkpoint runs/openrm-qwen2.5-7b --out judges/openrm-7b
    python -m train.export_judge --checkpoint runs/grpo/checkpoint-500 --out judges/step500 \
        --base-model Qwen/Qwen2.5-7B-Instruct --eval-results eval/results.json --overwrite

The card starts as the training run's own (`openrm_run.json`, a `JudgeCard` written by train/grpo_openrm.py) from the
checkpoint folder or its parent, when there is one; the output folder appears atomically (written beside it, then
renamed).
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path

from train.judge_export import ExportArguments, export_judge


def main(argv: list[str] | None = None) -> Path:
    from trl import TrlParser

    (args,) = TrlParser(ExportArguments).parse_args_and_config(args=argv)
    return export_judge(args)


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")
    try:
        main()
    except (FileExistsError, ValueError) as exc:
        sys.exit(f"export_judge: {exc}")
