"""Shared retrieval fixtures: the toy-world corpora, a bm25 index over each, and a real uvicorn on loopback."""

from __future__ import annotations

import loopback
import pytest

from retrieval.build_index import build_index
from toy.world import KINDS, ToyWorld


@pytest.fixture(scope="session")
def world() -> ToyWorld:
    return ToyWorld(0)


@pytest.fixture(scope="session")
def corpora(world, tmp_path_factory):
    """{"wiki": {"tsv": Path, "jsonl": Path}, "arxiv": {...}}"""
    return world.write_corpora(tmp_path_factory.mktemp("toy"))


@pytest.fixture(scope="session")
def bm25_indexes(corpora, tmp_path_factory):
    root = tmp_path_factory.mktemp("bm25")
    for name, files in corpora.items():
        build_index(files["tsv"], "bm25", root / name, progress=False)
    return {name: root / name for name in corpora}


@pytest.fixture(scope="session")
def entity_queries(world):
    """corpus -> (name + attribute keyword queries for its every document, the gold passage id of each)."""
    return lambda corpus: _entity_queries(world, corpus)


def _entity_queries(world: ToyWorld, corpus: str) -> tuple[list[str], list[str]]:
    queries, gold = [], []
    for doc in world.corpus(corpus):
        for attribute in KINDS[doc.kind][1]:
            queries.append(f"{doc.subject} {attribute.keyword}")
            gold.append(doc.id)
    return queries, gold


@pytest.fixture
def serve():
    """`with serve(app, **uvicorn_config) as url:` runs a real uvicorn on loopback for the block."""
    return loopback.serve
