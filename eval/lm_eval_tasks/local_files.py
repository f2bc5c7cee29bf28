"""Reads a task's local JSONL files for lm-evaluation-harness, so our task configs run offline.

The harness calls a config's `custom_dataset` with the TaskManager's metadata and the config's `dataset_kwargs`;
`data_dir` comes in as metadata: `python -m eval.downstream --data_dir DIR` sets it, as does the harness's own CLI
(`lm_eval --include_path eval/lm_eval_tasks --metadata '{"data_dir": "DIR"}' ...`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any


def json_files(data_files: dict[str, str], data_dir: str | None = None, **_metadata: Any):
    """The DatasetDict of `data_files` ({split: path relative to data_dir}), read by `datasets`' json builder."""
    import datasets

    if not data_dir:
        raise ValueError("no data_dir: pass --data_dir to eval.downstream (or --metadata '{\"data_dir\": ...}' "
                         "to lm_eval)")
    files = {split: Path(data_dir) / name for split, name in data_files.items()}
    missing = [str(p) for p in files.values() if not p.is_file()]
    if missing:
        raise FileNotFoundError(f"missing benchmark files {missing}: write them with "
                                "`python -m eval.benchmark_files --out DATA_DIR ...`")
    return datasets.load_dataset("json", data_files={split: str(p) for split, p in files.items()})
