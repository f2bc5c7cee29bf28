"""Local OpenAI-compatible servers, started as child processes on loopback, waited for, and stopped (their whole
process group) when the block ends, however it ends (a `kill` of the parent included: SIGTERM unwinds the block):

    with transformers_server("/models/smollm2") as url:      # url: http://127.0.0.1:<port>; the API is at url/v1
        ...
    with llama_cpp_server("/path/model.gguf") as url:       # llama.cpp (llama-cpp-python[server]) on a GGUF file
        ...

`transformers serve` runs any model folder in float; llama.cpp runs a GGUF file as it is quantized, several times
faster on a CPU. Used by `data_synthesis.build_dataset --serve` (and the tests) so a synthesis run can bring its own
LLM. A server that exits while starting, or does not answer in time, is a ServerError that quotes the end of its log.
"""

from __future__ import annotations

import contextlib
import importlib.util
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


def _healthy(url: str, path: str = "/health") -> bool:
    import httpx

    try:
        return httpx.get(f"{url}{path}", timeout=2.0).status_code == 200
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
def _signals_unwind() -> Iterator[None]:
    """While the block runs, SIGTERM and SIGHUP (a `kill`, a closed terminal) raise SystemExit in the main thread
    instead of ending the process on the spot, so `finally` blocks run and the servers started here are stopped
    rather than left serving. A handler someone else installed is kept; off the main thread nothing changes."""
    import threading

    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def unwind(signum, frame):
        raise SystemExit(128 + signum)

    before = {}
    for sig in (signal.SIGTERM, signal.SIGHUP):
        if signal.getsignal(sig) is signal.SIG_DFL:
            before[sig] = signal.signal(sig, unwind)
    try:
        yield
    finally:
        for sig, handler in before.items():
            signal.signal(sig, handler)


@contextlib.contextmanager
def _child_server(name: str, command: list[str], port: int, health: str, *, log: str | os.PathLike | None,
                  env: dict[str, str], startup_timeout_s: float) -> Iterator[str]:
    """Run `command` (a server that will listen on 127.0.0.1:`port`) until `health` answers 200; yield its URL; stop
    it on the way out. Its output goes to `log` (default: a temporary file, removed after a clean stop)."""
    url = f"http://127.0.0.1:{port}"
    if _healthy(url, health):
        raise ServerError(f"{url} already answers: another server holds port {port}")
    own_log = log is None
    log = Path(log) if log else Path(os.environ.get("TMPDIR", "/tmp")) / f"{name}-{os.getpid()}-{port}.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    with _signals_unwind():
        with log.open("ab") as sink:
            process = subprocess.Popen(command, stdout=sink, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                       env=env, start_new_session=True)
        clean = False
        try:
            deadline = time.monotonic() + startup_timeout_s
            while not _healthy(url, health):
                if process.poll() is not None:
                    raise ServerError(f"{name} exited with status {process.returncode} while starting; "
                                      f"its log ({log}) ends:\n{_tail(log)}")
                if time.monotonic() > deadline:
                    raise ServerError(f"{name} did not answer {url}{health} within {startup_timeout_s:.0f} s; "
                                      f"its log ({log}) ends:\n{_tail(log)}")
                time.sleep(0.2)
            yield url
            clean = True
        finally:
            _stop(process)
            if own_log and clean:
                log.unlink(missing_ok=True)


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
    command = [sys.executable, "-c", LAUNCH, "serve", str(model), "--host", "127.0.0.1", "--port", str(port),
               "--dtype", dtype, "--continuous-batching" if continuous_batching else "--no-continuous-batching"]
    env = {**os.environ, **({"OMP_NUM_THREADS": str(threads)} if threads else {})}
    with _child_server("transformers serve", command, port, "/health", log=log, env=env,
                       startup_timeout_s=startup_timeout_s) as url:
        yield url


LLAMA_CPP_INSTALL = "pip install 'llama-cpp-python[server]==0.3.36' (it compiles llama.cpp; or `make llama-cpp`)"


@contextlib.contextmanager
def llama_cpp_server(gguf: str | os.PathLike, *, log: str | os.PathLike | None = None, port: int | None = None,
                     threads: int | None = None, n_ctx: int = 4096, alias: str | None = None,
                     startup_timeout_s: float = 300.0) -> Iterator[str]:
    """llama-cpp-python's OpenAI-compatible server on the GGUF file `gguf`, on 127.0.0.1 (a free port unless
    `port`); yields the base URL once /v1/models answers. It serves one request at a time; `threads` are its
    compute threads (default: llama.cpp's), `n_ctx` the context it allocates, `alias` the model name it reports."""
    if not Path(gguf).is_file():
        raise ServerError(f"{gguf}: no such GGUF file")
    if importlib.util.find_spec("llama_cpp") is None:
        raise ServerError(f"the llama.cpp server is not installed: {LLAMA_CPP_INSTALL}")
    port = port or free_port()
    command = [sys.executable, "-m", "llama_cpp.server", "--model", str(gguf), "--host", "127.0.0.1",
               "--port", str(port), "--n_ctx", str(n_ctx), "--model_alias", alias or Path(gguf).stem]
    if threads:
        command += ["--n_threads", str(threads), "--n_threads_batch", str(threads)]
    with _child_server("llama.cpp server", command, port, "/v1/models", log=log, env=dict(os.environ),
                       startup_timeout_s=startup_timeout_s) as url:
        yield url
