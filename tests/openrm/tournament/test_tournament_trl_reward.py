"""The TRL tournament reward: hand-computed rewards for small groups, groups kept whole when they straddle two
ranks (ranks simulated by threads with a real barrier-based all-gather), rewards independent of the number of
ranks, one tournament per group, a clear error for a batch that is not laid out in groups, and a broken judge
giving finite equal rewards with its failures logged."""

from __future__ import annotations

import json
import threading
from types import SimpleNamespace

import numpy as np
import pytest

from openrm.tournament import Arena, Group, MultiRound, PairwiseGroupJudge, RoundRobin, SeededSingleElimination
from openrm.tournament.trl_reward import TournamentReward, text_hash


def strength(text: str) -> int:
    return int(text.split("-")[1])


class Perfect:
    """A one-order judge by strength; records every item (thread-safe: simulated ranks share it)."""

    orders = 1

    def __init__(self, answer=None):
        self.items, self.lock, self.answer = [], threading.Lock(), answer

    def compare_many(self, items):
        with self.lock:
            self.items += list(items)
        if self.answer is not None:
            return [self.answer] * len(items)
        return [1.0 if strength(x) > strength(y) else 0.0 if strength(x) < strength(y) else 0.5 for _, x, y in items]


class Solo:
    rank, world_size = 0, 1

    def all_gather(self, obj):
        return [obj]


class Threads:
    """`n` simulated ranks: `view(r).all_gather` blocks until every rank has contributed, like the real collective."""

    def __init__(self, n: int):
        self.n, self.barrier, self.slots = n, threading.Barrier(n, timeout=30), [None] * n

    def view(self, rank: int):
        hub = self

        class View:
            world_size = hub.n

            def all_gather(self, obj):
                hub.slots[self.rank] = obj
                hub.barrier.wait()
                out = list(hub.slots)
                hub.barrier.wait()
                return out

        view = View()
        view.rank = rank
        return view


def batch(n_prompts: int, g: int, seed: int = 0):
    """A TRL-style generation batch: each prompt repeated g times, consecutively; candidate texts carry strengths."""
    rng = np.random.default_rng(seed)
    prompts, completions, ids = [], [], []
    for p in range(n_prompts):
        for s in rng.permutation(g):
            prompts.append(f"question {p}?")
            completions.append(f"q{p}c{s}-{s}")
            ids.append(f"prompt-{p}")
    return prompts, completions, ids


def call(reward, prompts, completions, ids, step=0, metrics=None):
    log = (lambda k, v: metrics.setdefault(k, []).append(v)) if metrics is not None else None
    return reward(prompts=prompts, completions=completions, id=ids,
                  trainer_state=SimpleNamespace(global_step=step), log_metric=log)


def test_round_robin_win_rates_by_hand():
    prompts, _, ids = batch(2, 3)
    completions = ["a-2", "b-0", "c-1", "d-5", "e-5", "f-1"]
    judge = Perfect()
    metrics = {}
    reward = TournamentReward(RoundRobin(), Arena(judge), 3, shaping="win_rate", collective=Solo())
    got = call(reward, prompts, completions, ids, metrics=metrics)
    assert got == [1.0, 0.0, 0.5, 0.75, 0.75, 0.0]  # d and e tie with each other, beat f
    for q, x, y in judge.items:  # the judge only ever sees candidates of the question's own group
        group = completions[:3] if q == "question 0?" else completions[3:]
        assert x in group and y in group
    assert metrics["tournament/judge_calls"] == [len(judge.items)] == [2 * 3 * 2]  # both orders of 3 pairs x 2
    assert metrics["tournament/ties"] == [1] and metrics["tournament/failures"] == [0]
    assert metrics["tournament/reward_spread"] == [pytest.approx((1.0 + 0.75) / 2)]
    assert reward.__name__ == "tournament_round_robin"


def run_ranks(n_ranks, topology, prompts, completions, ids, step, tmp_path, judge):
    hub = Threads(n_ranks)
    size = len(prompts) // n_ranks
    out, metrics, errors = [None] * n_ranks, [{} for _ in range(n_ranks)], []

    def rank(r):
        try:
            reward = TournamentReward(topology, Arena(judge, seed=7), 4, shaping="rank_z",
                                      match_log=str(tmp_path / f"w{n_ranks}" / "matches.jsonl"), collective=hub.view(r))
            sl = slice(r * size, (r + 1) * size)
            out[r] = call(reward, prompts[sl], completions[sl], ids[sl], step, metrics[r])
        except Exception as exc:  # surfaced below
            errors.append(exc)
            hub.barrier.abort()

    threads = [threading.Thread(target=rank, args=(r,)) for r in range(n_ranks)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]
    return out, metrics


@pytest.mark.parametrize("topology", [RoundRobin(), SeededSingleElimination()], ids=lambda t: t.name)
def test_groups_straddling_two_ranks_are_played_whole_and_once(topology, tmp_path):
    prompts, completions, ids = batch(3, 4)  # 12 rows, 6 per rank: the middle group straddles the ranks
    judge2 = Perfect()
    (r0, r1), metrics = run_ranks(2, topology, prompts, completions, ids, 5, tmp_path, judge2)
    assert len(r0) == len(r1) == 6
    judge1 = Perfect()
    (solo,), _ = run_ranks(1, topology, prompts, completions, ids, 5, tmp_path, judge1)
    assert r0 + r1 == solo  # the same rewards whatever the number of ranks
    assert sorted(judge2.items) == sorted(judge1.items)  # each group judged once in all, not once per rank
    for q, x, y in judge2.items:  # never a pair across groups
        assert x.startswith(f"q{q.split()[1][:-1]}c") and y.startswith(f"q{q.split()[1][:-1]}c")
    for g in range(3):  # the best of each group gets the top reward: groups were scored as wholes
        rows = range(4 * g, 4 * g + 4)
        best = max(rows, key=lambda n: strength(completions[n]))
        assert solo[best] == max(solo[n] for n in rows)
    assert metrics[0] == metrics[1]  # the whole batch's figures on both ranks
    logs = [[json.loads(x) for x in (tmp_path / "w2" / f"matches.rank{r}.jsonl").read_text().splitlines()]
            for r in (0, 1)]
    assert [rec["group"] for rec in logs[0]] == [0, 2] and [rec["group"] for rec in logs[1]] == [1]
    rec = logs[1][0]
    assert rec["step"] == 5 and rec["candidates"] == [text_hash(c) for c in completions[4:8]]
    assert all(len(m["views"]) == 2 for m in rec["matches"])  # a one-order judge: both orders logged
    assert rec["matches"][0]["views"][0][2] in (0.0, 1.0)


def test_each_group_is_seeded_from_seed_step_and_group_id(tmp_path):
    prompts, completions, ids = batch(4, 8)
    group = PairwiseGroupJudge(Perfect())
    topology = MultiRound(2, 1, 1, 1)

    calls = iter(range(100))

    def drawn(step):  # the first round's pairings of each group, from the reward's match log
        log = tmp_path / f"call{next(calls)}" / "m.jsonl"
        reward = TournamentReward(topology, Arena(group=group, seed=3), 8, shaping="min_max", match_log=str(log),
                                  collective=Solo())
        call(reward, prompts, completions, ids, step)
        records = [json.loads(x) for x in log.with_name("m.rank0.jsonl").read_text().splitlines()]
        return [[tuple(m["members"]) for m in r["group_matches"][:4]] for r in records]

    groups = [Group(f"question {p}?", tuple(completions[8 * p:8 * p + 8]), p) for p in range(4)]
    direct = [[m.members for m in r.group_matches[:4]]
              for r in Arena(group=group, seed=3).run_many(topology, groups, step=9)]
    assert drawn(9) == direct == drawn(9)  # (seed, step, group id) fixes the draws, not the call
    assert drawn(10) != direct


def test_a_batch_not_laid_out_in_groups_is_a_clear_error():
    prompts, completions, ids = batch(2, 4)
    reward = TournamentReward(RoundRobin(), Arena(Perfect()), 4, collective=Solo())
    with pytest.raises(ValueError, match="RepeatSampler"):
        call(reward, prompts[1:] + prompts[:1], completions, ids[1:] + ids[:1])
    with pytest.raises(ValueError, match="multiple of group_size"):
        call(reward, prompts[:6], completions[:6], ids[:6])


@pytest.mark.parametrize("answer", ["A", 2.0, np.float32("nan")], ids=repr)
def test_a_garbage_judge_gives_finite_equal_rewards_and_logged_failures(answer):
    prompts, completions, ids = batch(2, 4)
    metrics = {}
    reward = TournamentReward(SeededSingleElimination(), Arena(Perfect(answer)), 4, collective=Solo())
    got = np.array(call(reward, prompts, completions, ids, metrics=metrics))
    assert np.all(np.isfinite(got)) and np.ptp(got[:4]) == 0 and np.ptp(got[4:]) == 0
    assert metrics["tournament/failure_rate"] == [1.0] and metrics["tournament/reward_spread"] == [0.0]


def test_a_crashing_topology_gives_equal_rewards_and_is_counted():
    class Broken:
        name = "broken"

        def play(self, k, rng):
            raise RuntimeError("bug")
            yield

    metrics = {}
    prompts, completions, ids = batch(2, 3)
    reward = TournamentReward(Broken(), Arena(Perfect()), 3, collective=Solo())
    assert call(reward, prompts, completions, ids, metrics=metrics) == [0.0] * 6
    assert metrics["tournament/crashed_groups"] == [2]


@pytest.mark.slow
def test_two_cpu_processes_play_each_straddling_group_whole_and_once(tmp_path):
    """Real processes under `accelerate launch` (gloo all-gather): the middle group's completions live on both
    ranks, yet the judge only ever sees candidates of one group together and each group is judged on one rank."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[3]
    worker = Path(__file__).with_name("two_process_reward.py")
    env = {**os.environ, "ACCELERATE_USE_CPU": "true", "OMP_NUM_THREADS": "1"}
    cmd = [sys.executable, "-m", "accelerate.commands.launch", "--config_file",
           str(root / "configs/accelerate/multi_cpu.yaml"), "--main_process_port", str(29000 + os.getpid() % 500),
           str(worker), str(tmp_path)]
    result = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=env, cwd=root)
    assert result.returncode == 0, result.stderr[-3000:]
    sys.path.insert(0, str(worker.parent))
    from two_process_reward import G, Recording, generation_batch

    prompts, completions, ids = generation_batch()
    group_of = {c: n // G for n, c in enumerate(completions)}
    seen = [json.loads((tmp_path / f"seen.rank{r}.json").read_text()) for r in (0, 1)]
    played = [{group_of[x] for _, x, y in items} for items in seen]
    assert played == [{0, 2}, {1}]  # group g on rank g % 2, the straddling group 1 included
    for items in seen:
        assert all(group_of[x] == group_of[y] and prompts[4 * group_of[x]] == q for q, x, y in items)
    solo_judge = Recording()
    solo = TournamentReward(SeededSingleElimination(), Arena(solo_judge, seed=11), G, shaping="rank_z",
                            collective=Solo())
    expected = call(solo, prompts, completions, ids, step=2)
    got = [x for r in (0, 1) for x in json.loads((tmp_path / f"rewards.rank{r}.json").read_text())]
    assert got == pytest.approx(expected) and len(got) == 12
    assert sorted(map(tuple, seen[0] + seen[1])) == sorted(map(tuple, solo_judge.items))
    assert (tmp_path / "matches.rank1.jsonl").read_text().count("\n") == 1


def test_a_search_agents_judge_sees_only_its_final_answers_never_the_evidence():
    from openrm.agent import final_answer

    evidence = '<search>WIKI("x")</search>\n<information>\nDoc 1 (Title: X) a-9 is the truth.\n</information>\n'
    completions = [f"{evidence}<answer>a-{s}</answer>" if s % 2 else f"<answer>b-{s}</answer>" for s in range(4)]
    judge = Perfect()
    reward = TournamentReward(RoundRobin(), Arena(judge), 4, shaping="win_rate", collective=Solo(),
                              candidate=final_answer)
    got = call(reward, ["question?"] * 4, completions, ["p"] * 4)
    assert got == [0.0, 1 / 3, 2 / 3, 1.0]  # ranked by the answers' own strengths, not the evidence's a-9
    shown = {text for _, x, y in judge.items for text in (x, y)}
    assert shown == {"b-0", "a-1", "b-2", "a-3"}


def test_observed_shares_of_the_shown_answers_are_logged_with_the_batch():
    from eval.hostile import trait_shares

    completions = ["q0c0-0", "I do not know.", "q0c2-2 Some sources say otherwise.", "q0c3-3</search>"]
    reward = TournamentReward(RoundRobin(), Arena(Perfect()), 4, collective=Solo(), observe=trait_shares)
    metrics = {}
    call(reward, ["question 0?"] * 4, completions, ["p"] * 4, metrics=metrics)
    assert metrics["hostile/refusal"] == [0.25] and metrics["hostile/hedge"] == [0.25]
    assert metrics["hostile/search_tag"] == [0.25] and metrics["hostile/padding"] == [0.0]
