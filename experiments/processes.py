"""One experiment run as its own process: the multi-run commands (real_text_seeds, learning_grid) start each seed or
cell this way, so several can share one GPU. Imported by those scripts; it runs nothing itself."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path


def run_logged(command: list[str], log: Path | None, threads: int) -> int:
    """`command` with OMP_NUM_THREADS = `threads` (unless the caller's environment sets it), its output appended to
    `log` (a resumed run keeps the earlier lines; None: this process's own output); its exit code."""
    env = {**os.environ, "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", str(threads)),
           "TOKENIZERS_PARALLELISM": "false"}
    if log is None:
        return subprocess.run(command, env=env).returncode
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("a", encoding="utf-8") as f:
        return subprocess.run(command, stdout=f, stderr=subprocess.STDOUT, env=env).returncode
