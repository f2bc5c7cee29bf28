"""build_index: manifest contents, atomic builds (kill -9 mid-build leaves nothing loadable), refusals."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from retrieval.build_index import IndexExistsError, build_index, main
from retrieval.corpus import CorpusError
from retrieval.manifest import ManifestError, file_sha256
from retrieval.retriever import load_index

ROOT = Path(__file__).resolve().parents[2]


def test_manifest_records_corpus_params_and_versions(corpora, tmp_path):
    corpus = corpora["wiki"]["tsv"]
    manifest = build_index(corpus, "bm25", tmp_path / "idx", {"k1": 1.2}, progress=False)
    saved = json.loads((tmp_path / "idx" / "manifest.json").read_text())
    assert saved["backend"] == "bm25" and saved["params"]["k1"] == 1.2
    assert saved["corpus_sha256"] == file_sha256(corpus) and saved["corpus_path"] == str(corpus.resolve())
    assert saved["n_passages"] == manifest.n_passages == sum(1 for _ in corpus.open()) - 1  # header line
    assert saved["libraries"]["bm25s"] == "0.3.16" and saved["build_seconds"] > 0
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no temporary folder left


def test_refuses_to_overwrite_unless_asked(corpora, tmp_path):
    out = tmp_path / "idx"
    build_index(corpora["wiki"]["tsv"], "bm25", out, progress=False)
    with pytest.raises(IndexExistsError, match="--overwrite"):
        build_index(corpora["arxiv"]["tsv"], "bm25", out, progress=False)
    assert load_index(out).manifest.corpus_sha256 == file_sha256(corpora["wiki"]["tsv"])
    build_index(corpora["arxiv"]["tsv"], "bm25", out, overwrite=True, progress=False)
    assert load_index(out).manifest.corpus_sha256 == file_sha256(corpora["arxiv"]["tsv"])


def test_failed_build_leaves_no_index_and_keeps_the_old_one(corpora, tmp_path):
    out = tmp_path / "idx"
    build_index(corpora["wiki"]["tsv"], "bm25", out, progress=False)
    bad = tmp_path / "bad.tsv"
    bad.write_text("1\tgood\tT\n2\tbroken line\n")
    with pytest.raises(CorpusError, match="bad.tsv:2"):
        build_index(bad, "bm25", out, overwrite=True, progress=False)
    assert len(load_index(out)) == 280  # the previous index is untouched
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.tsv", "idx"]
    with pytest.raises(ManifestError, match="no such index folder"):
        load_index(tmp_path / "never-built")


def test_skip_bad_lines_counts_them(tmp_path):
    corpus = tmp_path / "c.tsv"
    corpus.write_text("1\tgood one\tT\n2\tbroken\n3\tgood two\tU\n")
    manifest = build_index(corpus, "bm25", tmp_path / "idx", skip_bad_lines=True, progress=False)
    assert (manifest.n_passages, manifest.n_skipped_lines) == (2, 1)


def test_kill_mid_build_leaves_nothing_loadable_and_rebuild_works(corpora, tmp_path):
    # A corpus big enough that the build is still running when the temporary folder appears.
    corpus = tmp_path / "big.tsv"
    lines = corpora["wiki"]["tsv"].read_text().splitlines()[1:]
    with corpus.open("w") as f:
        for copy in range(150):
            for line in lines:
                id_, text, title = line.split("\t")
                f.write(f"{copy}-{id_}\t{text}\t{title}\n")
    out = tmp_path / "idx"
    cmd = [sys.executable, "-m", "retrieval.build_index", "--corpus", str(corpus), "--backend", "bm25",
           "--out", str(out), "--progress", "false"]
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while not list(tmp_path.glob(".idx.building-*")):
        assert proc.poll() is None, "build finished before it could be killed; make the corpus bigger"
        assert time.monotonic() < deadline
        time.sleep(0.005)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert not out.exists()
    with pytest.raises(ManifestError):
        load_index(out)
    assert list(tmp_path.glob(".idx.building-*"))  # the leftover is there ...
    manifest = build_index(corpus, "bm25", out, progress=False)
    assert not list(tmp_path.glob(".idx.building-*"))  # ... and the next build removes it
    assert len(load_index(out)) == manifest.n_passages == 150 * len(lines)


def test_manifest_mismatches_are_clear_errors(bm25_indexes, corpora, tmp_path):
    with pytest.raises(ManifestError, match="backend 'bm25', expected 'dense'"):
        load_index(bm25_indexes["wiki"], expect_backend="dense")
    with pytest.raises(ManifestError, match="rebuild it"):
        load_index(bm25_indexes["wiki"], expect_corpus_sha256=file_sha256(corpora["arxiv"]["tsv"]))
    with pytest.raises(ManifestError, match="build-time parameters"):
        load_index(bm25_indexes["wiki"], k1=2.0)
    assert load_index(bm25_indexes["wiki"], n_threads=2).searcher.params.n_threads == 2

    out = tmp_path / "idx"
    build_index(corpora["wiki"]["tsv"], "bm25", out, progress=False)
    path = out / "manifest.json"
    manifest = json.loads(path.read_text())
    path.write_text(json.dumps({**manifest, "n_passages": 5}))
    with pytest.raises(ManifestError, match="manifest says 5 passages, docstore holds 280"):
        load_index(out)
    path.write_text(json.dumps({**manifest, "format_version": 99}))
    with pytest.raises(ManifestError, match="format 99"):
        load_index(out)
    path.write_text("{truncated")
    with pytest.raises(ManifestError, match="unreadable manifest"):
        load_index(out)


def test_cli_reports_errors_with_exit_code_2(corpora, tmp_path, caplog):
    assert main(["--corpus", str(tmp_path / "absent.tsv"), "--backend", "bm25", "--out", str(tmp_path / "i")]) == 2
    assert "no such corpus file" in caplog.text
    assert main(["--corpus", str(corpora["wiki"]["tsv"]), "--backend", "bm25", "--out", str(tmp_path / "i"),
                 "--param", "k1=oops"]) == 2
    assert "expects a float" in caplog.text
    assert main(["--corpus", str(corpora["wiki"]["tsv"]), "--backend", "bm25", "--out", str(tmp_path / "i"),
                 "--param", "k1=1.1", "--param", "b=0.5", "--progress", "false"]) == 0
    params = load_index(tmp_path / "i").manifest.params
    assert (params["k1"], params["b"]) == (1.1, 0.5)  # a repeated --param keeps every value
