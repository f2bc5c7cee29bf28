"""The information tokens the overhead yardsticks prefill: the environment's tokens of a trajectory in order, without
the masked EOS that the rollout appends after `</answer>`."""

from __future__ import annotations

from bench.overhead import information_of
from openrm.rollout import Trajectory


def trajectory(finish):
    t = Trajectory(prompt_ids=[1, 2])
    t.extend([10, 11], [-0.1, -0.2])
    t.extend([20, 21, 22], None)  # an <information> block
    t.extend([12], [-0.3])
    if finish == "answer":
        t.extend([0], None)  # the masked EOS
    t.finish_reason = finish
    return t


def test_information_is_the_environment_tokens_without_the_final_eos():
    assert information_of(trajectory("answer")) == [20, 21, 22]


def test_without_an_answer_every_environment_token_counts():
    assert information_of(trajectory("length")) == [20, 21, 22]
    t = trajectory("eos")
    t.extend([30], None)
    assert information_of(t) == [20, 21, 22, 30]
