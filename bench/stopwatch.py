"""Seconds spent inside chosen functions, summed per key: a benchmark wraps them in place to split a run it does not
own (a TRL step, a rollout) into its parts. Imported by the scripts in bench/; it runs nothing itself.

    watch = Stopwatch()
    watch.wrap(ToolBox, "run", "toolbox")      # every later call, from anywhere, is timed
    watch.clear(); work(); watch["toolbox"]    # seconds since the clear
"""

from __future__ import annotations

import functools
import time
from collections import defaultdict
from collections.abc import Callable
from typing import Any


class Stopwatch:
    def __init__(self) -> None:
        self.seconds: dict[str, float] = defaultdict(float)

    def timed(self, fn: Callable, key: str) -> Callable:
        """`fn`, its wall time added to `key` on every call (however it ends)."""

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            t = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                self.seconds[key] += time.perf_counter() - t

        return wrapper

    def wrap(self, owner: Any, name: str, key: str) -> None:
        """Replace attribute `name` of `owner` (a class or a module) with its timed self."""
        setattr(owner, name, self.timed(getattr(owner, name), key))

    def clear(self) -> None:
        self.seconds.clear()

    def __getitem__(self, key: str) -> float:
        return self.seconds[key]
