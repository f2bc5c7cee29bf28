"""train/tool_balance.py: each tool's advantages centred over the step, worked by hand; a logit every question shares
gets no gradient while the question-dependent one keeps its sign; the trainer centres what GRPO hands it."""

from __future__ import annotations

import types

import pytest
import torch

from train.tool_balance import ToolBalancedTrainer, first_tools, tool_centred

W, A = "WIKI", "ARXIV"


def test_each_tool_is_centred_and_a_completion_that_does_not_search_keeps_its_advantage():
    advantages = torch.tensor([1.0, -1.0, 0.5, -0.5, 2.0, 0.0])
    tools = [W, A, W, A, None, W]
    centred, shifts = tool_centred(advantages, tools)
    # WIKI rows 0, 2, 5: mean 0.5; ARXIV rows 1, 3: mean -0.75
    assert shifts == {W: 0.5, A: -0.75}
    assert centred.tolist() == [0.5, -0.25, 0.0, 0.25, 2.0, -0.5]
    assert advantages.tolist() == [1.0, -1.0, 0.5, -0.5, 2.0, 0.0]  # the input is left alone
    with pytest.raises(ValueError, match="one tool per completion"):
        tool_centred(advantages, tools[:-1])


def _grpo_advantages(rewards: torch.Tensor) -> torch.Tensor:
    return ((rewards - rewards.mean(1, keepdim=True)) / rewards.std(1, keepdim=True)).flatten()


def _gradients(advantages, tools, sign, p):
    """Policy P(WIKI) = sigmoid(shared + domain), domain = +d on wiki questions and -d on science ones (`sign`); the
    gradient of sum_i A_i log pi(tool_i) on the shared logit and on d (d log pi / d logit = 1[WIKI] - p)."""
    wiki = torch.tensor([t == W for t in tools], dtype=torch.float32)
    return float((advantages * (wiki - p)).sum()), float((advantages * (wiki - p) * sign).sum())


def test_a_step_whose_tools_already_balance_is_left_as_it_is():
    """A wiki question where WIKI is right (three samples took it) and a science question where ARXIV is right (one
    took it): WIKI's advantages already sum to zero, so nothing moves."""
    advantages = _grpo_advantages(torch.tensor([[1.0, 1.0, 1.0, 0.0], [0.0, 0.0, 0.0, 1.0]]))
    tools = [W, W, W, A, W, W, W, A]
    centred, shifts = tool_centred(advantages, tools)
    assert shifts == {W: 0.0, A: 0.0} and torch.equal(centred, advantages)


def test_an_uneven_step_moves_the_shared_preference_unless_centred():
    """Two wiki questions and one science question, P(WIKI) = 0.5 for all (the domain part not learned yet):
    uncentred, the step pushes WIKI up for every question; centred, the shared logit gets no gradient and the
    domain logit is still pushed the right way (wiki questions to WIKI, science ones to ARXIV)."""
    advantages = _grpo_advantages(torch.tensor([[1.0, 1.0, 0.0, 0.0], [1.0, 0.0, 0.0, 0.0], [0.0, 0.0, 0.0, 1.0]]))
    tools = [W, W, A, A, W, A, A, A, W, W, W, A]
    sign = torch.tensor([1.0] * 8 + [-1.0] * 4)
    shared, domain = _gradients(advantages, tools, sign, 0.5)
    assert shared > 0.5 and domain > 0
    centred, _ = tool_centred(advantages, tools)
    shared_c, domain_c = _gradients(centred, tools, sign, 0.5)
    assert shared_c == pytest.approx(0.0, abs=1e-6)
    assert domain_c > 0


def test_first_tools_reads_the_first_search_of_each_completion():
    texts = ['<think>a</think>\n<search>ARXIV("x")</search>\n<information>p</information>\n'
             '<search>WIKI("y")</search>', "<think>a</think>\n<answer>A</answer>",
             '<think>a</think>\n<search>WIKI("Nisbet")</search>', '<search>BING("x")</search>']
    assert first_tools(texts, (W, A)) == [A, None, W, None]


def test_the_trainer_centres_the_advantages_grpo_hands_it(monkeypatch):
    from trl import GRPOTrainer

    handed = {"completion_ids": torch.tensor([[1, 2], [3, 4], [5, 6]]), "completion_mask": torch.ones(3, 2),
              "advantages": torch.tensor([1.0, 0.0, 3.0])}
    monkeypatch.setattr(GRPOTrainer, "_generate_and_score_completions", lambda self, inputs: dict(handed))
    texts = {1: '<search>WIKI("a")</search>', 3: '<search>WIKI("b")</search>', 5: "<answer>A</answer>"}
    trainer = ToolBalancedTrainer.__new__(ToolBalancedTrainer)
    trainer.balanced_tools = (W, A)
    trainer.processing_class = types.SimpleNamespace(
        batch_decode=lambda ids, skip_special_tokens: [texts[int(row[0])] for row in ids])
    trainer.model = types.SimpleNamespace(training=True)
    trainer._metrics = {"train": {"openrm/tool_centring": []}}
    out = trainer._generate_and_score_completions(inputs=None)
    assert out["advantages"].tolist() == [0.5, -0.5, 3.0]  # the two WIKI searches centred, the answer alone kept
    assert trainer._metrics["train"]["openrm/tool_centring"] == [0.5]
    assert out["completion_ids"] is handed["completion_ids"]


def test_tool_balance_and_order_groups_are_refused_together():
    from train.judge_trainer import OpenRMArguments

    with pytest.raises(ValueError, match="tool_balance and order_groups"):
        OpenRMArguments(dataset="x", retrievers=["wiki=/x", "arxiv=/y"], tool_balance=True, order_groups=True)
