"""`python -m eval.run` end to end: published predictions (PandaLM presets, custom), the tiny judge on the toy test
split in all three modes and on every benchmark fixture, and a killed run that resumes without judging twice."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from eval.judging import VerdictStore
from eval.run import main

FIX = Path(__file__).parent / "fixtures"
ROOT = Path(__file__).resolve().parents[2]
BUDGET = ["--judge_max_completion_tokens", "24", "--judge_max_new_tokens", "12"]


def results(out: Path) -> dict:
    return json.loads((out / "results.json").read_text())


def test_pandalm_predictions_preset(tmp_path):
    got = main(["--benchmark", "pandalm", "--data", str(FIX / "pandalm_testset.json"), "--predictions",
                str(FIX / "pandalm_predictions.json"), "--predictions_format", "pandalm", "--out", str(tmp_path)])
    # labels 0:A 1:B 2:tie 3:A 5:B 7:B 8:A (5, 7, 8: empty / JSON-true answers, blank instruction; all scored)
    # predictions A, A, tie, tie, B, A, A (+ one id not in the data)
    assert got["counts"]["examples"] == 7
    assert got["accuracy"] == pytest.approx(4 / 7)
    assert got["precision_macro"] == pytest.approx((1 / 2 + 2 / 4 + 1 / 1) / 3)  # tie, A, B
    assert got["recall_macro"] == pytest.approx((1 / 1 + 2 / 3 + 1 / 3) / 3)
    assert got["f1_macro"] == pytest.approx((2 / 3 + 4 / 7 + 1 / 2) / 3)
    assert got["binary_accuracy"] == pytest.approx((1 + 0 + 0.5 + 1 + 0 + 1) / 6)  # the tie on item 3 scores half
    assert got["counts"]["unmatched_predictions"] == 1 and got["counts"]["missing_predictions"] == 0
    assert got["adjusted_answers"] == {"empty answer judged as is": 2, "bool answer → text": 1}
    on_disk = results(tmp_path)
    assert {"accuracy", "precision_macro", "recall_macro", "f1_macro", "binary_accuracy", "counts"} <= set(on_disk)
    report = (tmp_path / "report.md").read_text()
    assert "tie → half, parse failure → wrong" in report and "no majority" in report
    assert (tmp_path / "report.png").stat().st_size > 1000


def test_pandalm_gpt_predictions_count_other_text_as_tie_with_rule_counts(tmp_path):
    """The PandaLM paper's GPT-3.5 figures need answers other than 1, 2 or Tie to count as ties."""
    got = main(["--benchmark", "pandalm", "--data", str(FIX / "pandalm_testset.json"), "--predictions",
                str(FIX / "pandalm_gpt_predictions.json"), "--predictions_format", "pandalm", "--out", str(tmp_path),
                "--failure_policy", "exclude"])
    # labels 0:A 1:B 2:tie 3:A 5:B 7:B 8:A; predictions A B tie tie("I cannot decide") B tie("") A
    assert got["counts"]["predictions"] == {"A": 2, "B": 2, "tie": 3}
    assert got["accuracy"] == pytest.approx(5 / 7) and got["n"] == 7
    assert got["notes"]["prediction_rules"] == {"gpt_result: '1' → A": 2, "gpt_result: '2' → B": 2,
                                                "gpt_result: any other value → tie": 2,
                                                "gpt_result: 'Tie' → tie": 1}
    assert "gpt_result: any other value → tie" in (tmp_path / "report.md").read_text()


@pytest.mark.parametrize("fmt, value, want", [
    ("pandalm", {"gpt_result": "Tie"}, ("tie", "gpt_result: 'Tie' → tie")),
    ("pandalm", {"gpt_result": " 2 "}, ("B", "gpt_result: '2' → B")),
    ("pandalm", {"gpt_result": "Both are fine"}, ("tie", "gpt_result: any other value → tie")),
    ("pandalm", {"pandalm_result": "0"}, ("tie", "pandalm_result: '0' → tie")),
    ("pandalm", {"pandalm_result": "3"}, ("fail", "pandalm_result: any other value → fail")),
    ("openrm", {"prediction": "fail"}, ("fail", "prediction: any other value → fail")),
])
def test_prediction_presets_decode_with_their_rule(fmt, value, want):
    from eval.predictions import PREDICTION_PRESETS

    (name, raw), = value.items()
    assert PREDICTION_PRESETS[fmt].decode(name, raw) == want


def test_custom_predictions_on_rewardbench(tmp_path):
    from eval.loaders import load_rewardbench

    examples = load_rewardbench(FIX / "rewardbench.jsonl", seed=7).examples
    preds = tmp_path / "preds.jsonl"
    # a judge that is right except on the two code/maths items, and writes "?" once
    verdict = {e["id"]: e["label"] for e in examples}
    verdict["3"] = "B" if verdict["3"] == "A" else "A"
    verdict["4"] = "?"
    preds.write_text("".join(json.dumps({"uid": k, "choice": v}) + "\n" for k, v in verdict.items()))
    got = main(["--benchmark", "rewardbench", "--data", str(FIX / "rewardbench.jsonl"), "--seed", "7",
                "--predictions", str(preds), "--predictions_format", "custom", "--id_field", "uid",
                "--verdict_field", "choice", "--verdict_values", "A=A,B=B", "--out", str(tmp_path / "o")])
    assert got["accuracy"] == pytest.approx(5 / 7)
    sections = got["rewardbench"]["sections"]
    assert sections["Chat"] == 1.0 and sections["Safety"] == 1.0 and sections["Chat Hard"] == 1.0
    assert sections["Reasoning"] == pytest.approx(0.0)  # math-prm wrong, hep-python a failure
    assert got["rewardbench"]["score"] == pytest.approx(0.75)


@pytest.fixture(scope="module")
def toy(tmp_path_factory):
    from retrieval.build_index import build_index
    from toy.tiny import build
    from toy.world import ToyWorld, write_dataset

    root = tmp_path_factory.mktemp("evaltoy")
    world = ToyWorld(0)
    data = write_dataset(world, root / "data", n_train=2, n_test=6)
    indexes = {}
    for name, files in world.write_corpora(root / "corpora").items():
        indexes[name] = root / f"index-{name}"
        build_index(files["tsv"], "bm25", indexes[name], progress=False)
    return {"judge": build(root / "tiny"), "data": data / "dataset", "wiki": indexes["wiki"],
            "arxiv": indexes["arxiv"]}


def judge_args(toy, out, *extra):
    return ["--benchmark", "in-domain", "--data", str(toy["data"]), "--judge", str(toy["judge"]),
            "--retriever", f"wiki={toy['wiki']}", "--retriever", f"arxiv={toy['arxiv']}", "--out", str(out), *BUDGET,
            *extra]


@pytest.mark.parametrize("mode", ["tools", "no-tools", "retrieve-then-judge"])
def test_tiny_judge_on_the_toy_test_split(toy, tmp_path, mode):
    extra = {"tools": [], "no-tools": ["--no_tools"], "retrieve-then-judge": ["--retrieve_then_judge"]}[mode]
    got = main(judge_args(toy, tmp_path, "--chunk_size", "4", *extra))
    records = VerdictStore(tmp_path / "verdicts.jsonl").records
    assert len(records) == 6 and got["judging"]["judged"] == 6 and got["mode"] == mode
    assert {r["mode"] for r in records.values()} == {mode}
    assert all(len(r["orders"]) == 2 and r["prediction"] in ("A", "B", "tie", "fail") for r in records.values())
    assert set(got["per_domain"]) <= {"wiki", "science", "medical"}
    assert ("evidence" in next(iter(records.values()))) == (mode == "retrieve-then-judge")
    if mode == "retrieve-then-judge":
        assert all("<information>" in r["evidence"] and "Doc 1 (Title:" in r["evidence"] for r in records.values())
    # the same folder holds one mode only
    other = "--no_tools" if mode != "no-tools" else "--retrieve_then_judge"
    with pytest.raises(SystemExit):
        main(judge_args(toy, tmp_path, other))


@pytest.mark.parametrize("benchmark, file", [
    ("rewardbench", "rewardbench.jsonl"), ("pandalm", "pandalm_testset.json"), ("llmbar", "llmbar.json"),
    ("autoj", "autoj.jsonl"), ("judgebench", "judgebench.jsonl"), ("mtbench", "mtbench.jsonl"),
])
def test_tiny_judge_runs_every_benchmark(toy, tmp_path, benchmark, file):
    got = main(["--benchmark", benchmark, "--data", str(FIX / file), "--judge", str(toy["judge"]), "--no_tools",
                "--limit", "3", "--out", str(tmp_path), *BUDGET])
    assert got["judging"]["judged"] == got["counts"]["examples"] <= 3
    assert (tmp_path / "report.md").is_file() and (tmp_path / "report.png").is_file()
    # our own verdicts are a predictions file too: rescoring them reproduces the run
    again = main(["--benchmark", benchmark, "--data", str(FIX / file), "--limit", "3", "--predictions",
                  str(tmp_path / "verdicts.jsonl"), "--out", str(tmp_path / "rescored")])
    for key in ("accuracy", "counts", "confusion", "per_domain"):
        assert again[key] == got[key]


def test_served_judge_with_concurrency_matches_the_in_process_judge(toy, tmp_path):
    """`--judge_server` with chunks in flight at once: the same greedy verdicts as the local checkpoint, every example
    judged once, and the server saw requests from more than one chunk."""
    from loopback import serve, vllm_completions_app
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from openrm.generation import HFGenerator

    tok = AutoTokenizer.from_pretrained(toy["judge"])
    model = AutoModelForCausalLM.from_pretrained(toy["judge"]).eval()
    local = main(judge_args(toy, tmp_path / "local", "--chunk_size", "2"))
    calls: list = []
    with serve(vllm_completions_app(HFGenerator(model, tok), tok, calls)) as url:
        served = main(["--benchmark", "in-domain", "--data", str(toy["data"]), "--judge_server", f"{url}/v1",
                       "--judge_model", "tiny", "--judge", str(toy["judge"]), "--retriever", f"wiki={toy['wiki']}",
                       "--retriever", f"arxiv={toy['arxiv']}", "--out", str(tmp_path / "served"), *BUDGET,
                       "--chunk_size", "2", "--concurrency", "3"])
    assert served["judging"]["judged"] == 6 and len(calls) >= 3
    want = VerdictStore(tmp_path / "local" / "verdicts.jsonl").records
    got = VerdictStore(tmp_path / "served" / "verdicts.jsonl").records
    assert got.keys() == want.keys()
    # the untrained tiny judge rarely answers, so compare what it wrote, not only the verdicts
    assert {i: r["orders"] for i, r in got.items()} == {i: r["orders"] for i, r in want.items()}
    assert {i: r["prediction"] for i, r in got.items()} == {i: r["prediction"] for i, r in want.items()}
    assert served["accuracy"] == local["accuracy"]


def test_bad_arguments_exit_with_a_message(toy, tmp_path, capsys):
    with pytest.raises(SystemExit):
        main(["--benchmark", "pandalm", "--data", str(FIX / "pandalm_testset.json"), "--out", str(tmp_path)])
    assert "exactly one of --judge and --predictions" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["--benchmark", "pandalm", "--data", str(tmp_path / "nope.json"), "--predictions",
              str(FIX / "pandalm_predictions.json"), "--out", str(tmp_path)])
    assert "no such file" in capsys.readouterr().err


def test_verdict_store_drops_a_truncated_last_line_and_refuses_foreign_files(tmp_path):
    path = tmp_path / "verdicts.jsonl"
    path.write_text('{"id": "a", "prediction": "A"}\n{"id": "b", "predic')
    store = VerdictStore(path)
    assert list(store.records) == ["a"] and path.read_text() == '{"id": "a", "prediction": "A"}\n'
    store.add([{"id": "b", "prediction": "B"}, {"id": "a", "prediction": "B"}])
    assert [json.loads(line)["id"] for line in path.read_text().splitlines()] == ["a", "b"]
    path.write_text('{"id": "a"}\nnot json\n{"id": "c"}\n')
    with pytest.raises(ValueError, match="verdicts.jsonl:2: unreadable"):
        VerdictStore(path)


def test_killed_run_resumes_without_judging_twice(toy, tmp_path):
    clean = tmp_path / "clean"
    main(judge_args(toy, clean, "--chunk_size", "1", "--no_tools"))
    out = tmp_path / "killed"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    cmd = [sys.executable, "-m", "eval.run", *judge_args(toy, out, "--chunk_size", "1", "--no_tools")]
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    verdicts = out / "verdicts.jsonl"
    deadline = time.monotonic() + 240
    try:
        while not (verdicts.exists() and len(verdicts.read_text().splitlines()) >= 2):
            assert proc.poll() is None, "the run ended before it could be killed"
            assert time.monotonic() < deadline
            time.sleep(0.05)
        proc.send_signal(signal.SIGKILL)
    finally:
        proc.wait()
    before = VerdictStore(verdicts).records
    assert 2 <= len(before) < 6, "kill landed after the run finished"
    resumed = main(judge_args(toy, out, "--chunk_size", "1", "--no_tools"))
    after = VerdictStore(verdicts).records
    ids = [json.loads(line)["id"] for line in verdicts.read_text().splitlines()]
    assert len(ids) == len(set(ids)) == 6
    assert all(after[i] == before[i] for i in before)  # nothing judged before was judged again
    expected = results(clean)
    for key in ("accuracy", "counts", "confusion", "per_domain"):
        assert resumed[key] == expected[key]


def test_tool_mode_without_retrievers_is_refused_not_mislabelled(toy, tmp_path, capsys):
    with pytest.raises(SystemExit):
        main(["--benchmark", "pandalm", "--data", str(FIX / "pandalm_testset.json"), "--judge", str(toy["judge"]),
              "--out", str(tmp_path), *BUDGET])
    assert "tool mode needs --retrievers" in capsys.readouterr().err
    assert not (tmp_path / "verdicts.jsonl").exists()


def test_resume_refuses_other_settings_and_names_each_difference(toy, tmp_path, capsys):
    out = tmp_path / "out"
    base = ["--benchmark", "pandalm", "--judge", str(toy["judge"]), "--limit", "2", "--out", str(out)]
    data = tmp_path / "testset.json"
    data.write_bytes((FIX / "pandalm_testset.json").read_bytes())
    main([*base, "--data", str(data), "--no_tools", *BUDGET])
    held = json.loads((out / "run.json").read_text())
    assert held["mode"] == "no-tools" and held["retrievers"] == {} and held["max_new_tokens"] == 12
    before = (out / "verdicts.jsonl").read_text()
    edited = data.read_text().replace("He goes to school.", "He gos to school.")
    other_data = tmp_path / "edited.json"
    other_data.write_text(edited)
    tools = ["--retriever", f"wiki={toy['wiki']}", "--retriever", f"arxiv={toy['arxiv']}"]
    for changed, expect in [
        (["--data", str(data), "--no_tools", "--judge_max_completion_tokens", "24", "--judge_max_new_tokens", "8"],
         "max_new_tokens: 12 there, 8 now"),
        (["--data", str(other_data), "--no_tools", *BUDGET], "data_sha256"),
        (["--data", str(data), *tools, *BUDGET], "mode: 'no-tools' there, 'tools' now"),
        (["--data", str(data), "--no_tools", "--seed", "3", *BUDGET], "seed: 0 there, 3 now"),
    ]:
        with pytest.raises(SystemExit):
            main([*base, *changed])
        assert expect in capsys.readouterr().err
    assert (out / "verdicts.jsonl").read_text() == before  # nothing was judged into the folder
    # the same settings resume; a larger --limit is not a different setting
    again = main([*base[:-4], "--limit", "3", "--out", str(out), "--data", str(data), "--no_tools", *BUDGET])
    assert again["judging"]["judged"] == 3 and (out / "verdicts.jsonl").read_text().startswith(before)


def test_resume_refuses_a_different_retriever_set(toy, tmp_path, capsys):
    args = judge_args(toy, tmp_path, "--limit", "1")
    main(args)
    assert json.loads((tmp_path / "run.json").read_text())["retrievers"] == {"arxiv": str(toy["arxiv"]),
                                                                             "wiki": str(toy["wiki"])}
    at = args.index(f"arxiv={toy['arxiv']}")
    with pytest.raises(SystemExit):
        main(args[:at - 1] + args[at + 1:])  # without "--retriever arxiv=..."
    assert "retrievers:" in capsys.readouterr().err


def test_verdicts_without_run_json_are_not_resumed(toy, tmp_path, capsys):
    (tmp_path / "verdicts.jsonl").write_text('{"id": "0", "prediction": "A", "mode": "no-tools"}\n')
    with pytest.raises(SystemExit):
        main(["--benchmark", "pandalm", "--data", str(FIX / "pandalm_testset.json"), "--judge", str(toy["judge"]),
              "--no_tools", "--out", str(tmp_path), *BUDGET])
    assert "no run.json" in capsys.readouterr().err


LONG_A = "The Aldren river flows north through Velmora and feeds its mills. " * 150
LONG_B = "Velmora lies on the Tessar, a slow river that floods every spring. " * 120


@pytest.mark.parametrize("policy", ["truncate", "fail"])
def test_a_row_longer_than_the_context_is_flagged_counted_and_never_crashes(toy, tmp_path, policy):
    """The tiny judge with a 700-token context (24 for the completion): the long row is cut to equal shares, or
    judged as a failure without being sent; either way it is counted and named in results.json and report.md."""
    data = tmp_path / "autoj.jsonl"
    rows = [{"scenario": "open_question", "label": 0, "prompt": "Which river?", "response 1": LONG_A,
             "response 2": LONG_B},
            {"scenario": "open_question", "label": 1, "prompt": "Which river?", "response 1": "Aldren.",
             "response 2": "Tessar."}]
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = tmp_path / "out"
    got = main(["--benchmark", "autoj", "--data", str(data), "--judge", str(toy["judge"]), "--no_tools",
                "--out", str(out), "--judge_max_context_tokens", "700", "--judge_context_policy", policy, *BUDGET])
    records = VerdictStore(out / "verdicts.jsonl").records
    long_id = next(i for i, r in records.items() if r["context"]["status"] != "fit")
    ctx = got["judging"]["context"]
    assert ctx["checked"] == 2 and ctx[{"truncate": "truncated", "fail": "failed"}[policy]] == 1
    assert ctx["truncated"] + ctx["failed"] == 1 and list(ctx["rows"]) == [long_id]
    assert results(out)["judging"]["context"] == ctx and got["judging"]["context_policy"] == policy
    record = records[long_id]
    assert record["context"]["limit"] == 700 - 24 and record["context"]["prompt_tokens"] > 2000
    report_md = (out / "report.md").read_text()
    assert f"⚠ `{long_id}`" in report_md and f"policy {policy})" in report_md
    if policy == "truncate":
        cut = record["context"]["cut_tokens"]
        from transformers import AutoTokenizer

        tok = AutoTokenizer.from_pretrained(toy["judge"])
        lengths = {k: len(tok.encode(t, add_special_tokens=False)) for k, t in (("answer_a", LONG_A),
                                                                                 ("answer_b", LONG_B))}
        # autoj keeps response 1 as A: both answers keep the same number of tokens
        assert set(cut) == {"answer_a", "answer_b"}
        assert lengths["answer_a"] - cut["answer_a"] == lengths["answer_b"] - cut["answer_b"]
        assert all(o["finish_reason"] != "context" for o in record["orders"])
    else:
        assert record["prediction"] == "fail" and record["unparsed_orders"] == 2
        assert all(o["finish_reason"] == "context" and o["text"] == "" for o in record["orders"])
        assert got["counts"]["predictions"].get("fail", 0) >= 1
