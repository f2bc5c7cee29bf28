"""Build a search index from a corpus file: docstore + backend index + `manifest.json`.

    python -m retrieval.build_index --corpus psgs_w100.tsv --backend bm25 --out indexes/wiki-bm25
    python -m retrieval.build_index --corpus arxiv.jsonl --backend dense --out indexes/arxiv-dense \
        --param encoder=/models/all-MiniLM-L6-v2 --param index_type=hnsw

Everything is written into a hidden sibling folder that is renamed to `--out` only once the manifest is
written, so an interrupted build (Ctrl-C, kill -9, out of disk) never leaves a folder that loads.
"""

from __future__ import annotations

import logging
import os
import shutil
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from tqdm.auto import tqdm

from retrieval.corpus import CorpusError, ReadStats, read_corpus
from retrieval.docstore import DocStore, DocStoreWriter
from retrieval.manifest import Manifest, file_sha256, library_versions
from retrieval.retriever import BACKENDS, backend_module

logger = logging.getLogger(__name__)


class IndexExistsError(FileExistsError):
    pass


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _remove_stale_builds(out: Path) -> None:
    """Delete temporary folders that interrupted builds of `out` left behind (their process is gone)."""
    for tmp in out.parent.glob(f".{out.name}.building-*"):
        pid = tmp.name.rsplit("-", 1)[-1]
        if pid.isdigit() and not _pid_alive(int(pid)):
            logger.info("removing %s, left by an interrupted build", tmp)
            shutil.rmtree(tmp, ignore_errors=True)


def build_index(corpus: str | Path, backend: str, out: str | Path, params: dict | None = None,
                overwrite: bool = False, skip_bad_lines: bool = False, progress: bool = True) -> Manifest:
    """Build `out` from `corpus` with `backend`; returns the manifest written."""
    corpus, out = Path(corpus).resolve(), Path(out).resolve()
    module = backend_module(backend)
    backend_params = module.Params.from_dict(params or {})
    if out.exists() and not overwrite:
        raise IndexExistsError(f"{out} exists; pass --overwrite to replace it")
    if not corpus.is_file():
        raise CorpusError(f"{corpus}: no such corpus file")
    out.parent.mkdir(parents=True, exist_ok=True)
    _remove_stale_builds(out)
    tmp = out.parent / f".{out.name}.building-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    started = time.monotonic()
    try:
        sha = file_sha256(corpus, progress)
        stats = ReadStats()
        writer = DocStoreWriter(tmp / "docstore")
        passages = read_corpus(corpus, stats, skip_bad_lines=skip_bad_lines)
        for p in tqdm(passages, desc="docstore", unit="psg", disable=not progress, mininterval=1.0):
            writer.add(p.id, p.title, p.text)
        n = writer.close()
        if n == 0:
            raise CorpusError(f"{corpus}: no passages" + (f" ({stats.n_skipped} bad lines skipped)"
                                                          if stats.n_skipped else ""))
        if stats.n_skipped:
            logger.warning("skipped %d bad lines of %s; first: %s", stats.n_skipped, corpus, stats.skipped[0])
        extra = module.build(DocStore(tmp / "docstore"), tmp / "backend", backend_params, progress=progress) or {}
        extra["index_bytes"] = sum(f.stat().st_size for f in (tmp / "backend").rglob("*") if f.is_file())
        extra["docstore_bytes"] = sum(f.stat().st_size for f in (tmp / "docstore").rglob("*") if f.is_file())
        manifest = Manifest(
            backend=backend, params=backend_params.to_dict(), corpus_path=str(corpus), corpus_sha256=sha,
            n_passages=n, n_skipped_lines=stats.n_skipped,
            libraries=library_versions(("openrm", *module.LIBRARIES)),
            build_seconds=round(time.monotonic() - started, 3),
            built_at=datetime.now(UTC).isoformat(timespec="seconds"), extra=extra)
        manifest.write(tmp)
        if out.exists():
            old = out.parent / f".{out.name}.replaced-{os.getpid()}"
            out.rename(old)
            tmp.rename(out)
            shutil.rmtree(old, ignore_errors=True)
        else:
            tmp.rename(out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    logger.info("built %s index of %d passages at %s in %.1f s", backend, n, out, manifest.build_seconds)
    return manifest


@dataclass
class BuildIndexArguments:
    corpus: str = field(metadata={"help": "DPR tsv (id, text, title) or JSONL (id, title, contents|text|abstract); "
                                          ".gz allowed."})
    backend: str = field(metadata={"help": f"One of {sorted(BACKENDS)}."})
    out: str = field(metadata={"help": "Index folder to create."})
    param: list[str] = field(default_factory=list, metadata={
        "help": "Backend parameter KEY=VALUE, repeatable (see the backend module's Params).",
        "action": "extend"})  # `--param a=1 --param b=2` keeps both (a plain list flag keeps the last)
    overwrite: bool = field(default=False, metadata={"help": "Replace an existing index at --out."})
    skip_bad_lines: bool = field(default=False, metadata={
        "help": "Skip and count malformed corpus lines instead of stopping at the first."})
    progress: bool = field(default=True, metadata={"help": "Show progress bars."})

    def __post_init__(self):
        if self.backend not in BACKENDS:
            raise ValueError(f"--backend must be one of {sorted(BACKENDS)}, got {self.backend!r}")


def main(argv: list[str] | None = None) -> int:
    from transformers import HfArgumentParser

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    (args,) = HfArgumentParser(BuildIndexArguments).parse_args_into_dataclasses(args=argv)
    try:
        params = backend_module(args.backend).Params.from_strings(args.param).to_dict()
        manifest = build_index(args.corpus, args.backend, args.out, params, overwrite=args.overwrite,
                               skip_bad_lines=args.skip_bad_lines, progress=args.progress)
    except (CorpusError, IndexExistsError, ValueError, ImportError, OSError, RuntimeError) as exc:
        # bad input, a missing optional backend (pyserini, colbert toolchain) or a failed backend build
        logger.error("%s: %s", type(exc).__name__, exc)
        return 2
    print(f"{args.out}: {manifest.n_passages} passages, {manifest.backend}, {manifest.build_seconds:.1f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
