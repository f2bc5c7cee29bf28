"""A `kill` of a process that started servers stops them too: SIGTERM unwinds the server block instead of leaving
its children serving (a stopped synthesis run must not hold the cores)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

import httpx
import pytest

PARENT = textwrap.dedent("""
    import os, signal, sys, time
    from plumbing.serve import _child_server, free_port

    # a test runner started under nohup passes SIGHUP on as ignored, which the block rightly leaves alone
    signal.signal(signal.SIGHUP, signal.SIG_DFL)

    port = free_port()
    command = [sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1"]
    with _child_server("http.server", command, port, "/", log=sys.argv[1], env=dict(os.environ),
                       startup_timeout_s=60) as url:
        print(url, flush=True)
        time.sleep(120)
""")


def _gone(url: str) -> bool:
    try:
        httpx.get(url, timeout=1)
    except httpx.HTTPError:
        return True
    return False


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP])
def test_killing_the_parent_stops_its_server(sig, tmp_path):
    parent = subprocess.Popen([sys.executable, "-c", PARENT, str(tmp_path / "server.log")], stdout=subprocess.PIPE,
                              text=True, env={**os.environ, "PYTHONUNBUFFERED": "1"})
    try:
        url = parent.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:") and httpx.get(url, timeout=5).status_code == 200
        parent.send_signal(sig)
        assert parent.wait(timeout=30) == 128 + sig
        deadline = time.monotonic() + 15
        while not _gone(url) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert _gone(url), "the server outlived the process that started it"
    finally:  # a failed run must not leave its server behind either: SIGTERM unwinds, SIGKILL would orphan it
        if parent.poll() is None:
            parent.terminate()
            try:
                parent.wait(timeout=30)
            except subprocess.TimeoutExpired:
                parent.kill()


def test_a_handler_someone_installed_is_kept(tmp_path):
    from plumbing.serve import _signals_unwind

    def mine(signum, frame):
        pass

    previous = signal.signal(signal.SIGTERM, mine)
    try:
        with _signals_unwind():
            assert signal.getsignal(signal.SIGTERM) is mine
        assert signal.getsignal(signal.SIGTERM) is mine
    finally:
        signal.signal(signal.SIGTERM, previous)
    with _signals_unwind():
        assert signal.getsignal(signal.SIGTERM) not in (signal.SIG_DFL, mine)
    assert signal.getsignal(signal.SIGTERM) is previous
