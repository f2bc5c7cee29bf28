"""A rubric generator trained by GRPO on the toy rubric task, end to end on a laptop CPU, offline: toy triplets
(toy/rubric_task.py) → a tiny generator (toy/tiny.py + rubric tokens) → a noisy SFT warm-up → GRPO with the
hybrid reward (configs/grpo_rubric_generator/tiny_cpu.yaml, toy scorer) → eval.rubrics on held-out triplets for the
warm-up and the trained generator, beside the general-rubric, pointwise and pairwise rows.

    python -m toy.rubric_quickstart --out runs/rubrics
    python -m toy.rubric_quickstart --out runs/rubrics --grpo_args '--scorer server --scorer_server URL/v1 ...'

A rerun reuses every finished stage.

By default the generator is a tiny from-scratch model (toy/tiny.py, seconds a step): it learns the rubric's JSON
format but cannot copy the query's entity from its prompt, so its gain is in validity, not in query-specific rubrics
(bench/RESULTS.md). `--model smollm2-135m-instruct` (a packaged model's short name, or a folder) trains the
pretrained model instead, which copies from its context, with configs/grpo_rubric_generator/smollm2_cpu.yaml:

    python -m toy.rubric_quickstart --out runs/rubrics-smollm2 --model smollm2-135m-instruct --sft_steps 40 \
        --sft_batch 8 --sft_learning_rate 1e-4 --grpo_steps 30
"""

from __future__ import annotations

import logging

from toy.rubric_stages import RubricQuickstartArguments, run

if __name__ == "__main__":
    from trl import TrlParser

    logging.basicConfig(level=logging.INFO, format="%(message)s")
    (parsed_args,) = TrlParser(RubricQuickstartArguments).parse_args_and_config()
    run(parsed_args)
