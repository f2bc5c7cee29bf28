"""What a ColBERT PLAID index costs on CPU, in parts that extrapolate: colbert's own sizing rules (how many passages it
samples, how many centroids it trains, how many vectors faiss clusters), the rates a build is made of (document
encoder passages/s, faiss k-means multiply-adds/s) and an index's bytes by file kind. Imported by
bench.colbert_cpu; it runs nothing itself.
"""

from __future__ import annotations

import math
import time
from pathlib import Path


def sampled_passages(n: int) -> int:
    """Passages colbert encodes a first time to train its centroids (CollectionIndexer._sample_pids)."""
    return min(1 + int(16 * math.sqrt(120 * n)), n)


def num_centroids(n_embeddings: float) -> int:
    """colbert's centroid count (CollectionIndexer.setup)."""
    return int(2 ** math.floor(math.log2(16 * math.sqrt(n_embeddings))))


def kmeans_points(n: int, doclen: float) -> float:
    """Vectors faiss clusters: 95% of the sample's embeddings (5% held out), at most 256 per centroid."""
    return min(0.95 * sampled_passages(n) * doclen, 256 * num_centroids(n * doclen))


def file_kind(name: str) -> str:
    """Which part of a PLAID index a file of its folder holds."""
    return ("residuals" if name.endswith("residuals.pt") else "codes" if name.endswith("codes.pt")
            else "ivf" if name.startswith("ivf") else "centroids" if name == "centroids.pt"
            else "doclens" if name.startswith("doclens") else "other")


def bytes_by_kind(plaid_dir: Path) -> dict[str, int]:
    """Bytes of a PLAID index folder per `file_kind`."""
    sizes: dict[str, int] = {}
    for f in plaid_dir.iterdir():
        kind = file_kind(f.name)
        sizes[kind] = sizes.get(kind, 0) + f.stat().st_size
    return sizes


def encoder_rates(checkpoint: Path, texts: list[str], doc_maxlen: int) -> tuple[float, float]:
    """Passages/s of (colbert's MiniLM document encoder, a BERT-base of colbertv2.0's shape) on the same tokens."""
    import torch
    from transformers import BertConfig, BertModel

    from retrieval import colbert_compat

    colbert_compat.import_colbert()
    from colbert.infra import ColBERTConfig
    from colbert.modeling.checkpoint import Checkpoint

    config = ColBERTConfig(checkpoint=str(checkpoint), doc_maxlen=doc_maxlen, model_name=None)
    model = Checkpoint(str(checkpoint), colbert_config=config, verbose=0)
    model.docFromText(texts[:64], bsize=64, keep_dims="flatten")  # warm-up
    start = time.perf_counter()
    model.docFromText(texts, bsize=64, keep_dims="flatten")
    minilm = len(texts) / (time.perf_counter() - start)
    ids, mask = model.doc_tokenizer.tensorize(texts[:64])  # one batch: BERT-base is ≈ 10x slower
    base = BertModel(BertConfig()).eval()  # bert-base-uncased's shape, random weights
    with torch.inference_mode():
        base(ids[:8], attention_mask=mask[:8])
        start = time.perf_counter()
        base(ids, attention_mask=mask)
    return minilm, len(ids) / (time.perf_counter() - start)


def faiss_kmeans_flops() -> float:
    """Multiply-adds/s of faiss k-means here (colbert trains its centroids with it, on the CPU without a GPU)."""
    import faiss
    import numpy as np

    x = np.random.default_rng(0).standard_normal((100_000, 128), dtype=np.float32)
    k, niter = 2048, 4
    kmeans = faiss.Kmeans(128, k, niter=niter, seed=123, verbose=False)
    start = time.perf_counter()
    kmeans.train(x)
    return len(x) * k * 128 * niter / (time.perf_counter() - start)
