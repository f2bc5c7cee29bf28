"""Order groups: every GRPO group holds one pair, half its completions in each order, so the group's advantages
compare the two orders (a judge right in one order only learns from the other)."""

from __future__ import annotations

import pytest

from train.order_groups import PairedRepeatSampler, pair_indexes


def test_pair_indexes_find_both_rows_of_each_pair_and_drop_a_pair_missing_an_order():
    ids = ["p1", "p1", "p2", "p3", "p3", "p2", "p4"]
    orders = ["AB", "BA", "BA", "AB", "BA", "AB", "AB"]
    assert pair_indexes(ids, orders) == [(0, 1), (5, 2), (3, 4)]  # p4 has no swapped row
    with pytest.raises(ValueError, match="two rows in order AB"):
        pair_indexes(["p1", "p1"], ["AB", "AB"])
    with pytest.raises(ValueError, match="order must be one of"):
        pair_indexes(["p1"], ["XY"])


def test_each_group_is_one_pair_half_in_each_order_and_batches_repeat_as_trl_does():
    pairs = [(0, 1), (2, 3), (4, 5), (6, 7), (8, 9)]
    sampler = PairedRepeatSampler(pairs, num_generations=4, pairs_per_batch=2, repeat_count=2)
    got = list(sampler)
    assert len(got) == len(sampler) == 2 * 2 * 4 * 2  # two full batches of two pairs; the fifth pair dropped
    groups = [got[k:k + 4] for k in range(0, len(got), 4)]
    assert groups[:4] == [[0, 0, 1, 1], [2, 2, 3, 3], [0, 0, 1, 1], [2, 2, 3, 3]]  # a batch, then its repeat
    assert groups[4:] == [[4, 4, 5, 5], [6, 6, 7, 7], [4, 4, 5, 5], [6, 6, 7, 7]]


def test_an_odd_group_or_too_few_pairs_is_refused():
    with pytest.raises(ValueError, match="even num_generations"):
        PairedRepeatSampler([(0, 1)], num_generations=3, pairs_per_batch=1)
    with pytest.raises(ValueError, match="cannot fill"):
        PairedRepeatSampler([(0, 1)], num_generations=4, pairs_per_batch=2)
