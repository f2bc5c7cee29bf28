"""Resident memory as Linux reports it (/proc): one process's now, a whole process tree's now, and the peak of a child
command's tree over its run, with its wall time. Imported by the scripts in bench/; it runs nothing itself.

    out, seconds, peak_kb = run_measured([sys.executable, "-m", "retrieval.build_index", ...], cwd=ROOT)
"""

from __future__ import annotations

import logging
import os
import re
import subprocess
import threading
import time
from pathlib import Path

logger = logging.getLogger(__name__)


def rss_kb(pid: int | None = None) -> int:
    """VmRSS of `pid` (this process by default) in kB; 0 when the process is gone."""
    try:
        status = Path(f"/proc/{pid or os.getpid()}/status").read_text()
    except OSError:
        return 0
    match = re.search(r"VmRSS:\s+(\d+)", status)
    return int(match.group(1)) if match else 0


def tree_rss_kb(root: int) -> int:
    """RSS of `root` and all its descendants now (a build's Python and an indexer's JVM together)."""
    parents: dict[int, int] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        parents[int(stat.parent.name)] = int(fields[1])
    tree, frontier = {root}, [root]
    while frontier:
        pid = frontier.pop()
        for child, parent in parents.items():
            if parent == pid and child not in tree:
                tree.add(child)
                frontier.append(child)
    return sum(rss_kb(pid) for pid in tree)


def run_measured(command: list[str], cwd: Path) -> tuple[str, float, int]:
    """Run `command` in `cwd`; returns its stdout, wall seconds and the peak RSS (kB) of its process tree, sampled at
    5 Hz. Warns when the machine's load average says something else was running: the timings are then not clean."""
    started = time.perf_counter()
    proc = subprocess.Popen(command, cwd=cwd, stdout=subprocess.PIPE, text=True)
    peak = [0]
    load = [0.0]

    def sample():
        while proc.poll() is None:
            peak[0] = max(peak[0], tree_rss_kb(proc.pid))
            load[0] = max(load[0], os.getloadavg()[0])
            time.sleep(0.2)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    out = proc.stdout.read()
    rc = proc.wait()
    sampler.join()
    if rc != 0:
        raise RuntimeError(f"{' '.join(command)} exited with {rc}")
    if load[0] > (os.cpu_count() or 1) + 0.5:
        logger.warning("load average reached %.1f on %s cores during %r; another process competed for the CPU",
                       load[0], os.cpu_count(), command[-1][:60])
    return out, time.perf_counter() - started, peak[0]
