"""The one way to name a judge (openrm.judge_spec.JudgeSpec): each bad combination is a clear ValueError, each kind
opens the right thing (the tiny judge in process, a plugin kind, the recorded constructor of a served or vLLM judge),
and the same flags parse to the same spec in eval.run and train/grpo_policy.py."""

from __future__ import annotations

import pytest

from openrm.judge_spec import JudgeSpec


@pytest.mark.parametrize("kwargs, message", [
    ({"judge": "runs/judge"}, "pass --no_tools"),  # a folder that would silently judge without search
    ({"judge": "runs/judge", "no_tools": True, "judge_server": "http://h:1/v1"}, "--judge_model"),
    ({"judge_server": "http://h:1/v1", "judge_model": "m"}, "--judge .the exported judge folder"),
    ({"judge": "runs/judge", "no_tools": True, "judge_backend": "llama.cpp"}, "--judge_backend must be one of"),
    ({"judge": "toy-oracle"}, "needs --world_seed"),
    ({"judge": "toy-oracle", "world_seed": 0, "retrievers": ["wiki=w"]}, "is not a model"),
    ({"judge": "toy-oracle", "world_seed": 0, "judge_server": "http://h:1/v1", "judge_model": "m"}, "is not a model"),
    ({"no_tools": True}, "give --judge"),
    ({"retrievers": ["wiki=w"]}, "give --judge"),
    ({"judge": "none"}, "set --group_judge rubric"),
    ({"judge": "none", "group_judge": "rubric"}, "needs --group_server and --group_model"),
    ({"judge": "runs/judge", "no_tools": True, "group_judge": "best"}, "--group_judge must be one of"),
    ({"judge": "runs/judge", "no_tools": True, "judge_batch_size": 0}, "must be >= 1"),
    ({"judge": "runs/judge", "no_tools": True, "judge_concurrency": 0}, "must be >= 1"),
    ({"judge": "runs/judge", "no_tools": True, "judge_context_policy": "drop"}, "--judge_context_policy must be"),
    ({"judge": "runs/judge", "no_tools": True, "judge_max_context_tokens": 0}, "--judge_max_context_tokens must"),
    ({"judge": "runs/judge", "no_tools": True, "judge_options": "{max_turns"}, "must be a JSON object"),
    ({"judge": "runs/judge", "no_tools": True, "judge_options": '{"max_turn": 3}'}, "unknown --judge_options"),
    ({"judge": "runs/judge", "no_tools": True, "judge_options": '{"context_policy": "fail"}'},
     "--judge_context_policy"),
    ({"judge": "runs/judge", "retrievers": ["wiki"]}, "CORPUS=LOCATION"),
])
def test_bad_combinations_are_clear_errors(kwargs, message):
    with pytest.raises(ValueError, match=message):
        JudgeSpec(**kwargs)


def test_what_a_run_record_stores():
    folder = JudgeSpec(judge="runs/judge", retrievers=["wiki=w"])
    served = JudgeSpec(judge="runs/judge", no_tools=True, judge_server="http://h:1/v1", judge_model="m")
    assert (folder.mode, folder.locations, served.mode) == ("tools", {"wiki": "w"}, "no-tools")
    assert folder.judge_id().endswith("runs/judge") and folder.judge_id().startswith("/")
    assert served.judge_id().startswith("http://h:1/v1 model=m tokenizer=/")  # eval.run's old record, unchanged
    assert JudgeSpec(judge="toy-oracle", world_seed=3).judge_id() == JudgeSpec(judge="toy-oracle", world_seed=3).mode


def test_a_folder_opens_in_process_with_its_run_settings(tiny_dir):
    from openrm.judge import Judge
    from openrm.tournament.judges import JudgePairwise

    spec = JudgeSpec(judge=str(tiny_dir), no_tools=True, judge_batch_size=6, judge_max_new_tokens=7,
                     judge_options='{"max_turns": 2}')
    judge = spec.open_judge()
    assert isinstance(judge, Judge) and judge.toolbox is None and judge.batch_size == 6
    assert (judge.rollout_cfg.sampling.max_new_tokens, judge.rollout_cfg.max_turns) == (7, 2)
    pairwise, close = spec.open_match([], orders=1)
    assert isinstance(pairwise, JudgePairwise) and pairwise.orders == 1 and callable(close)
    close()
    with pytest.raises(ValueError, match="no judge folder there"):
        JudgeSpec(judge=str(tiny_dir / "missing"), no_tools=True).open_judge()


def test_every_backend_opens_through_one_constructor_with_the_folder_and_its_card(monkeypatch, tiny_dir):
    from openrm.card import JudgeCard
    from openrm.judge import Judge

    calls = []
    monkeypatch.setattr(Judge, "open", classmethod(lambda cls, *a, **kw: calls.append((a, kw)) or "judge"))
    where = ["wiki=idx/wiki"]
    JudgeSpec(judge=str(tiny_dir), retrievers=where, judge_server="http://h:1/v1", judge_model="m",
              judge_concurrency=5, judge_options={"topk": 2}).open_judge()
    JudgeSpec(judge=str(tiny_dir), retrievers=where, judge_backend="vllm", judge_batch_size=256).open_judge()
    JudgeSpec(judge=str(tiny_dir), retrievers=where, judge_device="meta").open_judge(search=False)
    (server, k1), (vllm, k2), (local, k3) = calls
    folder = str(tiny_dir)
    assert (str(server[0]), server[2:], k1) == (folder, (32, {"wiki": "idx/wiki"}, "server"), {
        "server": "http://h:1/v1", "served_model": "m", "concurrency": 5})
    assert isinstance(server[1], JudgeCard) and server[1].topk == 2  # the run setting over the folder's card
    assert (str(vllm[0]), vllm[2:], k2) == (folder, (256, {"wiki": "idx/wiki"}, "vllm"), {})
    assert (str(local[0]), local[2:], k3) == (folder, (32, None, "transformers"), {"device": "meta"})  # no tools


def test_the_library_constructors_take_the_same_path(monkeypatch, tiny_dir):
    from openrm.judge import Judge

    calls = []
    monkeypatch.setattr(Judge, "open", classmethod(lambda cls, *a, **kw: calls.append((a, kw)) or "judge"))
    Judge.from_server("http://h:1/v1", "m", tiny_dir, concurrency=3, batch_size=4)
    Judge.from_vllm(tiny_dir)
    Judge.from_pretrained(tiny_dir, device="meta", dtype="float32", topk=1)
    (server, k1), (vllm, _), (local, k3) = calls
    assert server[2:] == (4, None, "server") and k1["concurrency"] == 3 and k1["served_model"] == "m"
    assert vllm[2:4] == (1024, None)  # vLLM schedules its own batches
    assert local[1].topk == 1 and k3 == {"device": "meta", "dtype": "float32"}


def test_plugin_kinds_none_and_the_group_judge():
    from openrm.tournament.judges import PairwiseGroupJudge
    from openrm.tournament.rubric_judge import RubricGroupJudge
    from toy.oracle import ToyOracle, toy_prompts
    from toy.world import ToyWorld

    rows = toy_prompts(ToyWorld(0), 2)
    oracle, close = JudgeSpec(judge="toy-oracle", world_seed=0).open_match(rows)
    assert isinstance(oracle, ToyOracle) and close is None
    with pytest.raises(ValueError, match="is not a model judge"):
        JudgeSpec(judge="toy-oracle", world_seed=0).open_judge()
    rubric = JudgeSpec(judge="none", group_judge="rubric", group_server="http://h:1/v1", group_model="g",
                       group_top_p=0.95)
    with pytest.raises(ValueError, match="need a match judge"):
        rubric.open_match(rows)
    assert isinstance(rubric.open_group(None), RubricGroupJudge)
    assert isinstance(JudgeSpec(judge="toy-oracle", world_seed=0).open_group(oracle), PairwiseGroupJudge)


JUDGE_FLAGS = ["--judge", "runs/judge", "--judge_server", "http://h:1/v1", "--judge_model", "m",
               "--retrievers", "wiki=idx/wiki", "--world_seed", "4", "--judge_batch_size", "8",
               "--judge_concurrency", "3", "--judge_max_new_tokens", "9", "--judge_context_policy", "fail",
               "--judge_max_context_tokens", "512", "--judge_options", '{"max_turns": 2}']


def test_the_same_flags_parse_the_same_judge_in_eval_run_and_grpo_policy(tmp_path):
    from dataclasses import fields

    from trl import TrlParser

    from eval.evaluation import EvalArguments
    from train.policy_trainer import parse

    (evaluation,) = TrlParser(EvalArguments).parse_args_and_config(
        args=["--benchmark", "pandalm", "--data", "d.json", "--out", str(tmp_path), *JUDGE_FLAGS])
    policy, _, _ = parse(["--dataset", "x.jsonl", "--output_dir", str(tmp_path), "--use_cpu", "true", *JUDGE_FLAGS])
    names = [f.name for f in fields(JudgeSpec)]
    assert [getattr(evaluation, n) for n in names] == [getattr(policy, n) for n in names]
    assert (policy.judge_server, policy.judge_options, policy.world_seed) == ("http://h:1/v1", {"max_turns": 2}, 4)
    assert policy.judge_id() == evaluation.judge_id() and policy.run_options() == evaluation.run_options()
