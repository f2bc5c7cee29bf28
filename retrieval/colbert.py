"""ColBERTv2 late interaction with PLAID search (colbert-ai): the retriever the paper's judge searches with.

    python -m retrieval.build_index --corpus psgs_w100.tsv --backend colbert --out indexes/wiki-colbert \
        --param checkpoint=/models/colbertv2.0

`checkpoint` is a local folder: a ColBERT checkpoint (colbert-ir/colbertv2.0) or any BERT-family encoder, whose
missing 128-d projection is then drawn once, seeded, and saved inside the index so queries and passages share it.
Passages are fed to colbert as "title | text" (colbert's own collection format) with docstore row numbers as pids.
colbert-ai compiles C++ extensions on first use (minutes; cached in ~/.cache/torch_extensions) and holds the whole
compressed index in RAM at load. Encoding wants a GPU: see bench/RESULTS.md for CPU costs.
"""

from __future__ import annotations

import contextlib
import io
import json
import logging
import os
import random
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from retrieval.docstore import DocStore
from retrieval.manifest import BackendParams, folder_fingerprint

logger = logging.getLogger(__name__)

LIBRARIES = ("colbert-ai", "torch", "transformers", "faiss-cpu")
PLAID_DIR = "plaid"  # colbert's index (its index_root is our backend folder, its index name this)
ENCODER_DIR = "encoder"  # the checkpoint plus its drawn projection, when the checkpoint had none
CHECKPOINT_FILE = "checkpoint.json"
PROJECTION_SEED = 12345

# colbert keeps its configuration in a process-wide stack (`Run()`), so builds and loads take turns.
_run_lock = threading.Lock()


def _optional(value, kind: type, name: str):
    """None, or `value` as `kind`; `--param ndocs=auto` arrives as a string and means None."""
    if value is None or (isinstance(value, str) and value.lower() in ("", "auto", "none")):
        return None
    try:
        return kind(value)
    except (TypeError, ValueError):
        raise ValueError(f"colbert parameter {name} expects a {kind.__name__} or 'auto', got {value!r}") from None


@dataclass
class Params(BackendParams):
    checkpoint: str = ""  # local folder: ColBERT checkpoint (colbertv2.0) or a BERT-family encoder; required
    nbits: int = 2  # bits per residual dimension (ColBERTv2's 2-bit compression)
    doc_maxlen: int = 180  # wordpieces per passage; a 100-word DPR passage plus title is ≈ 140
    query_maxlen: int = 32  # query wordpieces; shorter queries are padded with [MASK] (query augmentation)
    kmeans_niters: int = 4  # k-means iterations for the centroids
    index_bsize: int = 64  # passages per encoder forward pass while building
    # PLAID search knobs; None ("auto") picks colbert's values for the request's topk: ncells 1/2/4, centroid
    # score threshold 0.5/0.45/0.4 and ndocs 256/1024/max(4k, 4096) for k <= 10 / <= 100 / more.
    ncells: int | None = None  # centroids probed per query token
    centroid_score_threshold: float | None = None  # centroids scoring below this are pruned from candidates
    ndocs: int | None = None  # candidates scored approximately; a quarter are decompressed and re-ranked

    LOAD_TIME: ClassVar[frozenset[str]] = frozenset({
        "checkpoint", "query_maxlen", "ncells", "centroid_score_threshold", "ndocs"})

    def __post_init__(self):
        if self.checkpoint:
            # colbert treats a path it cannot find as a hub repo id; absolute paths never look like one.
            self.checkpoint = str(Path(self.checkpoint).expanduser().resolve())
        self.ncells = _optional(self.ncells, int, "ncells")
        self.centroid_score_threshold = _optional(self.centroid_score_threshold, float, "centroid_score_threshold")
        self.ndocs = _optional(self.ndocs, int, "ndocs")
        if self.nbits not in (1, 2, 4, 8):
            raise ValueError(f"colbert nbits must be 1, 2, 4 or 8, got {self.nbits}")
        if not 8 <= self.doc_maxlen <= 512 or not 4 <= self.query_maxlen <= 512:
            raise ValueError(f"colbert needs 8 <= doc_maxlen <= 512 and 4 <= query_maxlen <= 512, got "
                             f"{self.doc_maxlen} and {self.query_maxlen}")
        if self.kmeans_niters < 1 or self.index_bsize < 1:
            raise ValueError("colbert kmeans_niters and index_bsize must be >= 1")
        if (self.ncells is not None and self.ncells < 1) or (self.ndocs is not None and self.ndocs < 1):
            raise ValueError("colbert ncells and ndocs must be >= 1 (or auto)")


def _checkpoint_dir(params: Params) -> Path:
    if not params.checkpoint:
        raise ValueError("the colbert backend needs --param checkpoint=FOLDER (e.g. a local copy of "
                         "colbert-ir/colbertv2.0); nothing is downloaded")
    path = Path(params.checkpoint)
    if not path.is_dir() or not (path / "config.json").is_file():
        raise ValueError(f"colbert checkpoint {path} is not a model folder (no config.json)")
    return path


def _has_projection(checkpoint: Path) -> bool:
    """Whether the weights hold ColBERT's `linear` layer (else colbert initialises it randomly on every load)."""
    import torch
    from safetensors import safe_open

    for f in checkpoint.glob("*.safetensors"):
        with safe_open(str(f), "pt") as weights:
            if "linear.weight" in weights.keys():
                return True
    for f in checkpoint.glob("pytorch_model*.bin"):
        if "linear.weight" in torch.load(f, map_location="cpu", weights_only=True, mmap=True):
            return True
    return False


class _LogLines(io.TextIOBase):
    """A text stream that logs each complete line colbert prints (colbert reports with print and tqdm)."""

    def __init__(self, level: int):
        self.level, self._buffer = level, ""

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        self._buffer += text
        *lines, self._buffer = self._buffer.replace("\r", "\n").split("\n")
        for line in lines:
            if line.strip():
                logger.log(self.level, "colbert: %s", line.rstrip())
        return len(text)


@contextlib.contextmanager
def _colbert_run(root: Path, show_progress: bool) -> Iterator[None]:
    """colbert's one-rank, in-process run rooted in `root`, with its prints logged and process state restored.

    colbert seeds Python/numpy/torch RNGs and sets CUDA_VISIBLE_DEVICES for its "process"; here that process is
    ours, so both are put back afterwards. Its default run root is ./experiments; we point every root at `root`.
    """
    import numpy as np
    import torch
    from colbert.infra import Run, RunConfig

    states = random.getstate(), np.random.get_state(), torch.get_rng_state()
    cuda_visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    out = _LogLines(logging.INFO if show_progress else logging.DEBUG)
    err = contextlib.nullcontext() if show_progress else contextlib.redirect_stderr(_LogLines(logging.DEBUG))
    run = RunConfig(nranks=1, avoid_fork_if_possible=True, root=str(root), experiment="colbert",
                    index_root=str(root), overwrite=False)
    try:
        with _run_lock, contextlib.redirect_stdout(out), err, Run().context(run):
            yield
    finally:
        random.setstate(states[0])
        np.random.set_state(states[1])
        torch.set_rng_state(states[2])
        if cuda_visible is None:
            os.environ.pop("CUDA_VISIBLE_DEVICES", None)
        else:
            os.environ["CUDA_VISIBLE_DEVICES"] = cuda_visible


def _colbert_config(params: Params, **extra):
    from colbert.infra import ColBERTConfig

    # model_name=None: a checkpoint's artifact.metadata may name a hub model for colbert to fetch its class
    # from; the local folder's config.json names the same architecture offline.
    return ColBERTConfig(nbits=params.nbits, doc_maxlen=params.doc_maxlen, query_maxlen=params.query_maxlen,
                         kmeans_niters=params.kmeans_niters, index_bsize=params.index_bsize, model_name=None,
                         **extra)


def _export_encoder(checkpoint: Path, params: Params, out: Path) -> None:
    """Save `checkpoint` with a seeded random projection, so indexing and every later load use the same one."""
    import torch
    from colbert.modeling.base_colbert import BaseColBERT

    torch.manual_seed(PROJECTION_SEED)
    model = BaseColBERT(str(checkpoint), colbert_config=_colbert_config(params))
    model.model.save_pretrained(out)
    model.raw_tokenizer.save_pretrained(out)


class _DocStoreTexts(Sequence):
    """The docstore as the list of strings colbert's `Collection` wants, streamed rather than held in RAM."""

    def __init__(self, docstore: DocStore):
        self.docstore = docstore

    def __len__(self) -> int:
        return len(self.docstore)

    def __getitem__(self, row: int) -> str:
        _, title, text = self.docstore[row]
        return f"{title} | {text}" if title else text

    def __iter__(self) -> Iterator[str]:
        return (self[row] for row in range(len(self)))

    def __deepcopy__(self, memo):  # colbert deep-copies its config, collection included; ours is read-only
        return self


def build(docstore: DocStore, out_dir: Path, params: Params, progress: bool = True) -> dict:
    from retrieval import colbert_compat

    checkpoint = _checkpoint_dir(params)
    colbert_compat.check_toolchain()
    colbert_compat.import_colbert()
    from colbert import Indexer
    from colbert.data import Collection

    out_dir.mkdir(parents=True, exist_ok=True)
    with _colbert_run(out_dir, progress):
        projection = _has_projection(checkpoint)
        encoder = checkpoint if projection else out_dir / ENCODER_DIR
        if not projection:
            logger.info("colbert: %s has no ColBERT projection; drawing one (seed %d) into the index",
                        checkpoint, PROJECTION_SEED)
            _export_encoder(checkpoint, params, encoder)
        collection = Collection(path=str(docstore.directory), data=_DocStoreTexts(docstore))
        indexer = Indexer(checkpoint=str(encoder), config=_colbert_config(params), verbose=1)
        indexer.index(name=PLAID_DIR, collection=collection)
    (out_dir / CHECKPOINT_FILE).write_text(json.dumps({
        "checkpoint": str(checkpoint), "fingerprint": folder_fingerprint(checkpoint),
        "projection": "checkpoint" if projection else f"drawn with seed {PROJECTION_SEED}, saved in {ENCODER_DIR}/",
    }, indent=2) + "\n", encoding="utf-8")
    meta = json.loads((out_dir / PLAID_DIR / "metadata.json").read_text(encoding="utf-8"))
    plaid_bytes = sum(f.stat().st_size for f in (out_dir / PLAID_DIR).rglob("*") if f.is_file())
    return {"num_embeddings": meta["num_embeddings"], "num_centroids": meta["num_partitions"],
            "avg_doclen": round(meta["avg_doclen"], 2),
            "plaid_bytes_per_passage": round(plaid_bytes / len(docstore), 1), "projection_from_checkpoint": projection}


class ColBERTSearcher:
    def __init__(self, index_dir: Path, params: Params):
        from retrieval import colbert_compat

        if not (index_dir / PLAID_DIR / "metadata.json").is_file():
            raise FileNotFoundError(f"{index_dir}: no colbert index ({PLAID_DIR}/metadata.json)")
        self.params = params
        encoder = index_dir / ENCODER_DIR
        if not encoder.is_dir():
            encoder = _checkpoint_dir(params)
            built = json.loads((index_dir / CHECKPOINT_FILE).read_text(encoding="utf-8"))
            if folder_fingerprint(encoder) != built["fingerprint"]:
                logger.warning("colbert checkpoint %s differs from the one %s was built with (%s); rebuild if "
                               "results look wrong", encoder, index_dir, built["checkpoint"])
        colbert_compat.check_toolchain()
        colbert_compat.import_colbert()
        from colbert import Searcher
        from colbert.data import Collection
        from colbert.infra import ColBERTConfig

        with _colbert_run(index_dir, show_progress=False):
            # Searcher insists on a collection; PLAID scoring never reads text (rows map back via our docstore).
            self._searcher = Searcher(index=PLAID_DIR, index_root=str(index_dir), checkpoint=str(encoder),
                                      collection=Collection(data=[""]), verbose=0,
                                      config=ColBERTConfig(query_maxlen=params.query_maxlen, model_name=None))
        self.n_passages = len(self._searcher.ranker.doclens)
        # colbert's Searcher keeps the PLAID knobs in a shared config it edits per call.
        self._lock = threading.Lock()

    def _knobs(self, k: int) -> dict:
        ncells, threshold, ndocs = (1, 0.5, 256) if k <= 10 else (2, 0.45, 1024) if k <= 100 else \
            (4, 0.4, max(4 * k, 4096))
        p = self.params
        # PLAID re-ranks ndocs / 4 candidates, so fewer than 4k would cut results below topk.
        return {"ncells": p.ncells or ncells,
                "centroid_score_threshold": threshold if p.centroid_score_threshold is None
                else p.centroid_score_threshold,
                "ndocs": max(p.ndocs or ndocs, 4 * k)}

    def search_rows(self, queries: Sequence[str], topk: int) -> list[list[tuple[int, float]]]:
        import torch

        out: list[list[tuple[int, float]]] = [[] for _ in queries]
        live = [i for i, q in enumerate(queries) if q.strip()]  # a blank query has no tokens to match
        k = min(topk, self.n_passages)
        if not live or k < 1:
            return out
        with self._lock, torch.inference_mode():
            self._searcher.configure(**self._knobs(k))
            Q = self._searcher.encode([queries[i] for i in live])  # [B, query_maxlen, dim], one forward pass
            for j, i in enumerate(live):
                pids, _, scores = self._searcher.dense_search(Q[j:j + 1], k=k)
                out[i] = [(int(pid), float(score)) for pid, score in zip(pids, scores, strict=True)]
        return out


def load(index_dir: Path, params: Params) -> ColBERTSearcher:
    return ColBERTSearcher(index_dir, params)
