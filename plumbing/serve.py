"""A local OpenAI-compatible server for a model folder: the real `transformers serve`, started as a child process
on loopback, waited for, and stopped (its whole process group) when the block ends, however it ends.

    with transformers_server("/models/smollm2") as url:      # url: http://127.0.0.1:<port>; the API is at url/v1
        ...

Used by `data_synthesis.build_dataset --serve` (and the tests) so a synthesis run can bring its own LLM. A server
that exits while starting, or does not answer /health in time, is a ServerError that quotes the end of its log.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

LAUNCH = "import sys; from transformers.cli.transformers import main; sys.argv[0] = 'transformers'; sys.exit(main())"


class ServerError(RuntimeError):
    """The server could not be started (the message quotes the end of its log)."""


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def _tail(log: Path, chars: int = 2000) -> str:
    try:
        text = log.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return "(no log)"
    return text[-chars:].strip() or "(empty log)"


def _healthy(url: str) -> bool:
    import httpx

    try:
        return httpx.get(f"{url}/health", timeout=2.0).status_code == 200
    except httpx.HTTPError:
        return False


def _stop(process: subprocess.Popen, grace_s: float = 10.0) -> None:
    if process.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout=grace_s)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()


@contextlib.contextmanager
def transformers_server(model: str | os.PathLike, *, log: str | os.PathLike | None = None, port: int | None = None,
                        continuous_batching: bool = False, threads: int | None = None, dtype: str = "auto",
                        startup_timeout_s: float = 300.0) -> Iterator[str]:
    """`transformers serve <model>` on 127.0.0.1 (a free port unless `port`), CPU unless torch sees a GPU; yields
    the base URL once /health answers. `log` collects its output (default: a temporary file, removed after a clean
    stop). `threads` sets its torch threads (OMP_NUM_THREADS)."""
    if not Path(model).is_dir():
        raise ServerError(f"{model}: not a model folder (resolve a packaged model's short name first)")
    port = port or free_port()
    url = f"http://127.0.0.1:{port}"
    if _healthy(url):
        raise ServerError(f"{url} already answers: another server holds port {port}")
    own_log = log is None
    log = Path(log) if log else Path(os.environ.get("TMPDIR", "/tmp")) / f"transformers-serve-{os.getpid()}-{port}.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    command = [sys.executable, "-c", LAUNCH, "serve", str(model), "--host", "127.0.0.1", "--port", str(port),
               "--dtype", dtype, "--continuous-batching" if continuous_batching else "--no-continuous-batching"]
    env = {**os.environ, **({"OMP_NUM_THREADS": str(threads)} if threads else {})}
    with log.open("ab") as sink:
        process = subprocess.Popen(command, stdout=sink, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                   env=env, start_new_session=True)
    clean = False
    try:
        deadline = time.monotonic() + startup_timeout_s
        while not _healthy(url):
            if process.poll() is not None:
                raise ServerError(f"transformers serve exited with status {process.returncode} while starting; "
                                  f"its log ({log}) ends:\n{_tail(log)}")
            if time.monotonic() > deadline:
                raise ServerError(f"transformers serve did not answer {url}/health within {startup_timeout_s:.0f} s; "
                                  f"its log ({log}) ends:\n{_tail(log)}")
            time.sleep(0.2)
        yield url
        clean = True
    finally:
        _stop(process)
        if own_log and clean:
            log.unlink(missing_ok=True)
