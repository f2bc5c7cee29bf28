"""Dense retrieval: a sentence-transformers encoder plus a faiss index (exact Flat, HNSW graph, or IVF-PQ).

    python -m retrieval.build_index --corpus psgs_w100.tsv --backend dense --out indexes/wiki-e5 \
        --param encoder=/models/e5-base-v2 --param index=ivfpq --param passage_prompt="passage: " \
        --param query_prompt="query: " --param cache=/scratch/wiki-e5-embeddings

`encoder` is a local sentence-transformers folder (a plain transformers encoder gets mean pooling); nothing is
downloaded. Passages are encoded as docstore rows in order, so faiss ids are docstore rows.

Index kinds and what wiki-18 (21M passages, 768-d) costs in RAM, from bench/RESULTS.md's per-passage numbers:
  flat   exact inner product / L2; 4·dim bytes per passage (≈ 65 GB): use `mmap=true` to page it from disk.
  hnsw   graph over the full vectors; ≈ 4·dim + 8·hnsw_m bytes per passage; `ef_search` trades recall for speed.
  ivfpq  `nlist` k-means cells, `pq_m`-byte codes (+ 8-byte ids); ≈ 100 bytes per passage at pq_m=96 (2 GB);
         `nprobe` cells are scanned per query. Trained on a seeded sample encoded before the full pass.
`mmap=true` (load time) maps the stored vectors or inverted lists instead of reading them into RAM (faiss's
IO_FLAG_MMAP_IFC); the OS page cache then decides what stays resident. `faiss_gpu=true` (load time, faiss-gpu)
shards a flat or IVF index over all visible GPUs in float16, the usual cure for faiss-GPU running out of memory
on wiki-18. Encoding is the slow part (hours for 21M passages even on a GPU): with `cache=DIR` each shard of
embeddings is saved as it completes, so a rerun of an interrupted build re-encodes only what was missing.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import numpy as np

from plumbing import atomic
from retrieval.docstore import DocStore
from retrieval.manifest import BackendParams, file_sha256, folder_fingerprint

logger = logging.getLogger(__name__)

LIBRARIES = ("faiss-cpu", "sentence-transformers", "torch", "transformers")
INDEX_FILE = "index.faiss"
ENCODER_FILE = "encoder.json"
KINDS = ("flat", "hnsw", "ivfpq")
METRICS = ("ip", "l2")
TRAIN_SEED = 0


@dataclass
class Params(BackendParams):
    encoder: str = ""  # local sentence-transformers (or transformers encoder) folder; required
    index: str = "flat"  # flat | hnsw | ivfpq
    metric: str = "ip"  # ip (with normalize: cosine) | l2
    normalize: bool = True  # unit-length embeddings
    passage_prompt: str = ""  # prepended to passages ("passage: " for e5); "" = the encoder's own, if any
    query_prompt: str = ""  # prepended to queries ("query: " for e5); "" = the encoder's own, if any
    max_length: int = 0  # encoder tokens per text; 0 = the encoder's max_seq_length
    batch_size: int = 128  # texts per encoder forward pass
    device: str = "auto"  # encoder device: auto (cuda when available) | cpu | cuda | cuda:N
    fp16: bool = True  # half-precision encoder on CUDA (ignored on CPU)
    hnsw_m: int = 32  # graph degree
    ef_construction: int = 200  # candidate list while building the graph
    ef_search: int = 128  # candidate list while searching (raised to topk when smaller)
    nlist: int = 0  # IVF cells; 0 = 4·sqrt(N), at most N/39 so k-means has enough points per cell
    pq_m: int = 0  # PQ sub-quantizers = bytes per code at pq_nbits 8; 0 = dim/8; must divide dim
    pq_nbits: int = 8  # bits per sub-quantizer code (needs >= 2**pq_nbits training passages)
    train_size: int = 0  # IVF-PQ training sample; 0 = min(N, 64·max(nlist, 2**pq_nbits))
    nprobe: int = 32  # IVF cells scanned per query
    mmap: bool = False  # map the index file instead of reading it into RAM
    faiss_gpu: bool = False  # search on all GPUs (faiss-gpu; flat and ivfpq only)
    cache: str = ""  # folder for embedding shards so an interrupted build resumes; "" = none
    shard_size: int = 100_000  # passages per cached shard

    LOAD_TIME: ClassVar[frozenset[str]] = frozenset({
        "encoder", "query_prompt", "batch_size", "device", "fp16", "ef_search", "nprobe", "mmap", "faiss_gpu"})

    def __post_init__(self):
        if self.encoder:
            self.encoder = str(Path(self.encoder).expanduser().resolve())
        if self.cache:
            self.cache = str(Path(self.cache).expanduser().resolve())
        if self.index not in KINDS:
            raise ValueError(f"dense index must be one of {KINDS}, got {self.index!r}")
        if self.metric not in METRICS:
            raise ValueError(f"dense metric must be one of {METRICS}, got {self.metric!r}")
        for name in ("batch_size", "hnsw_m", "ef_construction", "ef_search", "nprobe", "shard_size"):
            if getattr(self, name) < 1:
                raise ValueError(f"dense {name} must be >= 1, got {getattr(self, name)}")
        for name in ("max_length", "nlist", "pq_m", "train_size"):
            if getattr(self, name) < 0:
                raise ValueError(f"dense {name} must be >= 0 (0 = automatic), got {getattr(self, name)}")
        if not 1 <= self.pq_nbits <= 16:
            raise ValueError(f"dense pq_nbits must be in 1..16, got {self.pq_nbits}")
        if self.faiss_gpu and self.index == "hnsw":
            raise ValueError("faiss has no GPU HNSW; use index=flat or ivfpq with faiss_gpu, or faiss_gpu=false")
        if self.faiss_gpu and self.mmap:
            raise ValueError("mmap and faiss_gpu exclude each other: a GPU index is copied into GPU memory")


def _encoder_dir(params: Params) -> Path:
    if not params.encoder:
        raise ValueError("the dense backend needs --param encoder=FOLDER (a local sentence-transformers model, "
                         "e.g. a copy of intfloat/e5-base-v2); nothing is downloaded")
    path = Path(params.encoder)
    if not path.is_dir() or not (path / "config.json").is_file():
        raise ValueError(f"dense encoder {path} is not a model folder (no config.json)")
    return path


class _Encoder:
    """The sentence-transformers model with our prompt, length and normalisation settings."""

    def __init__(self, params: Params, passage_prompt: str | None = None):
        import torch
        from sentence_transformers import SentenceTransformer

        device = params.device
        if device == "auto":
            device = "cuda" if torch.cuda.is_available() else "cpu"
        path = _encoder_dir(params)
        self.model = SentenceTransformer(str(path), device=device, local_files_only=True)
        if device.startswith("cuda") and params.fp16:
            self.model.half()
        if params.max_length:
            self.model.max_seq_length = params.max_length
        self.params = params
        dimension = getattr(self.model, "get_embedding_dimension", None) or self.model.get_sentence_embedding_dimension
        self.dim = int(dimension())
        prompts = self.model.prompts or {}
        # an explicit prompt wins; otherwise the encoder's configured query / document prompt, if it has one
        self.query_prompt = params.query_prompt or prompts.get("query", "")
        self.passage_prompt = passage_prompt if passage_prompt is not None else (
            params.passage_prompt or next((prompts[k] for k in ("document", "passage", "corpus") if k in prompts),
                                          ""))

    def encode(self, texts: list[str], prompt: str) -> np.ndarray:
        import torch

        with torch.inference_mode():
            vectors = self.model.encode(texts, prompt=prompt or None, batch_size=self.params.batch_size,
                                        normalize_embeddings=self.params.normalize, convert_to_numpy=True,
                                        show_progress_bar=False)
        return np.ascontiguousarray(vectors, dtype=np.float32)


def _metric(params: Params) -> int:
    import faiss

    return faiss.METRIC_INNER_PRODUCT if params.metric == "ip" else faiss.METRIC_L2


def _ivfpq_shape(params: Params, n: int, dim: int) -> tuple[int, int, int]:
    """(nlist, pq_m, train_size) with the automatic choices filled in and checked against the corpus."""
    nlist = params.nlist or max(1, min(int(4 * math.sqrt(n)), n // 39))
    if nlist > n:
        raise ValueError(f"dense nlist={nlist} exceeds the corpus ({n} passages)")
    pq_m = params.pq_m or (dim // 8 if dim % 8 == 0 else 0)
    if not pq_m or dim % pq_m:
        raise ValueError(f"dense pq_m must divide the embedding dimension {dim}; pass --param pq_m=...")
    if n < 2 ** params.pq_nbits:
        raise ValueError(f"dense pq_nbits={params.pq_nbits} needs >= {2 ** params.pq_nbits} passages to train its "
                         f"codebooks, the corpus has {n}; lower pq_nbits or use index=flat/hnsw")
    train = min(n, params.train_size or 64 * max(nlist, 2 ** params.pq_nbits))
    if train < max(nlist, 2 ** params.pq_nbits):
        raise ValueError(f"dense train_size={train} is below max(nlist, 2**pq_nbits)")
    return nlist, pq_m, train


def _new_index(params: Params, dim: int, n: int):
    import faiss

    metric = _metric(params)
    if params.index == "flat":
        return faiss.IndexFlat(dim, metric), "Flat"
    if params.index == "hnsw":
        index = faiss.IndexHNSWFlat(dim, params.hnsw_m, metric)
        index.hnsw.efConstruction = params.ef_construction
        return index, f"HNSW{params.hnsw_m},Flat"
    nlist, pq_m, _ = _ivfpq_shape(params, n, dim)
    index = faiss.IndexIVFPQ(faiss.IndexFlat(dim, metric), dim, nlist, pq_m, params.pq_nbits, metric)
    return index, f"IVF{nlist},PQ{pq_m}x{params.pq_nbits}"


class _ShardCache:
    """Embedding shards on disk, keyed by everything that changes them, written atomically one by one."""

    def __init__(self, params: Params, docstore: DocStore, encoder: _Encoder):
        self.hits = 0
        key = json.dumps({"corpus": file_sha256(docstore.directory / "passages.jsonl"), "n": len(docstore),
                          "encoder": folder_fingerprint(Path(params.encoder)), "prompt": encoder.passage_prompt,
                          "max_length": encoder.model.max_seq_length, "normalize": params.normalize,
                          "fp16": params.fp16 and str(encoder.model.device).startswith("cuda")}, sort_keys=True)
        self.dir = Path(params.cache) / hashlib.sha256(key.encode()).hexdigest()[:16] if params.cache else None
        if self.dir is not None:
            self.dir.mkdir(parents=True, exist_ok=True)
            (self.dir / "key.json").write_text(key + "\n", encoding="utf-8")

    def get(self, shard: int) -> np.ndarray | None:
        if self.dir is None or not (self.dir / f"{shard:06d}.npy").is_file():
            return None
        self.hits += 1
        return np.load(self.dir / f"{shard:06d}.npy")

    def put(self, shard: int, vectors: np.ndarray) -> None:
        if self.dir is not None:
            with atomic.replacing(self.dir / f"{shard:06d}.npy") as tmp:
                np.save(tmp, vectors)


def _encode_rows(encoder: _Encoder, docstore: DocStore, rows: range, bar) -> np.ndarray:
    chunk = 16 * encoder.params.batch_size  # progress granularity
    parts = []
    for start in range(rows.start, rows.stop, chunk):
        texts = list(docstore.iter_contents(start, min(start + chunk, rows.stop)))
        parts.append(encoder.encode(texts, encoder.passage_prompt))
        bar.update(len(texts))
    return np.concatenate(parts) if parts else np.zeros((0, encoder.dim), np.float32)


def build(docstore: DocStore, out_dir: Path, params: Params, progress: bool = True) -> dict:
    import faiss
    from tqdm.auto import tqdm

    n = len(docstore)
    if n == 0:
        raise ValueError("the dense backend cannot index an empty corpus")
    encoder = _Encoder(params)
    index, description = _new_index(params, encoder.dim, n)
    out_dir.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    if params.index == "ivfpq":
        _, _, train_size = _ivfpq_shape(params, n, encoder.dim)
        sample = np.sort(np.random.default_rng(TRAIN_SEED).choice(n, size=train_size, replace=False))
        texts = [docstore.contents(int(row)) for row in sample]
        with tqdm(total=len(texts), desc="dense: encode training sample", unit="psg", disable=not progress,
                  mininterval=1.0) as bar:
            vectors = np.concatenate([encoder.encode(texts[i:i + 4096], encoder.passage_prompt)
                                      for i in range(0, len(texts), 4096)])
            bar.update(len(texts))
        logger.info("dense: training %s on %d passages", description, len(vectors))
        index.train(vectors)
        del vectors, texts
    cache = _ShardCache(params, docstore, encoder)
    encoded = 0
    with tqdm(total=n, desc=f"dense: encode + add ({description})", unit="psg", disable=not progress,
              mininterval=1.0) as bar:
        for shard, start in enumerate(range(0, n, params.shard_size)):
            rows = range(start, min(start + params.shard_size, n))
            vectors = cache.get(shard)
            if vectors is None or vectors.shape != (len(rows), encoder.dim):
                vectors = _encode_rows(encoder, docstore, rows, bar)
                cache.put(shard, vectors)
                encoded += len(rows)
            else:
                bar.update(len(rows))
            index.add(vectors)
    seconds = time.perf_counter() - started
    faiss.write_index(index, str(out_dir / INDEX_FILE))
    (out_dir / ENCODER_FILE).write_text(json.dumps({
        "encoder": params.encoder, "fingerprint": folder_fingerprint(Path(params.encoder)), "dim": encoder.dim,
        "passage_prompt": encoder.passage_prompt, "max_length": encoder.model.max_seq_length,
    }, indent=2) + "\n", encoding="utf-8")
    facts = {"faiss_index": description, "dim": encoder.dim, "passage_prompt": encoder.passage_prompt,
             "index_bytes_per_passage": round((out_dir / INDEX_FILE).stat().st_size / n, 1),
             "passages_encoded": encoded, "encode_add_seconds": round(seconds, 2)}
    if cache.dir is not None:
        facts["cache_shards_reused"] = cache.hits
    return facts


class DenseSearcher:
    def __init__(self, index_dir: Path, params: Params):
        import faiss

        path = index_dir / INDEX_FILE
        if not path.is_file():
            raise FileNotFoundError(f"{index_dir}: no dense index ({INDEX_FILE})")
        built = json.loads((index_dir / ENCODER_FILE).read_text(encoding="utf-8"))
        if folder_fingerprint(_encoder_dir(params)) != built["fingerprint"]:
            logger.warning("dense encoder %s differs from the one %s was built with (%s); query and passage "
                           "vectors may not match", params.encoder, index_dir, built["encoder"])
        self.params = params
        self.encoder = _Encoder(params, passage_prompt=built["passage_prompt"])
        if self.encoder.dim != built["dim"]:
            raise ValueError(f"dense encoder {params.encoder} makes {self.encoder.dim}-d vectors, the index holds "
                             f"{built['dim']}-d ones; load it with the encoder it was built with")
        flags = faiss.IO_FLAG_MMAP_IFC | faiss.IO_FLAG_READ_ONLY if params.mmap else 0
        self.index = faiss.read_index(str(path), flags)
        self._search_params = None
        if params.index == "ivfpq":
            faiss.extract_index_ivf(self.index).nprobe = params.nprobe
        if params.faiss_gpu:
            if not hasattr(faiss, "get_num_gpus") or faiss.get_num_gpus() < 1:
                raise RuntimeError("faiss_gpu=true needs faiss-gpu and a visible GPU (pip uninstall faiss-cpu, then "
                                   "install the gpu extra)")
            options = faiss.GpuMultipleClonerOptions()
            options.shard, options.useFloat16 = True, True
            self.index = faiss.index_cpu_to_all_gpus(self.index, options)
        self.n_passages = int(self.index.ntotal)
        self._lock = threading.Lock()  # one encoder forward at a time; faiss searches run unlocked

    def _faiss_params(self, k: int):
        import faiss

        if self.params.index == "hnsw":
            return faiss.SearchParametersHNSW(efSearch=max(self.params.ef_search, k))
        if self.params.index == "ivfpq" and not self.params.faiss_gpu:
            return faiss.SearchParametersIVF(nprobe=self.params.nprobe)
        return None

    def search_rows(self, queries: Sequence[str], topk: int) -> list[list[tuple[int, float]]]:
        out: list[list[tuple[int, float]]] = [[] for _ in queries]
        live = [i for i, q in enumerate(queries) if q.strip()]  # a blank query carries no meaning to embed
        k = min(topk, self.n_passages)
        if not live or k < 1:
            return out
        with self._lock:
            vectors = self.encoder.encode([queries[i] for i in live], self.encoder.query_prompt)
        params = self._faiss_params(k)
        scores, rows = self.index.search(vectors, k, params=params) if params else self.index.search(vectors, k)
        sign = -1.0 if self.params.metric == "l2" else 1.0  # best first: higher is better for every metric
        for j, i in enumerate(live):
            out[i] = [(int(r), sign * float(s)) for r, s in zip(rows[j], scores[j], strict=True) if r >= 0]
        return out


def load(index_dir: Path, params: Params) -> DenseSearcher:
    return DenseSearcher(index_dir, params)
