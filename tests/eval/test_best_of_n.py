"""Best-of-N picks against hand counts on an UltraFeedback-shaped fixture, a position-biased judge, the toy-oracle
path through the command line, resume and the equal-budget filter."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from eval.best_of_n import main
from eval.candidate_sets import load_candidate_sets
from eval.picks import BestOfNArguments, run
from toy.candidate_sets import toy_candidate_rows
from toy.oracle import ToyOracle, toy_prompts
from toy.world import ToyWorld

FIXTURE = Path(__file__).parent / "fixtures" / "ultrafeedback_bon.jsonl"
PAIRWISE = ["round_robin", "seeded_single_elimination", "double_elimination", "swiss", "live"]


class FirstShown:
    """Position bias and nothing else: always prefers the answer shown first, one order per item."""

    orders = 1

    def compare_many(self, items):
        return [1.0] * len(items)


def arguments(tmp_path, **kw) -> BestOfNArguments:
    return BestOfNArguments(**{"data": str(FIXTURE), "out": str(tmp_path / "out"), "judge": "test-judge",
                               "no_tools": True, **kw})


def picks(tmp_path, topology: str | None = None) -> list[dict]:
    rows = [json.loads(line) for line in (tmp_path / "out" / "picks.jsonl").read_text().splitlines()]
    return [r for r in rows if topology is None or r["topology"] == topology]


def test_rating_oracle_picks_equal_the_hand_count(tmp_path, rating_judge):
    results = run(arguments(tmp_path, topologies=PAIRWISE), pairwise=rating_judge(FIXTURE))
    # five usable sets (the one-completion row is skipped); set 3 keeps 3 candidates after its "N/A" one is dropped;
    # set 4's top rating is shared by candidates 0 and 1
    assert results["candidate_sets"]["sets"] == 5 and results["gold_top_ties"] == 1
    for name in PAIRWISE:
        m = results["topologies"][name]
        assert (m["accuracy"], m["strict_accuracy"], m["strict_n"]) == (1.0, 1.0, 4), name
        assert m["pick_rating"] == pytest.approx(40.5 / 5)  # 9, 8, 9, 6.5, 8
        assert m["oracle_rating"] == pytest.approx(40.5 / 5)
        assert m["random_rating"] == pytest.approx((6.25 + 4.5 + 5.75 + 5.5 + 6.0) / 5)  # each set's mean
        assert m["random_accuracy"] == pytest.approx((1 / 4 + 1 / 4 + 1 / 4 + 1 / 3 + 2 / 4) / 5)
        assert m["gap_closed"] == pytest.approx(1.0)
    assert results["topologies"]["round_robin"]["judge_calls_per_prompt"] == pytest.approx((6 * 4 + 3) / 5)
    rows = picks(tmp_path, "round_robin")
    assert [r["pick"] for r in rows[:4]] == [2, 2, 2, 2] and rows[4]["pick"] in (0, 1)
    assert [r["gold_best"] for r in rows] == [[2], [2], [2], [2], [0, 1]]
    assert rows[4]["tied_top"] and not any(r["tied_top"] for r in rows[:4])  # the judge ties the co-best pair
    assert len(picks(tmp_path)) == 5 * len(PAIRWISE)
    report = (tmp_path / "out" / "report.md").read_text()
    assert "| round_robin | 100.00 | 100.00 | 8.10 | 5.60 | 8.10 | 100.00 | 5.40 |" in report
    assert json.loads((tmp_path / "out" / "results.json").read_text())["topologies"].keys() == set(PAIRWISE)


def test_fine_grained_gold_scores_the_same_picks_differently(tmp_path, rating_judge):
    """The judge still prefers overall_score; against fine-grained_score its picks are right in sets 1, 3 and 4
    only (set 0's fine-grained best is candidate 1, set 2's is candidate 3)."""
    results = run(arguments(tmp_path, topologies=["round_robin"], rating="fine-grained_score"),
                  pairwise=rating_judge(FIXTURE))
    m = results["topologies"]["round_robin"]
    assert (m["accuracy"], m["strict_accuracy"], m["strict_n"]) == (3 / 5, 2 / 4, 4)
    assert m["pick_rating"] == pytest.approx((2.0 + 4.0 + 4.0 + 3.5 + 4.0) / 5)
    assert m["random_rating"] == pytest.approx((13.5 / 4 + 10.25 / 4 + 12.5 / 4 + 8.5 / 3 + 13.0 / 4) / 5)
    assert m["oracle_rating"] == pytest.approx((4.5 + 4.0 + 4.5 + 3.5 + 4.0) / 5)


def test_a_position_biased_judge_gives_ties_and_a_seeded_draw(tmp_path):
    topologies = ["round_robin", "seeded_single_elimination", "multi_round"]
    results = run(arguments(tmp_path, topologies=topologies, seed=3), pairwise=FirstShown())
    sets = load_candidate_sets(FIXTURE).sets
    rr = picks(tmp_path, "round_robin")
    for s, r in zip(sets, rr, strict=True):
        k = len(s.candidates)
        assert r["tied_top"] and r["scores"] == [0.5] * k
        assert (r["ties"], r["failures"], r["judge_calls"]) == (k * (k - 1) // 2, 0, k * (k - 1))  # both orders
        assert r["pick"] == int(np.random.default_rng([3, s.index]).choice(k))
    assert len({r["pick"] for r in rr}) > 1  # not "always the first candidate"
    assert all(r["tied_top"] for r in picks(tmp_path))
    assert results["topologies"]["multi_round"]["failures"] > 0  # no clear group winner: nobody advances
    assert results["topologies"]["multi_round"]["ties"] == 0
    # its first round's pairs fail and the round ends the tournament: k=4 → 2 pairs, k=3 → 1 pair (one sits out),
    # each shown in both orders by the group judge over a one-order judge
    assert [r["judge_calls"] for r in picks(tmp_path, "multi_round")] == [4, 4, 4, 2, 4]


def test_toy_oracle_end_to_end_through_the_command_line(tmp_path):
    world = ToyWorld(0)
    rows = toy_candidate_rows(world, 6, 4)
    oracle = ToyOracle.from_rows(world, toy_prompts(world, 6, "train", style="long"))
    for row in rows:  # the file's gold ratings are the oracle's own count of right facts
        assert [oracle.agreements(row["question"], c) for c in row["candidates"]] == row["ratings"]
    data = tmp_path / "toy.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = tmp_path / "out"
    results = main(["--data", str(data), "--judge", "toy-oracle", "--world_seed", "0", "--out", str(out),
                    "--topologies", "round_robin", "--topologies", "swiss", "anchor"])
    assert list(results["topologies"]) == ["round_robin", "swiss", "anchor"]
    m = results["topologies"]["round_robin"]
    assert m["accuracy"] == 1.0 and m["pick_rating"] == pytest.approx(np.mean([max(r["ratings"]) for r in rows]))
    assert m["random_accuracy"] < 1.0
    # every topology pays for its own matches (no cache carried over from the one played before it)
    assert [t["judge_calls_per_prompt"] for t in results["topologies"].values()] == [6.0, 4.0, 3.0]
    assert len(picks(tmp_path)) == 6 * 3
    assert "| round_robin | 100.00 |" in (out / "report.md").read_text()
    with pytest.raises(SystemExit) as exit_info:  # another world's oracle does not know these questions
        main(["--data", str(data), "--judge", "toy-oracle", "--world_seed", "1", "--out", str(tmp_path / "other")])
    assert exit_info.value.code == 2


def test_resume_skips_finished_prompts_and_refuses_other_settings(tmp_path, rating_judge):
    first = rating_judge(FIXTURE)
    run(arguments(tmp_path, topologies=["round_robin", "swiss"], limit=3), pairwise=first)
    before = picks(tmp_path)
    sets = load_candidate_sets(FIXTURE).sets
    assert {q for q in first.asked} == {s.question for s in sets[:3]}
    second = rating_judge(FIXTURE)
    results = run(arguments(tmp_path, topologies=["round_robin", "swiss"]), pairwise=second)
    assert second.asked and set(second.asked) == {s.question for s in sets[3:]}  # only the two new prompts
    after = picks(tmp_path)
    assert after[:len(before)] == before and len(after) == 2 * 5
    assert results["topologies"]["round_robin"]["prompts"] == 5
    third = rating_judge(FIXTURE)
    run(arguments(tmp_path, topologies=["round_robin"]), pairwise=third)
    assert third.asked == []  # everything was there
    with pytest.raises(ValueError, match="other settings"):
        run(arguments(tmp_path, topologies=["round_robin"], seed=1), pairwise=rating_judge(FIXTURE))
    with pytest.raises(ValueError, match="other settings"):
        run(arguments(tmp_path, topologies=["round_robin"], rating="fine-grained_score"),
            pairwise=rating_judge(FIXTURE))


def test_budget_skips_topologies_that_need_more_calls(tmp_path, rating_judge):
    topologies = ["round_robin", "anchor", "swiss", "seeded_single_elimination"]
    results = run(arguments(tmp_path, topologies=topologies, budget=5), pairwise=rating_judge(FIXTURE))
    # expected calls per prompt over k = 4, 4, 4, 3, 4: round robin 5.4, anchor 2.8, swiss 3.6, single elim. 5.6
    assert results["skipped_topologies"] == {"round_robin": {"expected_calls_per_prompt": pytest.approx(5.4)},
                                             "seeded_single_elimination": {
                                                 "expected_calls_per_prompt": pytest.approx(5.6)}}
    assert list(results["topologies"]) == ["anchor", "swiss"]
    assert {r["topology"] for r in picks(tmp_path)} == {"anchor", "swiss"}
    assert all(m["judge_calls_per_prompt"] <= 5 for m in results["topologies"].values())
    report = (tmp_path / "out" / "report.md").read_text()
    assert "| round_robin | skipped: 5.40 expected calls/prompt > budget" in report
    # a one-order judge is shown each match twice: anchor needs 5.6 calls, swiss 7.2
    biased = run(arguments(tmp_path / "biased", topologies=["anchor", "swiss"], budget=6), pairwise=FirstShown())
    assert list(biased["topologies"]) == ["anchor"] and list(biased["skipped_topologies"]) == ["swiss"]
    assert biased["topologies"]["anchor"]["judge_calls_per_prompt"] == pytest.approx(5.6)


def test_exported_judge_is_built_by_the_eval_builder(tmp_path):
    """A tiny exported judge (random weights) through `--judge PATH --no_tools`: eval.run's builder makes it, it
    judges both orders per item, and run.json records the judge folder."""
    from toy.tiny import build

    judge_dir = build(tmp_path / "tiny")
    data = tmp_path / "sets.jsonl"
    data.write_text(json.dumps({"id": "q", "question": "Which is larger, 3 or 5?", "candidates": ["3", "5", "4"],
                                "ratings": [0, 2, 1]}) + "\n")
    out = tmp_path / "out"
    results = main(["--data", str(data), "--judge", str(judge_dir), "--no_tools", "--out", str(out),
                    "--topologies", "anchor", "--judge_max_completion_tokens", "24", "--judge_max_new_tokens", "12"])
    m = results["topologies"]["anchor"]
    assert results["mode"] == "no-tools" and results["judge_orders"] == 2
    assert m["prompts"] == 1 and m["judge_calls_per_prompt"] == 2.0  # k - 1 items, both orders inside each
    assert json.loads((out / "run.json").read_text())["judge"] == str(judge_dir.resolve())
    row = picks(tmp_path, "anchor")[0]
    assert 0 <= row["pick"] < 3 and row["correct"] == (row["pick"] == 1)
