"""openrm.dataset: domains in turn (a GRPO step of few prompts never holds a run of one domain), and both orders of
a pair side by side."""

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


def test_in_both_orders_sets_each_pair_beside_its_swap_with_the_label_flipped():
    from openrm.dataset import in_both_orders, in_both_orders_rows

    rows = [{"id": f"r{i}", "question": "q", "answer_a": f"a{i}", "answer_b": f"b{i}", "label": "AB"[i % 2],
             "gold_tool": "WIKI"} for i in range(6)]
    out = in_both_orders_rows(rows, seed=3)
    assert len(out) == 12
    assert sorted(r["pair_id"] for r in out[::2]) == [f"r{i}" for i in range(6)]
    assert [r["pair_id"] for r in out[::2]] != [f"r{i}" for i in range(6)]  # pairs shuffled
    for given, swapped in zip(out[::2], out[1::2], strict=True):
        assert given["pair_id"] == swapped["pair_id"] and (given["order"], swapped["order"]) == ("AB", "BA")
        assert (swapped["answer_a"], swapped["answer_b"]) == (given["answer_b"], given["answer_a"])
        assert {given["label"], swapped["label"]} == {"A", "B"}
        assert swapped["id"] == given["id"] + ":BA"
    assert in_both_orders_rows(rows, seed=3) == out
    with pytest.raises(ValueError, match="both orders already"):
        in_both_orders_rows(out, seed=3)
    from datasets import Dataset

    assert in_both_orders(Dataset.from_list(rows), seed=3).to_list() == out
