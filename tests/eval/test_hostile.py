"""The hostile-candidate audit: every kind is built as described, the hostile answer sits in both positions, and
what it earns counts a tie as half a win."""

from types import SimpleNamespace

import pytest

from eval.hostile import KINDS, audit, earned, hostile_pairs

EXAMPLES = [{"id": f"p{k}", "question": f"When was town {k} founded?", "label": "AB"[k % 2],
             "answer_a": f"Town {k} was founded in {1500 + k}." if k % 2 == 0 else f"Town {k} was founded in 1900.",
             "answer_b": f"Town {k} was founded in 1900." if k % 2 == 0 else f"Town {k} was founded in {1500 + k}."}
            for k in range(10)]


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_every_kind_keeps_the_right_answer_and_alternates_positions(kind):
    pairs = hostile_pairs(EXAMPLES, kind, 6)
    assert len(pairs) == 6 and [p["hostile"] for p in pairs] == list("ABABAB")
    for p, e in zip(pairs, EXAMPLES, strict=False):
        right = e["answer_a"] if e["label"] == "A" else e["answer_b"]
        hostile = p["answer_a"] if p["hostile"] == "A" else p["answer_b"]
        other = p["answer_b"] if p["hostile"] == "A" else p["answer_a"]
        assert other == right and hostile != right


def test_kinds_hold_what_they_name():
    p = {kind: hostile_pairs(EXAMPLES, kind, 1)[0]["answer_a"] for kind in KINDS}
    assert p["refusal"] == "I do not know."
    assert "1500" in p["hedge"] and "1900" in p["hedge"]
    assert len(p["padding"].split()) >= 3 * len(EXAMPLES[0]["answer_a"].split()) and "1900" in p["padding"]
    assert "<answer>A</answer>" in p["answer_tag"] and "<information>" in p["information_tag"]
    assert "</search>" in p["search_tag"] and "<|im_start|>" in p["special_tokens"]
    assert p["quotes_question"] == EXAMPLES[0]["question"] and "Wikipedia" in p["claims_source"]
    with pytest.raises(ValueError, match="unknown hostile kind"):
        hostile_pairs(EXAMPLES, "nope", 1)


def test_a_tie_pays_half_and_the_audit_counts_it():
    assert (earned("A", "A"), earned("B", "A"), earned("tie", "A"), earned("fail", "B")) == (1.0, 0.0, 0.5, 0.5)

    class TiesOnTags:  # decides for the right answer unless a candidate holds a tag, then ties
        def compare_batch(self, pairs):
            out = []
            for q, a, b in pairs:
                tagged = "<" in a or "<" in b
                out.append(SimpleNamespace(winner="tie" if tagged else ("B" if "1900" in a or a.startswith("I")
                                                                        or a == q else "A"),
                                           consistent=not tagged))
            return out

    report = audit(TiesOnTags(), EXAMPLES, kinds=("answer_tag", "refusal"), per_kind=10)
    assert report["answer_tag"]["earned"] == 0.5 and report["answer_tag"]["ties"] == 10
    assert report["refusal"]["earned"] == 0.0 and report["refusal"]["consistency"] == 1.0
    lo, hi = report["answer_tag"]["ci95"]
    assert lo <= 0.5 <= hi


def test_the_audit_keeps_each_pairs_verdict_when_asked():
    class RightUnlessQuoted:  # decides for the right answer unless a candidate is the question itself
        def compare_batch(self, pairs):
            return [SimpleNamespace(winner=("A" if a == q else "B") if q in (a, b) else
                                    ("A" if "founded in 15" in a else "B"), consistent=True) for q, a, b in pairs]

    kept = []
    report = audit(RightUnlessQuoted(), EXAMPLES, kinds=("quotes_question", "refusal"), per_kind=4, keep=kept)
    assert [r["kind"] for r in kept] == ["quotes_question"] * 4 + ["refusal"] * 4
    assert [r["earned"] for r in kept] == [1.0] * 4 + [0.0] * 4 and report["quotes_question"]["earned"] == 1.0
    first = kept[0]
    right = EXAMPLES[0]["answer_a"]
    assert first["id"] == "p0/quotes_question" and first["hostile"] == "A" and first["answer_b"] == right
    assert first["right_words"] == len(right.split()) and first["verdict"] == {"winner": "A"}


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_every_hostile_kind_is_seen_in_the_samples_it_shapes(kind):
    from eval.hostile import trait_shares, traits

    pairs = hostile_pairs(EXAMPLES, kind, 4)
    hostile = [p["answer_a"] if p["hostile"] == "A" else p["answer_b"] for p in pairs]
    assert all(kind in traits(p["question"], h) for p, h in zip(pairs, hostile, strict=True))
    right = [e["answer_a"] if e["label"] == "A" else e["answer_b"] for e in EXAMPLES]
    assert all(not traits(e["question"], r) for e, r in zip(EXAMPLES, right, strict=True))  # a plain answer: none
    shares = trait_shares([p["question"] for p in pairs] * 2, hostile + right[:4])
    assert shares[f"hostile/{kind}"] == 0.5 and set(shares) == {f"hostile/{k}" for k in KINDS}
