"""build_dataset end to end: the toy-world oracle, a scripted server with faults and bad outputs, and kill -9
then resume against a loopback server that counts what it is sent."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest
from synth_servers import MARKERS, ScriptedLLM, serve, write_corpus

from data_synthesis.build_dataset import main
from openrm.dataset import check_example, load_judge_examples
from openrm.protocol import ANSWER, GOLD_TOOL, close_tag, open_tag
from toy.world import ToyWorld

REPO = Path(__file__).resolve().parents[2]
FAST = ["--timeout-s", "0.3", "--backoff-base-s", "0.001", "--backoff-max-s", "0.01", "--progress", "false"]


def rows(out: Path, split: str) -> list[dict]:
    return [json.loads(line) for line in (out / f"{split}.jsonl").read_text().splitlines()]


def check_records(out: Path, wanted: dict[str, int]) -> dict[str, list[dict]]:
    """Counts, schema, A/B balance per (split, domain), provenance, disjoint documents, the saved DatasetDict."""
    got = {split: rows(out, split) for split in wanted}
    for split, recs in got.items():
        assert len(recs) == wanted[split] and len({r["id"] for r in recs}) == len(recs)
        ds = load_judge_examples(out, split)
        assert ds["id"] == [r["id"] for r in recs] and "domain" in ds.column_names
        for domain, n in Counter(r["domain"] for r in recs).items():
            labels = [r["label"] for r in recs if r["domain"] == domain]
            assert abs(labels.count("A") - labels.count("B")) <= 1, (split, domain, labels)
            assert n >= 1
        for r in recs:
            check_example(r, r["id"])
            meta = r["meta"]
            assert r["gold_tool"] == GOLD_TOOL[r["domain"]] and meta["split"] == split
            assert meta["generator"] and meta["prompts_version"] and meta["doc_ids"]
            assert [d["id"] for d in meta["documents"]] == meta["doc_ids"]
            assert all(d["text"] for d in meta["documents"])
            positive = r["answer_a"] if r["label"] == "A" else r["answer_b"]
            negative = r["answer_b"] if r["label"] == "A" else r["answer_a"]
            assert positive != negative
    docs = {s: {(r["meta"]["corpus"], d) for r in recs for d in r["meta"]["doc_ids"]} for s, recs in got.items()}
    assert not docs["train"] & docs.get("test", set())
    return got


def test_toyworld_oracle_is_deterministic_balanced_and_true_to_the_world(tmp_path):
    args = ["--oracle", "toyworld", "--n-train", "60", "--n-test", "15", "--progress", "false"]
    main([*args, "--out", str(tmp_path / "a")])
    main([*args, "--out", str(tmp_path / "b")])
    got = check_records(tmp_path / "a", {"train": 60, "test": 15})
    assert (tmp_path / "a" / "train.jsonl").read_bytes() == (tmp_path / "b" / "train.jsonl").read_bytes()
    assert Counter(r["domain"] for r in got["train"]) == {"wiki": 20, "science": 20, "medical": 20}
    world = ToyWorld(0)
    for r in got["train"] + got["test"]:
        doc = world.by_id[r["meta"]["doc_ids"][0]]
        assert world.split_of[doc.id] == r["meta"]["split"]
        positive = r["answer_a"] if r["label"] == "A" else r["answer_b"]
        assert all(f["value"] in positive for f in r["meta"]["facts"])  # the positive states the document's facts
        answer = open_tag(ANSWER) + r["label"] + close_tag(ANSWER)
        assert world.gold_trajectory(r).endswith(answer)  # the quickstart's SFT warm-up reads these records
    stats = (tmp_path / "a" / "stats.md").read_text()
    assert "| train | **all** | 60 |" in stats and "| test | **all** | 15 |" in stats


def test_faults_and_bad_outputs_are_retried_or_dropped_with_reasons(tmp_path):
    wiki = write_corpus(tmp_path / "wiki.jsonl", 6, 0, (*MARKERS, "MARKREPAIR"))
    arxiv = write_corpus(tmp_path / "arxiv.jsonl", 12, 1)
    llm = ScriptedLLM(schedule={1: "429", 3: "500", 5: "hang", 7: "malformed"}, period=10, hang_s=1.0)
    out = tmp_path / "out"
    with serve(llm.app) as url:
        main(["--corpus", f"wiki={wiki}", "--corpus", f"arxiv={arxiv}", "--base-url", url, "--model", "m",
              "--n-train", "20", "--n-test", "0", "--out", str(out), "--concurrency", "4", "--max-retries", "12",
              "--oversample", "1.6", *FAST])  # 16 wiki slots: each of the 15 wiki documents is used
    summary = json.loads((out / "summary.json").read_text())
    client = summary["client"]
    assert set(llm.faults) == {"429", "500", "hang", "malformed"}
    assert {"http 429", "http 500", "timeout", "malformed response"} <= set(client["retries"])
    assert client["http_attempts"] == len(llm.keys) and client["json_repairs"] >= 1
    rejects = [json.loads(line) for line in (out / "rejects.jsonl").read_text().splitlines()]
    assert all(r["reason"] for r in rejects)
    title_of = {json.loads(line)["id"]: json.loads(line)["title"] for line in wiki.read_text().splitlines()}
    reasons_of_marker: dict[str, set[str]] = {m: set() for m in MARKERS}
    for r in rejects:
        for doc_id in r["doc_ids"]:
            for m in MARKERS:
                if r["domain"] == "wiki" and m in title_of.get(doc_id, ""):
                    reasons_of_marker[m].add(r["reason"])
    assert reasons_of_marker == {m: {reason} for m, reason in MARKERS.items()}
    # a positive dropped on its own costs no answer without documents
    closed_book = [u for u in llm.users if u.startswith("Question: ")]
    assert closed_book and not any(m in u for u in closed_book for m in ("MARKREFUSE", "MARKTRUNC", "MARKLEAK"))
    assert any("MARKEMPTY" in u for u in closed_book)
    got = check_records(out, {"train": 20})
    kept_titles = {d["title"] for r in got["train"] for d in r["meta"]["documents"]}
    assert not any(m in t for m in MARKERS for t in kept_titles)  # no bad output reached the dataset
    assert any("MARKREPAIR" in t for t in kept_titles)  # a repaired JSON reply did
    assert summary["slots"] == len(rejects) + len(got["train"]) + summary["surplus"]  # every slot accounted for


def _run(args: list[str]) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.Popen([sys.executable, "-m", "data_synthesis.build_dataset", *args], cwd=REPO, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)


def test_kill_9_then_resume_loses_and_repeats_nothing(tmp_path):
    wiki = write_corpus(tmp_path / "wiki.jsonl", 20, 0)
    arxiv = write_corpus(tmp_path / "arxiv.jsonl", 20, 1)
    held = 12  # the server answers this many requests, then holds the rest until the run is killed
    llm = ScriptedLLM(gate_after=held)
    with serve(llm.app) as url:
        common = ["--corpus", f"wiki={wiki}", "--corpus", f"arxiv={arxiv}", "--base-url", url, "--model", "m",
                  "--n-train", "10", "--n-test", "4", "--concurrency", "3", *FAST, "--timeout-s", "60"]
        killed = tmp_path / "killed"
        proc = _run([*common, "--out", str(killed)])
        cache = killed / "requests.jsonl"
        deadline = time.monotonic() + 120
        while not (cache.exists() and len(cache.read_text().splitlines()) >= held):
            assert proc.poll() is None, proc.stderr.read()
            assert time.monotonic() < deadline, "the run never cached the first requests"
            time.sleep(0.02)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        proc.stderr.close()
        at_kill = [json.loads(line)["key"] for line in cache.read_text().splitlines()]
        assert len(at_kill) == held and not (killed / "train.jsonl").exists()
        llm.gate.set()
        resumed = _run([*common, "--out", str(killed)])
        assert resumed.wait(timeout=120) == 0, resumed.stderr.read()
        resumed.stderr.close()
        seen = Counter(llm.keys)
        assert all(seen[k] == 1 for k in at_kill)  # no completed request was sent again
        llm.keys.clear()
        main([*common, "--out", str(tmp_path / "clean")])  # uninterrupted, fresh cache
    summary = json.loads((killed / "summary.json").read_text())
    assert summary["client"]["cache_hits"] == held
    got = check_records(killed, {"train": 10, "test": 4})
    clean = check_records(tmp_path / "clean", {"train": 10, "test": 4})
    assert got == clean  # no duplicate, no missing, identical records
    assert len(llm.keys) == len(set(llm.keys)) == len(cache.read_text().splitlines())


def test_replicas_share_the_load_give_the_same_records_and_survive_a_dead_one(tmp_path):
    wiki = write_corpus(tmp_path / "wiki.jsonl", 20, 0)
    one, two = ScriptedLLM(delay_s=0.02), ScriptedLLM(delay_s=0.02)
    common = ["--corpus", f"wiki={wiki}", "--model", "m", "--n-train", "8", "--n-test", "2", "--concurrency", "4",
              *FAST]
    with serve(one.app) as url_one, serve(two.app) as url_two:
        main([*common, "--base-url", url_one, "--out", str(tmp_path / "single")])
        sent_alone = len(one.keys)
        one.keys.clear()
        main([*common, "--base-url", url_one, "--replica-urls", url_two, "--out", str(tmp_path / "pair")])
        assert len(one.keys) + len(two.keys) == sent_alone and one.keys and two.keys
        summary = json.loads((tmp_path / "pair" / "summary.json").read_text())
        assert summary["client"]["per_server"] == [len(one.keys), len(two.keys)]
        dead = "http://127.0.0.1:9/v1"  # nothing listens there: every POST to it fails at once
        main([*common, "--base-url", dead, "--replica-urls", url_two, "--max-retries", "2",
              "--out", str(tmp_path / "dead")])
    wanted = {"train": 8, "test": 2}
    single = check_records(tmp_path / "single", wanted)
    assert check_records(tmp_path / "pair", wanted) == single
    assert check_records(tmp_path / "dead", wanted) == single  # each request failed over to the live replica
    dead_summary = json.loads((tmp_path / "dead" / "summary.json").read_text())["client"]
    assert dead_summary["failed"] == 0 and dead_summary["retries"]


@pytest.mark.parametrize("bad", [["--n-train", "0"], ["--corpus", "books=x.jsonl"], ["--oracle", "nope"],
                                 ["--corpus", "wiki=a", "--corpus", "wiki=b"], ["--serve-replicas", "2"],
                                 ["--serve-replicas", "0"]])
def test_bad_arguments_are_refused(tmp_path, bad):
    base = ["--out", str(tmp_path), "--base-url", "http://127.0.0.1:9/v1", "--model", "m"]
    if "--corpus" not in bad and "--oracle" not in bad:
        base += ["--corpus", "wiki=x.jsonl"]
    with pytest.raises(ValueError):
        main([*base, *bad])


def test_questions_over_neighbouring_passages_of_one_article_and_titles_split(tmp_path):
    """A DPR-like corpus (articles cut into consecutive passages): windows of 1..3 neighbours, disjoint titles."""
    rows = [json.loads(line) for line in write_corpus(tmp_path / "src.jsonl", 120, 3).read_text().splitlines()]
    for i, row in enumerate(rows):
        row["title"] = rows[i - i % 4]["title"]  # 30 articles of 4 passages each
    wiki = tmp_path / "wiki.jsonl"
    wiki.write_text("".join(json.dumps(r) + "\n" for r in rows))
    with serve(ScriptedLLM().app) as url:
        main(["--corpus", f"wiki={wiki}", "--base-url", url, "--model", "m", "--n-train", "16", "--n-test", "6",
              "--k-max", "3", "--out", str(tmp_path / "out"), *FAST])
    got = check_records(tmp_path / "out", {"train": 16, "test": 6})
    sizes = Counter(len(r["meta"]["documents"]) for recs in got.values() for r in recs)
    assert set(sizes) <= {1, 2, 3} and len(sizes) >= 2, sizes
    for r in got["train"] + got["test"]:
        docs = r["meta"]["documents"]
        numbers = [int(d["id"].split("-")[1]) for d in docs]
        assert len({d["title"] for d in docs}) == 1 and numbers == list(range(numbers[0], numbers[0] + len(docs)))
    titles = {s: {d["title"] for r in recs for d in r["meta"]["documents"]} for s, recs in got.items()}
    assert not titles["train"] & titles["test"]


def test_plain_text_questions_are_taken_from_a_rambling_reply_or_dropped_with_a_reason(tmp_path):
    wiki = write_corpus(tmp_path / "wiki.jsonl", 6, 0, ("MARKGARBAGE",))
    llm = ScriptedLLM()
    out = tmp_path / "out"
    with serve(llm.app) as url:
        main(["--corpus", f"wiki={wiki}", "--base-url", url, "--model", "m", "--question-format", "text",
              "--n-train", "4", "--n-test", "0", "--out", str(out), "--oversample", "2", *FAST])
    summary = json.loads((out / "summary.json").read_text())
    assert summary["client"]["json_repairs"] == 0 and summary["question_format"] == "text"
    rejects = [json.loads(line) for line in (out / "rejects.jsonl").read_text().splitlines()]
    garbage = [r for r in rejects if r["reason"] == "query_no_question"]
    assert garbage and all("zq zq zq" in r["detail"] for r in garbage)
    got = check_records(out, {"train": 4})
    assert all(r["question"].startswith("Explain ") and r["question"].endswith("?") for r in got["train"])


def test_parse_text_question_strips_labels_and_markers():
    from data_synthesis.queries import parse_text_question

    assert parse_text_question("Question:\n\n[2] What was Harvey Milk?\n\nJSON:") == "What was Harvey Milk?"
    assert parse_text_question("1. **How did the Bhakti movement spread?**") == "How did the Bhakti movement spread?"
    with pytest.raises(ValueError, match="question mark"):
        parse_text_question("Question:\n\n[1] The Hanseatic League: A medieval network")
