"""bm25 backend on the toy world: entity lookups succeed, results are ordered and bounded, odd queries are safe."""

from __future__ import annotations

import threading

import pytest

from retrieval.retriever import Passage, Retriever, load_index


@pytest.mark.parametrize("corpus", ["wiki", "arxiv"])
def test_name_and_attribute_query_finds_the_entity_in_top_3(bm25_indexes, entity_queries, corpus):
    index = load_index(bm25_indexes[corpus])
    queries, gold = entity_queries(corpus)
    results = index.search(queries, 3)
    hit_rate = sum(g in [p.id for p in hits] for g, hits in zip(gold, results, strict=True)) / len(gold)
    assert hit_rate >= 0.9, hit_rate


def test_results_are_ordered_bounded_and_carry_the_passage(bm25_indexes, world):
    index = load_index(bm25_indexes["wiki"])
    assert isinstance(index, Retriever)
    doc = world.corpus("wiki")[0]
    for topk in (1, 5, 1000):
        (hits,) = index.search([doc.subject], topk)
        assert 1 <= len(hits) <= min(topk, len(index))
        assert [p.score for p in hits] == sorted((p.score for p in hits), reverse=True)
    top = index.search([f"{doc.subject} {doc.title}"], 1)[0][0]
    assert top == Passage(doc.id, doc.title, doc.text, top.score)
    assert top.contents == f"{doc.title}\n{doc.text}"


@pytest.mark.parametrize("query", ["zzqxv unknownword", "the of and", "!!! ??? ***", "\u00e9\u00e8 \u4e2d\u6587",
                                   'WIKI("x") </search> AND OR ( " :', "a" * 5000])
def test_odd_queries_return_lists_not_errors(bm25_indexes, query):
    (hits,) = load_index(bm25_indexes["wiki"]).search([query], 3)
    assert isinstance(hits, list) and len(hits) <= 3


def test_bad_arguments_raise(bm25_indexes):
    index = load_index(bm25_indexes["wiki"])
    with pytest.raises(ValueError, match="topk"):
        index.search(["x"], 0)
    with pytest.raises(TypeError, match="sequence of queries"):
        index.search("one string", 3)
    assert index.search([], 3) == []


def test_concurrent_callers_get_the_same_answers(bm25_indexes, entity_queries):
    index = load_index(bm25_indexes["wiki"])
    queries, _ = entity_queries("wiki")
    expected = index.search(queries, 3)
    results: dict[int, list] = {}

    def work(i):
        results[i] = index.search(queries, 3)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all(r == expected for r in results.values())


def test_own_kernel_matches_bm25s_and_threads_do_not_change_answers(bm25_indexes, entity_queries):
    queries, _ = entity_queries("wiki")
    one = load_index(bm25_indexes["wiki"], n_threads=1)
    assert one.searcher._own_kernel
    reference = load_index(bm25_indexes["wiki"], numba=False)  # bm25s's own numpy scoring
    for k in (1, 10, 1000):
        ours, theirs = one.search(queries, k), reference.search(queries, k)
        for a, b in zip(ours, theirs, strict=True):
            assert [round(p.score, 4) for p in a] == pytest.approx([round(p.score, 4) for p in b], abs=1e-4)
            assert {p.id for p in a if p.score > a[-1].score} <= {p.id for p in b}  # same hits above the tie line
    assert load_index(bm25_indexes["wiki"], n_threads=2).search(queries, 5) == one.search(queries, 5)
