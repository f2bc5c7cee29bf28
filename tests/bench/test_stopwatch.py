"""The stopwatch times the functions it wraps in place, per key, from any caller, even when they raise."""

from __future__ import annotations

import time
import types

import pytest

from bench.stopwatch import Stopwatch


class Worker:
    def run(self, seconds: float) -> str:
        """Sleeps."""
        time.sleep(seconds)
        return "done"

    def fail(self) -> None:
        time.sleep(0.02)
        raise RuntimeError("no")


def test_wrapped_methods_add_their_time_under_their_key_and_keep_their_name():
    watch = Stopwatch()
    owner = type("Owner", (Worker,), {})
    watch.wrap(owner, "run", "work")
    watch.wrap(owner, "fail", "work")
    assert owner().run(0.02) == "done" and owner.run.__name__ == "run" and owner.run.__doc__ == "Sleeps."
    with pytest.raises(RuntimeError):
        owner().fail()
    assert 0.04 <= watch["work"] < 1.0
    assert watch["other"] == 0.0
    watch.clear()
    assert watch["work"] == 0.0


def test_a_module_function_is_wrapped_for_every_later_caller():
    module = types.SimpleNamespace(step=lambda: time.sleep(0.01))
    watch = Stopwatch()
    watch.wrap(module, "step", "step")
    module.step()
    module.step()
    assert watch["step"] >= 0.02
