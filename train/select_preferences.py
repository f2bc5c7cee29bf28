"""Curate DPO preference pairs with the judge (the paper's section 6): for each prompt the judge picks `chosen` and
`rejected` among its candidates, the picks are scored against the file's own labels (Table 6's selection accuracy),
and the pairs are saved as a TRL DPO dataset for `train/dpo.py`.

    python -m train.select_preferences --data ultrafeedback_binarized/train_prefs.parquet --judge judges/openrm-7b \
        --retrievers wiki=indexes/wiki arxiv=http://127.0.0.1:8001 --out runs/prefs/uf
    python -m train.select_preferences --data runs/prefs/toy.jsonl --judge toy-oracle --world_seed 0 \
        --out runs/prefs/select                                     # offline: toy candidates, the toy oracle

Writes selections.jsonl (a record per row, appended batch by batch: a rerun, after a kill too, judges only the rows
missing there, and run.json's settings must match), dataset/ (HF save_to_disk), report.json and report.md. Reading
is eval/preference_sets.py; selecting, scoring and curating eval/selection.py.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from train.preference_selection import SelectArguments, run


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    from trl import TrlParser

    from eval.selection import markdown

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    parser = TrlParser(SelectArguments)
    try:
        (args,) = parser.parse_args_and_config(args=argv)
        report = run(args)
    except (ValueError, FileNotFoundError) as exc:
        parser.exit(2, f"train.select_preferences: error: {exc}\n")
    print(markdown(report))
    return report


if __name__ == "__main__":
    main()
