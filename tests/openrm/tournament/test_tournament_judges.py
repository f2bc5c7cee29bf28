"""Match-judge adapters: `openrm.judge.Judge` as the pairwise judge (a stub with real Verdict records, and a real
Judge over a scripted model in an Arena), and the rubric group judge against a real FastAPI app under uvicorn on
loopback that scripts its chat completions (valid JSON, out-of-range or repeated numbers, garbage, HTTP errors)."""

from __future__ import annotations

import logging
import threading

import numpy as np
import pytest
from fastapi import FastAPI
from fastapi.responses import JSONResponse
from loopback import serve

from openrm.judge import JudgeRun, Verdict
from openrm.tournament import (
    Arena,
    GroupRequest,
    JudgePairwise,
    MultiRound,
    RoundRobin,
    RubricGroupJudge,
    SeededSingleElimination,
    rank_z,
    select_winners,
)
from openrm.tournament.rubric_judge import parse_winners


def run_of(order, answer):
    return JudgeRun(order, "", answer, answer, True, [], [], "stop", None)


class StubJudge:
    """Answers like `Judge.compare_batch`: real `Verdict`s; the longer answer wins in both orders, except that
    answers containing 'mute' get no verdict in either order and 'flip' makes the orders disagree."""

    def __init__(self):
        self.batches = []

    def compare_batch(self, pairs, progress=False):
        self.batches.append(list(pairs))
        out = []
        for _, a, b in pairs:
            if "mute" in a or "mute" in b:
                ab, ba = None, None
            elif "flip" in a or "flip" in b:
                ab, ba = "A", "B"
            else:
                ab = ba = "A" if len(a) > len(b) else "B"
            out.append(Verdict.from_runs(run_of("AB", ab), run_of("BA", ba)))
        return out


def test_judge_adapter_maps_verdicts_to_p_and_failures_to_none(caplog):
    caplog.set_level(logging.WARNING, logger="openrm.tournament")
    adapter = JudgePairwise(StubJudge())
    assert adapter.orders == 2
    got = adapter.compare_many([("q", "long answer", "short"), ("q", "x", "much longer"), ("q", "mute", "y"),
                                ("q", "flip", "y")])
    assert got == [1.0, 0.0, None, 0.5]
    assert "without a verdict" in caplog.text
    assert adapter.compare_many([]) == []


def test_judge_adapter_in_an_arena_sends_one_item_per_pair_and_ranks_by_length():
    stub = StubJudge()
    answers = [("a" * n) for n in (3, 9, 1, 7, 5, 2)]
    result = Arena(JudgePairwise(stub)).run(SeededSingleElimination(), "q", answers)
    assert result.ranking[0] == 1
    assert sum(len(b) for b in stub.batches) == result.judge_calls and result.inferences == 2 * result.judge_calls
    for batch in stub.batches:  # one canonical order per pair: the Judge runs both itself
        assert len({(x, y) for _, x, y in batch} & {(y, x) for _, x, y in batch}) == 0


@pytest.mark.parametrize("text,n,k,winners,error", [
    ('{"winners": [2]}', 3, 1, [1], None),
    ('I compared them.\n```json\n{"winners": [3, 1]}\n```', 3, 2, [0, 2], None),
    ('draft {"winners": [1]} final {"winners": [2]}', 2, 1, [1], None),
    ('{"winners": [4]}', 3, 1, None, "not candidates"),
    ('{"winners": [0]}', 3, 1, None, "not candidates"),
    ('{"winners": [1, 1]}', 3, 2, None, "repeat"),
    ('{"winners": [1, 2]}', 3, 1, None, "exactly 1"),
    ('{"winners": ["1"]}', 3, 1, None, "integers"),
    ('{"winners": [true]}', 3, 1, None, "integers"),
    ("Candidate 2 is best.", 3, 1, None, "no JSON"),
    ("", 3, 1, None, "no JSON"),
])
def test_parse_winners(text, n, k, winners, error):
    got, err = parse_winners(text, n, k)
    assert got == winners
    assert (err is None) if error is None else (error in err)


def scripted_app(calls: list) -> FastAPI:
    """The task text picks the script; the number of user turns tells a first reply from a repair."""
    app = FastAPI()
    lock = threading.Lock()

    @app.post("/v1/chat/completions")
    def chat(body: dict):
        with lock:
            calls.append(body)
        user_turns = [m["content"] for m in body["messages"] if m["role"] == "user"]
        task = user_turns[0]
        repair = len(user_turns) > 1
        if "SCRIPT:valid" in task:
            reply = 'Candidate 2 cites evidence.\n{"winners": [2]}'
        elif "SCRIPT:badindex" in task:
            reply = '{"winners": [1]}' if repair else '{"winners": [9]}'
        elif "SCRIPT:garbage" in task:
            reply = "They are all lovely."
        elif "SCRIPT:http500" in task:
            return JSONResponse({"error": "overloaded"}, status_code=500)
        elif "SCRIPT:best" in task:  # pick the candidates with the largest number, as the rubric says
            numbers = [int(part.split("\n")[1]) for part in task.split("## Candidate ")[1:]]
            k = int(task.split("Choose the ")[1].split(" ")[0])
            top = np.argsort(numbers)[::-1][:k] + 1
            reply = f'{{"winners": {sorted(top.tolist())}}}'
        else:
            reply = "?"
        return {"id": "x", "object": "chat.completion", "model": body["model"],
                "choices": [{"index": 0, "finish_reason": "stop",
                             "message": {"role": "assistant", "content": reply}}]}

    return app


@pytest.fixture(scope="module")
def server():
    calls: list = []
    with serve(scripted_app(calls)) as url:
        yield url + "/v1", calls


def test_rubric_judge_valid_repaired_and_failed_replies(server, caplog):
    url, calls = server
    caplog.set_level(logging.INFO, logger="openrm.tournament")
    judge = RubricGroupJudge(url, "tiny", max_concurrency=4, http_retries=1)
    cands = ("first", "second", "third")
    reqs = [GroupRequest(f"SCRIPT:{name}", "Prefer evidence.", cands, 1)
            for name in ("valid", "badindex", "garbage", "http500")]
    calls.clear()
    assert judge.select_winners_many(reqs) == [[1], [0], [], []]
    by_script = {}
    for body in calls:
        by_script.setdefault(body["messages"][1]["content"].split("\n")[1], []).append(body)
    assert len(by_script["SCRIPT:valid"]) == 1
    assert len(by_script["SCRIPT:badindex"]) == 2  # one repair turn, which quotes the problem
    assert "not candidates" in by_script["SCRIPT:badindex"][1]["messages"][-1]["content"]
    assert len(by_script["SCRIPT:garbage"]) == 2  # repaired once, then a logged failure
    assert len(by_script["SCRIPT:http500"]) == 2  # one HTTP retry, then a logged failure
    assert "Prefer evidence." in by_script["SCRIPT:valid"][0]["messages"][1]["content"]
    assert "2 of 4 groups failed" in caplog.text
    assert select_winners(judge, "SCRIPT:valid", None, cands, 1) == judge.select_winners("SCRIPT:valid", None,
                                                                                          cands, 1) == [1]
    judge.close()


def test_rubric_judge_drives_a_multi_round_tournament(server):
    url, calls = server
    calls.clear()
    answers = [str(n) for n in (5, 12, 3, 8, 1, 9, 4, 7)]
    with RubricGroupJudge(url, "tiny") as judge:
        result = Arena(group=judge).run(MultiRound(4, 2, 2, 1), "SCRIPT:best", answers, rubric="bigger is better")
    assert len(calls) == result.group_calls == 3  # 8 -> 4 -> 2: two groups, then one
    assert set(np.argsort(-result.scores)[:2].tolist()) == {1, 5}  # 12 and 9 won both of their rounds
    assert result.scores[1] == result.scores[5] == 2


def test_rubric_judge_sends_top_p_only_when_set(server):
    url, calls = server
    for top_p, sent in ((None, None), (0.95, 0.95)):
        calls.clear()
        with RubricGroupJudge(url, "tiny", top_p=top_p) as judge:
            judge.select_winners("SCRIPT:valid", None, ("first", "second", "third"), 1)
        assert calls and all(body.get("top_p") == sent and body["temperature"] == 0.0 for body in calls)
    with pytest.raises(ValueError, match="top_p"):
        RubricGroupJudge(url, "tiny", top_p=0.0)


def test_rubric_guided_pairwise_round_robin_shows_the_rubric_and_ranks_by_win_rate(server):
    from openrm.tournament import GroupPairwise, RoundRobin, win_rate

    url, calls = server
    calls.clear()
    with RubricGroupJudge(url, "tiny") as judge:
        pairwise = GroupPairwise(judge)
        result = Arena(pairwise=pairwise, orders="random", seed=3).run(RoundRobin(), "SCRIPT:best", ["5", "12", "3"],
                                                                       rubric="bigger is better")
        assert len(calls) == 3  # K(K-1)/2 pairs, one order each
        assert all("bigger is better" in body["messages"][-1]["content"] for body in calls)
        assert pairwise.compare_many([("SCRIPT:garbage", "a", "b")]) == [None]  # a failed group: a failure
    assert win_rate(result).tolist() == [0.5, 1.0, 0.0]  # wins / (K - 1)


def test_a_garbage_group_judge_ends_the_tournament_with_equal_rewards(server):
    url, _ = server
    with RubricGroupJudge(url, "tiny") as judge:
        result = Arena(group=judge).run(MultiRound(2, 1, 1, 1), "SCRIPT:garbage", ["a", "b", "c", "d"])
    assert result.failures == len(result.group_matches) == 2 and np.ptp(result.scores) == 0


@pytest.fixture(scope="module")
def tiny_tokenizer(tmp_path_factory):
    from transformers import AutoTokenizer

    from toy.tiny import build

    return AutoTokenizer.from_pretrained(build(tmp_path_factory.mktemp("tiny")))


def real_judge(tokenizer, policy):
    """A real `openrm.judge.Judge` (prompt rendering, both orders, parsing, verdicts) whose model is scripted."""
    from scripted import Scripted

    from openrm.generation import SamplingParams
    from openrm.judge import Judge
    from openrm.rollout import RolloutConfig

    gen = Scripted(tokenizer, policy)
    cfg = RolloutConfig(max_completion_tokens=128, sampling=SamplingParams(max_new_tokens=64, temperature=0.0))
    return Judge(gen, tokenizer, None, cfg), gen


def more_stars_wins(prompt: str, generated: str) -> str:
    from scripted import answers_in

    a, b = answers_in(prompt)
    return f"<think>count</think>\n<answer>{'A' if a.count('*') > b.count('*') else 'B'}</answer>"


def always_first(prompt: str, generated: str) -> str:
    return "<think>first</think>\n<answer>A</answer>"


ANSWERS = [f"answer {i} " + "*" * n for i, n in enumerate((2, 5, 0, 4, 1))]


@pytest.mark.parametrize("topology", [RoundRobin(), SeededSingleElimination()], ids=lambda t: t.name)
def test_real_judge_as_match_judge_ranks_by_content_in_both_orders(tiny_tokenizer, topology):
    judge, gen = real_judge(tiny_tokenizer, more_stars_wins)
    result = Arena(JudgePairwise(judge)).run(topology, "Which is best?", ANSWERS)
    assert result.ranking[0] == 1  # five stars
    if topology.name == "round_robin":
        assert result.ranking == [1, 3, 0, 4, 2]
    # the Judge ran each match in both orders: two rollouts per judge call, in batches
    assert sum(gen.batches) == 2 * result.judge_calls and result.inferences == 2 * result.judge_calls
    assert len(gen.batches) < result.judge_calls


def test_real_judge_with_pure_position_bias_gives_logged_ties_and_equal_rewards(tiny_tokenizer):
    judge, _ = real_judge(tiny_tokenizer, always_first)
    result = Arena(JudgePairwise(judge)).run(RoundRobin(), "Which is best?", ANSWERS)
    # "A" in both orders contradicts itself: a logged tie, never a random winner
    assert result.matches and all(m.status == "tie" and m.p_i == 0.5 for m in result.matches)
    assert np.ptp(result.scores) == 0 and np.ptp(result.ranks) == 0 and np.ptp(rank_z(result)) == 0
