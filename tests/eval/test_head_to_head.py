"""Head-to-head win rates against hand counts: a two-order judge, a one-order judge seen in both orders, failures."""

import math

import pytest

from eval.win_rate import head_to_head


class Longer:
    """Prefers the longer answer; equal lengths tie. Symmetric: one item per pair."""

    orders = 2

    def compare_many(self, items):
        return [1.0 if len(x) > len(y) else 0.0 if len(x) < len(y) else 0.5 for _, x, y in items]


class FirstShown:
    orders = 1

    def compare_many(self, items):
        return [1.0] * len(items)


def test_win_rate_is_the_mean_share_with_ties_as_half():
    # prompt 0: win, loss; prompt 1: tie, win -> per prompt 0.5 and 0.75 -> 0.625
    r = head_to_head(Longer(), ["q0", "q1"], [["aa", "a"], ["b", "bbb"]], [["a", "aa"], ["c", "c"]])
    assert (r.wins, r.losses, r.ties, r.failures, r.comparisons) == (2, 1, 1, 0, 4)
    assert math.isclose(r.win_rate, 0.625) and r.ci_low <= r.win_rate <= r.ci_high


def test_a_position_biased_one_order_judge_gives_one_half():
    r = head_to_head(FirstShown(), ["q"] * 3, [["x"]] * 3, [["y"]] * 3)
    assert r.win_rate == 0.5 and r.ties == 3 and r.wins == r.losses == 0


def test_failures_and_garbage_count_as_ties():
    class Broken:
        orders = 2

        def compare_many(self, items):
            return [None, float("nan"), "A"][:len(items)]

    r = head_to_head(Broken(), ["a", "b", "c"], [["x"]] * 3, [["y"]] * 3)
    assert r.failures == 3 and r.win_rate == 0.5


def test_a_judge_answering_too_few_items_is_an_error():
    class Short:
        orders = 2

        def compare_many(self, items):
            return []

    with pytest.raises(RuntimeError, match="answered 0 of 1"):
        head_to_head(Short(), ["q"], [["x"]], [["y"]])
