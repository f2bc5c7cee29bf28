"""`python -m train.select_preferences`: selection accuracy against hand counts (a predictions file on binarized rows,
a scripted judge on UltraFeedback raw sets), what --on_tie does with ties and failures, the toy oracle through the
command line, a tiny exported judge, and a served judge killed with SIGKILL that resumes without judging twice."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from eval.candidate_sets import load_candidate_sets
from eval.judging import VerdictStore
from eval.preference_sets import load_preference_sets
from train.preference_selection import SelectArguments, run
from train.select_preferences import main

ROOT = Path(__file__).resolve().parents[2]
FIX = ROOT / "tests" / "eval" / "fixtures"
BINARIZED = FIX / "ultrafeedback_binarized.jsonl"
PREDICTIONS = FIX / "ultrafeedback_binarized_predictions.jsonl"
RAW = FIX / "ultrafeedback_bon.jsonl"
BUDGET = ["--judge_max_completion_tokens", "64", "--judge_max_new_tokens", "32"]


def predicted(out: Path, *extra: str) -> dict:
    return main(["--data", str(BINARIZED), "--predictions", str(PREDICTIONS), "--out", str(out), *extra])


def dataset(out: Path) -> list[dict]:
    from datasets import load_from_disk

    return load_from_disk(str(out / "dataset")).to_list()


def test_selection_accuracy_equals_the_hand_count(tmp_path):
    """The predictions file is right on rows 0, 5 and 10, wrong on row 1, ties row 3, fails row 4, says A on the
    tied-score row 2 and has nothing for row 11 (a failure)."""
    report = predicted(tmp_path)
    m = report["selection"]
    assert (m["rows"], m["n"], m["correct"], m["decided"]) == (8, 7, 3, 4)  # row 2's scores tie: not counted
    assert m["accuracy"] == pytest.approx(3 / 7) and m["decided_accuracy"] == pytest.approx(3 / 4)
    assert m["pairs"]["accuracy"] == m["accuracy"] and m["sets"]["n"] == 0
    assert (m["tied_pairs"], m["tied_decided"], m["tied_agreement"]) == (1, 1, 1.0)
    assert m["outcomes"] == {"decided": 5, "tie": 1, "failure": 2}
    assert m["judge_calls"] == 8 and report["judged_now"] == 8
    assert report["rows"]["skipped_rows"] == {
        "chosen: the last message is not an assistant turn": 1, "not JSON (Expecting value)": 1,
        "chosen and rejected hold different conversations before their responses": 1,
        "missing field 'rejected'": 1}
    assert [s["where"] for s in report["skipped_first"]] == [f"{BINARIZED}:{n}" for n in (7, 8, 9, 10)]
    md = (tmp_path / "report.md").read_text()
    assert "| all | 42.86 | 3 / 7 | 75.00 | 4 | 75.18 | 68.87 |" in md
    assert json.loads((tmp_path / "report.json").read_text())["selection"] == m


def test_ties_and_failures_follow_the_flag_without_judging_again(tmp_path):
    records = {}
    kept = {}
    for flag in ("drop", "keep_original", "keep"):
        report = predicted(tmp_path, "--on_tie", flag)
        assert report["judged_now"] == (8 if flag == "drop" else 0)  # the same --out: nothing judged twice
        kept[flag] = {r["id"][:8]: r for r in dataset(tmp_path)}
        records = VerdictStore(tmp_path / "selections.jsonl", key="index").records
        assert report["output"]["pairs"] == len(kept[flag])
    ids = {r["index"]: r["id"][:8] for r in records.values()}
    undecided = {i for i, r in records.items() if r["outcome"] != "decided"}
    assert undecided == {3, 4, 11}
    assert set(kept["drop"]) == {ids[i] for i in (0, 1, 2, 5, 10)}
    assert set(kept["keep_original"]) == set(kept["keep"]) == set(ids.values())
    rows = {r.index: r for r in load_preference_sets(BINARIZED).sets}
    for i in undecided:
        original, drawn = kept["keep_original"][ids[i]], kept["keep"][ids[i]]
        assert original["chosen"][0]["content"] == rows[i].candidates[0]  # the file's chosen
        assert drawn["chosen"][0]["content"] == rows[i].candidates[records[i]["chosen"]]  # the judge's seeded draw
    # a decided row takes the judge's pair whatever the flag: row 1 is the judge's mistake, kept as the judge said
    assert kept["drop"][ids[1]]["chosen"] == [{"role": "assistant", "content": "Charles Dickens."}]
    assert kept["drop"][ids[0]]["prompt"] == [{"role": "user", "content": rows[0].question}]
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["output"]["actions"] == {"judge's pair": 5, "kept the judge's draw (failure)": 2,
                                           "kept the judge's draw (tie)": 1}
    assert predicted(tmp_path, "--on_tie", "keep_original", "--output_format", "standard")["output"]["format"] \
        == "standard" and dataset(tmp_path)[0]["chosen"] == "100 degrees Celsius."


def test_sets_of_more_than_two_play_a_tournament_best_and_worst(tmp_path, rating_judge):
    judge = rating_judge(RAW, flip=lambda q: q.startswith("Write a haiku"))
    args = SelectArguments(data=str(RAW), out=str(tmp_path), judge="test-judge", no_tools=True)
    report = run(args, pairwise=judge)
    m = report["selection"]
    # ratings (7,4,9,5) (6,1,8,3) (5,2,9,7) (6,4,6.5) (8,8,5,3); the haiku set (2nd) is judged upside down
    assert (m["n"], m["correct"], m["accuracy"]) == (5, 4, 0.8)
    assert m["sets"]["rejected_accuracy"] == 0.8 and (m["sets"]["order_accuracy"], m["sets"]["order_n"]) == (0.8, 5)
    assert m["tied_top"] == 1  # the sleep set's two 8s tie at the top
    assert judge.calls == m["judge_calls"] == 6 + 6 + 6 + 3 + 6  # round robin: every pair once (both orders inside)
    picks = {r["index"]: (r["chosen"], r["rejected"]) for r in
             VerdictStore(tmp_path / "selections.jsonl", key="index").records.values()}
    assert {i: picks[i] for i in (0, 1, 2, 3)} == {0: (2, 1), 1: (1, 2), 2: (2, 1), 3: (2, 1)}
    assert picks[4][0] in (0, 1) and picks[4][1] == 3
    pairs = dataset(tmp_path)
    sets = load_candidate_sets(RAW).sets
    assert pairs[0] == {"id": "0", "prompt": "Name three primary colours.", "chosen": sets[0].candidates[2],
                        "rejected": "Green."}
    assert report["output"]["format"] == "standard" and len(pairs) == 5


def test_toy_oracle_through_the_command_line(tmp_path):
    from toy.candidate_sets import toy_candidate_rows
    from toy.world import ToyWorld

    rows = toy_candidate_rows(ToyWorld(0), 8, 4)
    data = tmp_path / "toy.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    report = main(["--data", str(data), "--judge", "toy-oracle", "--world_seed", "0", "--out", str(tmp_path / "o"),
                   "--topology", "seeded_single_elimination"])
    m = report["selection"]
    ordered = [r for r in rows if len(set(r["ratings"])) > 1]
    assert m["n"] == len(ordered) and m["accuracy"] == 1.0  # the oracle rates by the same count as the file
    assert m["tied_unlabelled"] == len(rows) - len(ordered)
    for pair in dataset(tmp_path / "o"):
        row = next(r for r in rows if r["id"] == pair["id"])
        assert row["ratings"][row["candidates"].index(pair["chosen"])] == max(row["ratings"])
    with pytest.raises(SystemExit):  # another seed: run.json refuses to mix the two
        main(["--data", str(data), "--judge", "toy-oracle", "--world_seed", "0", "--out", str(tmp_path / "o"),
              "--topology", "seeded_single_elimination", "--seed", "1"])


def test_bad_arguments_exit_with_a_message(tmp_path, capsys):
    with pytest.raises(SystemExit):
        main(["--data", str(BINARIZED), "--out", str(tmp_path)])
    assert "exactly one of --judge" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["--data", str(RAW), "--predictions", str(PREDICTIONS), "--out", str(tmp_path)])
    assert "some rows have more than 2 candidates" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["--data", str(BINARIZED), "--predictions", str(PREDICTIONS), "--on_tie", "flip", "--out", str(tmp_path)])
    assert "--on_tie must be one of" in capsys.readouterr().err


def test_a_tiny_exported_judge_is_built_by_the_eval_builder(tmp_path):
    from toy.tiny import build

    judge_dir = build(tmp_path / "tiny")
    report = main(["--data", str(FIX / "preferences_text.jsonl"), "--judge", str(judge_dir), "--no_tools",
                   "--out", str(tmp_path / "o"), "--limit", "2", "--on_tie", "keep", *BUDGET])
    assert report["mode"] == "no-tools" and report["selection"]["judge_calls"] == 2
    assert sum(report["selection"]["outcomes"].values()) == 2 and report["output"]["pairs"] == 2
    assert json.loads((tmp_path / "o" / "run.json").read_text())["judge"] == str(judge_dir.resolve())


def longer_wins(prompt: str, generated: str) -> str:
    from scripted import answers_in

    time.sleep(0.3)  # slow enough for the kill to land mid-run
    a, b = answers_in(prompt)
    return f"<think>longer</think>\n<answer>{'A' if len(a) >= len(b) else 'B'}</answer>"


@pytest.mark.slow
def test_a_killed_run_resumes_without_judging_a_row_twice(tmp_path):
    """A served judge (a scripted model behind the loopback /v1/completions app) counts every prompt it gets; the
    run is killed with SIGKILL after two rows are stored, then rerun: the stored rows are never sent again."""
    from loopback import serve, vllm_completions_app
    from scripted import Scripted
    from transformers import AutoTokenizer

    from toy.tiny import build

    tiny = build(tmp_path / "tiny")
    tok = AutoTokenizer.from_pretrained(tiny)
    gen = Scripted(tok, longer_wins)
    rows = load_preference_sets(BINARIZED).sets
    out = tmp_path / "out"
    store = out / "selections.jsonl"

    def prompts_per_row(contexts: list[str]) -> dict[int, int]:
        return {r.index: sum(f"Question: {r.question}\n" in c for c in contexts) for r in rows}

    with serve(vllm_completions_app(gen, tok, [])) as url:
        argv = ["--data", str(BINARIZED), "--judge_server", f"{url}/v1", "--judge_model", "tiny", "--judge",
                str(tiny), "--no_tools", "--out", str(out), "--batch_size", "1", "--judge_concurrency", "2", *BUDGET]
        proc = subprocess.Popen([sys.executable, "-m", "train.select_preferences", *argv], cwd=ROOT,
                                env={**os.environ, "PYTHONPATH": str(ROOT)}, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 240
        try:
            while not (store.exists() and len(store.read_text().splitlines()) >= 2):
                assert proc.poll() is None, "the run ended before it could be killed"
                assert time.monotonic() < deadline
                time.sleep(0.05)
            proc.send_signal(signal.SIGKILL)
        finally:
            proc.wait()
        before = VerdictStore(store, key="index").records
        assert 2 <= len(before) < len(rows), "the kill landed after the run finished"
        settled = -1
        while settled != len(gen.contexts):  # the server finishes the request in flight at the kill
            settled = len(gen.contexts)
            time.sleep(1.0)
        first = prompts_per_row(gen.contexts)
        sent = len(gen.contexts)
        report = main(argv)
        second = prompts_per_row(gen.contexts[sent:])
    assert all(first[i] == 2 and second[i] == 0 for i in before)  # both orders once, never again
    assert all(second[r.index] == 2 for r in rows if r.index not in before)
    assert sum(first[r.index] for r in rows if r.index not in before) <= 2  # at most the row in flight at the kill
    after = VerdictStore(store, key="index").records
    assert sorted(after) == [r.index for r in rows] and all(after[i] == before[i] for i in before)
    assert report["judged_now"] == len(rows) - len(before) and report["selection"]["judge_calls"] == len(rows)
    # the scripted model always answers; "4" against "5" is a tie (each order says A: the orders disagree)
    assert report["selection"]["outcomes"] == {"decided": len(rows) - 1, "tie": 1, "failure": 0}


def test_any_jsonl_through_fields_on_the_command_line(tmp_path):
    predictions = tmp_path / "verdicts.jsonl"
    predictions.write_text('{"id": "c1", "prediction": "B"}\n{"id": "c2", "prediction": "A"}\n')
    report = main(["--data", str(FIX / "preferences_custom.jsonl"), "--fields", "prompt=instruction", "chosen=better",
                   "rejected=worse", "id=uid", "--predictions", str(predictions), "--out", str(tmp_path / "o")])
    m = report["selection"]
    assert (m["n"], m["correct"], report["rows"]["skipped_rows"]) == (2, 1, {"missing field 'worse' (mapped to "
                                                                             "rejected)": 1})
    assert [(p["id"], p["chosen"]) for p in dataset(tmp_path / "o")] == [("c1", "Milan."), ("c2", "Jupiter.")]
    assert json.loads((tmp_path / "o" / "run.json").read_text())["pairwise_spec"] == \
        "chosen=better,id=uid,prompt=instruction,rejected=worse"
