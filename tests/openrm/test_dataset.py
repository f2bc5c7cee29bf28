"""openrm.dataset's training order: domains in turn, so a GRPO step of few prompts never holds a run of one domain."""

from collections import Counter

import pytest

from openrm.dataset import interleaved_by_domain


@pytest.mark.parametrize("seed", [0, 1])
def test_every_pair_of_consecutive_rows_holds_both_domains_while_both_last(seed):
    domains = ["wiki"] * 30 + ["science"] * 20 + ["wiki"] * 10
    order = interleaved_by_domain(domains, seed)
    assert sorted(order) == list(range(len(domains)))  # a permutation: nothing lost or doubled
    picked = [domains[i] for i in order]
    assert all(Counter(picked[k:k + 2]) == {"wiki": 1, "science": 1} for k in range(0, 40, 2))
    assert set(picked[40:]) == {"wiki"}  # science ran out after 20 turns
    assert order != interleaved_by_domain(domains, seed + 1)  # each domain's rows in a seeded order
    assert order == interleaved_by_domain(domains, seed)


def test_three_domains_and_edge_cases():
    domains = ["a", "b", "c"] * 4
    picked = [domains[i] for i in interleaved_by_domain(domains, 0)]
    assert picked == ["a", "b", "c"] * 4
    assert interleaved_by_domain([], 0) == []
    assert interleaved_by_domain(["x"], 0) == [0]
