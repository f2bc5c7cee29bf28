"""Build a judge-pair dataset: target-aware questions over sampled documents, answered with and without them.

    python -m data_synthesis.build_dataset --corpus wiki=psgs_w100.tsv --corpus arxiv=arxiv.jsonl \
        --base-url http://localhost:8000/v1 --model Qwen/Qwen2.5-72B-Instruct \
        --n-train 27000 --n-test 2000 --out data/synth
    python -m data_synthesis.build_dataset --oracle toyworld --n-train 1000 --n-test 200 --out runs/toy-synth

Rerun the same command after a crash or kill: finished LLM requests come from `<out>/requests.jsonl`. The build, and
`--oracle NAME` (a synthesis oracle another package installs), are `data_synthesis.builder`'s.
"""

from __future__ import annotations

import logging

from data_synthesis.builder import BuildDatasetArguments, build, served_build


def main(argv: list[str] | None = None) -> int:
    from transformers import HfArgumentParser

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    logging.getLogger("httpx").setLevel(logging.WARNING)  # one line per request otherwise
    (args,) = HfArgumentParser(BuildDatasetArguments).parse_args_into_dataclasses(args=argv)
    if args.serve:
        served_build(args)
    else:
        build(args)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
