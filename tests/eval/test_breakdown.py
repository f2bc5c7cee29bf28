"""eval.breakdown: both-order accuracy by a key, the same-letter rate (a verdict that follows the position), and the
examples of some kinds and lengths."""

from eval.breakdown import both_order_accuracy, same_letter_rate, selected


def verdict(prediction, ab, ba):
    """`ab`, `ba`: each order's answer mapped back to the pair as given (as eval.run stores them)."""
    return {"prediction": prediction, "orders": [{"order": "AB", "answer": ab}, {"order": "BA", "answer": ba}]}


EXAMPLES = [{"id": str(i), "label": label, "kind": kind} for i, (label, kind) in
            enumerate([("A", "x"), ("B", "x"), ("A", "y"), ("B", "y")])]
VERDICTS = {
    "0": verdict("A", "A", "A"),  # right in both orders
    "1": verdict("tie", "A", "B"),  # "A" in the AB order, "A" again in the swapped order: the position
    "2": verdict("tie", "A", None),  # one order unparsed: not a same-letter pair
    "3": verdict("tie", "B", "A"),  # "B" then "B": the position again
}


def test_both_order_accuracy_by_kind():
    assert both_order_accuracy(EXAMPLES, VERDICTS, lambda e: e["kind"]) == {
        "x": {"n": 2, "accuracy": 0.5}, "y": {"n": 2, "accuracy": 0.0}}
    assert both_order_accuracy(EXAMPLES, {}, lambda e: e["kind"])["x"]["accuracy"] == 0.0  # no verdict is wrong


def test_same_letter_rate_counts_pairs_whose_orders_named_the_same_position():
    assert same_letter_rate(EXAMPLES, VERDICTS) == 0.5
    assert same_letter_rate(EXAMPLES, {"0": VERDICTS["0"]}) == 0.0
    assert same_letter_rate([], {}) == 0.0


def test_selected_keeps_the_named_kinds_and_lengths_and_leaves_one_kind_out():
    pairs = [{"id": f"{k}-{n}", "meta": {"source": f"wiki/{k}", "facts": [{"attribute": "length", "value": n}]}}
             for k in ("numbers", "swap", "date") for n in ("sentence", "lead")]
    assert [e["id"] for e in selected(pairs, ["numbers", "swap"], ["sentence"])] == ["numbers-sentence",
                                                                                    "swap-sentence"]
    assert len(selected(pairs, [], [])) == 6  # an empty list: any kind, any length
    assert [e["id"] for e in selected(pairs, [], ["lead"], but="swap")] == ["numbers-lead", "date-lead"]
