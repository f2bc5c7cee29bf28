"""Corpus readers, retrieval backends (bm25s, pyserini, colbert-ai, faiss), index builder and HTTP server.

Knows nothing of `openrm`; the judge reaches it through the `Retriever` protocol only.
"""
