"""Reward: every variant, the correctness gate, over-budget and invalid calls, wrong corpus, no gold tool,
and the TRL adapter."""

import pytest

from openrm.parsing import parse_response
from openrm.reward import VARIANTS, RewardConfig, make_openrm_reward, openrm_reward, score

T = "<think>t</think>"
I = "<information>e</information>"  # noqa: E741


def call(tool):
    return f'<search>{tool}("q")</search>' + I + T


def completion(verdict, *tools):
    return T + "".join(call(t) for t in tools) + f"<answer>{verdict}</answer>"


MALFORMED_RIGHT = completion("A", "WIKI") + " trailing text"  # answer A readable, but malformed
CASES = [
    # variant, completion, label, gold_tool, (em, tool, total, n_calls, n_correct)
    ("composite", completion("A", "WIKI"), "A", "WIKI", (1, 1, 1.5, 1, 1)),
    ("composite", completion("A"), "A", "WIKI", (1, 0, 1.0, 0, 0)),  # lazy: right but never looked
    ("composite", completion("B", "WIKI"), "A", "WIKI", (0, 1, 0.0, 1, 1)),  # gate: wrong verdict earns nothing
    ("composite", completion("A", "WIKI", "ARXIV"), "A", "WIKI", (1, 0.5, 1.25, 2, 1)),  # one wrong corpus
    ("composite", completion("A", "ARXIV"), "A", "WIKI", (1, 0, 1.0, 1, 0)),
    ("composite", completion("A", *["WIKI"] * 5), "A", "WIKI", (1, 0.6, 1.3, 5, 3)),  # calls 4, 5 over budget
    ("composite", completion("A", "GOOGLE", "WIKI"), "A", "WIKI", (1, 0.5, 1.25, 2, 1)),  # invalid call is wrong
    ("composite", completion("A"), "A", None, (1, 1, 1.5, 0, 0)),  # no gold tool: not searching is right
    ("composite", completion("A", "WIKI"), "A", None, (1, 0, 1.0, 1, 0)),
    ("composite", MALFORMED_RIGHT, "A", "WIKI", (0, 1, 0.0, 1, 1)),  # malformed earns no EM, so no tool
    ("composite", T + "no verdict", "A", "WIKI", (0, 0, 0.0, 0, 0)),
    ("composite", completion("A", "WIKI"), "tie", "WIKI", (0, 1, 0.0, 1, 1)),
    ("em_only", completion("A", "WIKI"), "A", "WIKI", (1, 1, 1.0, 1, 1)),
    ("em_only", completion("A"), "A", "WIKI", (1, 0, 1.0, 0, 0)),
    ("em_only", completion("B", "WIKI"), "A", "WIKI", (0, 1, 0.0, 1, 1)),
    ("unit_weight", completion("A", "WIKI"), "A", "WIKI", (1, 1, 2.0, 1, 1)),
    ("unit_weight", completion("A", "WIKI", "ARXIV"), "A", "WIKI", (1, 0.5, 1.5, 2, 1)),
    ("unit_weight", completion("B", "WIKI"), "A", "WIKI", (0, 1, 0.0, 1, 1)),
    ("decoupled", completion("B", "WIKI"), "A", "WIKI", (0, 1, 0.5, 1, 1)),  # no gate: pays tool use anyway
    ("decoupled", completion("A", "WIKI"), "A", "WIKI", (1, 1, 1.5, 1, 1)),
    ("decoupled", MALFORMED_RIGHT, "A", "WIKI", (0, 1, 0.5, 1, 1)),
    ("decoupled", completion("A", "ARXIV"), "A", "ARXIV", (1, 1, 1.5, 1, 1)),
]


@pytest.mark.parametrize(("variant", "text", "label", "gold", "expected"), CASES)
def test_reward_table(variant, text, label, gold, expected):
    got = score(parse_response(text), {"label": label, "gold_tool": gold}, RewardConfig(variant=variant))
    assert tuple(got) == pytest.approx(expected)


def test_every_variant_is_covered_and_bounded():
    assert {c[0] for c in CASES} == set(VARIANTS)
    for variant in VARIANTS.values():
        assert variant.max_total == 1 + variant.lam


def test_lenient_mode_honours_a_malformed_verdict():
    got = score(parse_response(MALFORMED_RIGHT), {"label": "A", "gold_tool": "WIKI"},
                RewardConfig(require_well_formed=False))
    assert got.em == 1 and got.total == 1.5


def test_budget_is_configurable():
    text = completion("A", *["WIKI"] * 4)
    got = score(parse_response(text), {"label": "A", "gold_tool": "WIKI"}, RewardConfig(max_tool_calls=1))
    assert got.tool == pytest.approx(0.25) and got.n_correct_calls == 1


@pytest.mark.parametrize("kwargs", [{"variant": "nope"}, {"max_tool_calls": -1}, {"tools": ()}])
def test_bad_config_is_rejected(kwargs):
    with pytest.raises(ValueError):
        RewardConfig(**kwargs)


def test_trl_adapter_scores_and_logs():
    logged = {}
    completions = [completion("A", "WIKI"), completion("A", "ARXIV"), completion("B"), "garbage"]
    rewards = openrm_reward(completions=completions, label=["A", "A", "A", "A"],
                            gold_tool=["WIKI", "WIKI", "WIKI", "WIKI"], prompts=["p"] * 4,
                            log_metric=lambda k, v: logged.__setitem__(k, v))
    assert rewards == pytest.approx([1.5, 1.0, 0.0, 0.0])
    assert logged["openrm/em"] == pytest.approx(0.5)
    assert logged["openrm/tool"] == pytest.approx(0.25)
    assert logged["openrm/calls_per_trajectory"] == pytest.approx(0.5)
    assert logged["openrm/wrong_tool_call_share"] == pytest.approx(0.5)
    assert logged["openrm/malformed_rate"] == pytest.approx(0.25)


def test_trl_adapter_reads_conversational_completions_and_variant():
    fn = make_openrm_reward(RewardConfig(variant="unit_weight"))
    assert fn.__name__ == "openrm_unit_weight"
    conv = [[{"role": "assistant", "content": completion("B", "ARXIV")}]]
    assert fn(completions=conv, label=["B"], gold_tool=["ARXIV"]) == [2.0]


def test_trl_adapter_rejects_misaligned_columns():
    with pytest.raises(ValueError, match="labels"):
        openrm_reward(completions=["x", "y"], label=["A"], gold_tool=["WIKI", "WIKI"])


def test_trl_adapter_requires_the_gold_tool_column():
    with pytest.raises(ValueError, match="gold_tool"):
        openrm_reward(completions=["x"], label=["A"])


PER_CALL = [
    # variant, completion, label, gold_tool, (em, tool, total): +1 per gold-tool call within the budget
    ("decoupled", completion("B", "WIKI", "WIKI", "WIKI"), "A", "WIKI", (0, 3, 1.5)),  # wrong verdict, paid anyway
    ("decoupled", completion("B", "WIKI"), "A", "WIKI", (0, 1, 0.5)),
    ("decoupled", completion("A", *["WIKI"] * 5), "A", "WIKI", (1, 3, 2.5)),  # calls past the budget earn nothing
    ("composite", completion("B", "WIKI", "WIKI"), "A", "WIKI", (0, 2, 0.0)),  # the gate still holds
    ("composite", completion("A", "WIKI", "ARXIV"), "A", "WIKI", (1, 1, 1.5)),
]


@pytest.mark.parametrize(("variant", "text", "label", "gold", "expected"), PER_CALL)
def test_per_call_tool_term_pays_each_correct_call(variant, text, label, gold, expected):
    got = score(parse_response(text), {"label": label, "gold_tool": gold},
                RewardConfig(variant=variant, tool_term="per_call"))
    assert (got.em, got.tool, got.total) == pytest.approx(expected)


def test_more_calls_raise_decoupled_reward_only_per_call():
    """The share term cannot be farmed by searching more; the per-call term can (the paper's over-searching)."""
    one, three = completion("B", "WIKI"), completion("B", "WIKI", "WIKI", "WIKI")
    ex = {"label": "A", "gold_tool": "WIKI"}
    share = [score(parse_response(t), ex, RewardConfig(variant="decoupled")).total for t in (one, three)]
    per_call = [score(parse_response(t), ex, RewardConfig(variant="decoupled", tool_term="per_call")).total
                for t in (one, three)]
    assert share[1] == share[0] and per_call[1] > per_call[0]


def test_unknown_tool_term_is_rejected():
    with pytest.raises(ValueError, match="tool term"):
        RewardConfig(tool_term="sum")


def test_both_orders_gate_pays_a_pair_only_as_often_as_its_other_order_is_right():
    from openrm.reward import both_orders_gate

    em = [1, 1, 0, 1, 1, 1, 0, 0]
    pairs = ["p", "p", "p", "p", "q", "q", "q", "q"]
    orders = ["AB", "AB", "BA", "BA", "AB", "AB", "BA", "BA"]
    assert both_orders_gate(em, pairs, orders) == [0.5, 0.5, 1.0, 1.0, 0.0, 0.0, 1.0, 1.0]


@pytest.mark.parametrize("pairs, orders", [
    (["p", "p"], ["AB", "AB"]),  # the other order is missing from the batch
    (["p", "p", "p"], ["AB", "BA", "XY"]),  # three orders
])
def test_both_orders_gate_refuses_a_batch_without_both_orders(pairs, orders):
    from openrm.reward import both_orders_gate

    with pytest.raises(ValueError, match="exactly two orders"):
        both_orders_gate([1.0] * len(pairs), pairs, orders)


def test_both_orders_reward_pays_a_position_locked_judge_nothing_and_a_consistent_one_in_full():
    reward = make_openrm_reward(RewardConfig(variant="composite", both_orders=True))
    # pair p: label A as given, B swapped. A judge that always answers "A" is right once, wrong once.
    locked = [completion("A", "WIKI"), completion("A", "WIKI")]
    consistent = [completion("A", "WIKI"), completion("B", "WIKI")]
    columns = {"label": ["A", "B"], "gold_tool": ["WIKI", "WIKI"], "pair_id": ["p", "p"], "order": ["AB", "BA"]}
    assert reward(locked, **columns) == [0.0, 0.0]
    assert reward(consistent, **columns) == [1.5, 1.5]
    plain = make_openrm_reward(RewardConfig(variant="composite"))
    assert plain(locked, **columns) == [1.5, 0.0]  # without the gate the locked judge is paid for half


def test_both_orders_reward_needs_the_pair_columns():
    reward = make_openrm_reward(RewardConfig(both_orders=True))
    with pytest.raises(ValueError, match="pair_id and order"):
        reward([completion("A", "WIKI")], label=["A"], gold_tool=["WIKI"])
