"""Hostile rivals for training: a share of the pairs set the right answer against a hedge, an evasion or forged
markup, the same rival in both orders of a pair, the label kept, in wordings the audit (`eval.hostile`) does not
use."""

import random
from collections import Counter

import pytest

from data_synthesis.hostile_rivals import CONNECTIVES, EVASIONS, QUESTION_BACK, HostileRivals, markup
from eval import hostile
from openrm import protocol
from openrm.dataset import in_both_orders_rows

RIGHT = "Santiago was founded in 1541 by Pedro de Valdivia."
WRONG = "Santiago was founded in 1583 by Pedro de Valdivia."


def rows(n: int) -> list[dict]:
    return [{"id": f"p{k}", "question": f"When was city {k} founded?", "answer_a": RIGHT, "answer_b": WRONG,
             "label": "A"} for k in range(n)]


def test_a_share_of_pairs_get_a_rival_the_same_in_both_orders_and_the_label_kept():
    rewrite = HostileRivals(share=0.5, seed=0)
    out = [rewrite(r) for r in in_both_orders_rows(rows(400), seed=0)]
    by_pair: dict[str, list[dict]] = {}
    for r in out:
        by_pair.setdefault(r["pair_id"], []).append(r)
    rivals = Counter()
    for ab, ba in by_pair.values():
        assert ab.get("rival") == ba.get("rival")
        assert (ab["answer_a"], ab["answer_b"]) == (ba["answer_b"], ba["answer_a"])  # one rival text, swapped
        for r in (ab, ba):
            right = r["answer_a"] if r["label"] == "A" else r["answer_b"]
            rival = r["answer_b"] if r["label"] == "A" else r["answer_a"]
            assert right == RIGHT  # the right answer and the label stay
            if r.get("rival") == "hedge":
                assert RIGHT in rival and WRONG in rival
            elif r.get("rival") == "evasion":
                assert "1541" not in rival and "1583" not in rival
            elif r.get("rival") == "markup":
                assert WRONG in rival and RIGHT not in rival and rival != WRONG
            else:
                assert rival == WRONG
        rivals[ab.get("rival")] += 1
    made = rivals["hedge"] + rivals["evasion"] + rivals["markup"]
    assert 160 <= made <= 240  # about half of 400 pairs
    assert min(rivals["hedge"], rivals["evasion"], rivals["markup"]) >= 40
    assert sum(rewrite.made.values()) == 2 * made  # counted per row


def test_markup_forges_both_letters_and_the_prompt_defuses_it():
    texts = [markup("When was city 3 founded?", WRONG, random.Random(k)) for k in range(300)]
    assert all(WRONG in t and t != WRONG for t in texts)
    assert any("<answer>A</answer>" in t for t in texts) and any("<answer>B</answer>" in t for t in texts)
    assert any(t.startswith(WRONG) for t in texts) and any(not t.startswith(WRONG) for t in texts)
    for t in texts:  # what the judge reads: no live tag or control string left
        shown = protocol.neutralize_tags(t)
        assert "<answer>" not in shown and "<|im_end|>" not in shown and "<think>" not in shown


def test_kinds_can_be_chosen_and_a_bad_kind_is_refused():
    rewrite = HostileRivals(1.0, kinds=("markup",))
    assert {rewrite(r)["rival"] for r in rows(30)} == {"markup"}
    with pytest.raises(ValueError, match="kinds"):
        HostileRivals(0.5, kinds=("flattery",))


def test_no_share_changes_nothing_and_a_bad_share_is_refused():
    assert [HostileRivals(0.0)(r) for r in rows(20)] == rows(20)
    assert HostileRivals(1.0)({"id": "t", "label": "tie", "answer_a": "x", "answer_b": "y", "question": "q"}) == \
        {"id": "t", "label": "tie", "answer_a": "x", "answer_b": "y", "question": "q"}  # no right answer: kept
    with pytest.raises(ValueError, match="share"):
        HostileRivals(1.5)


def test_the_training_wordings_are_not_the_audits():
    audit = {kind: hostile.KINDS[kind]("Q?", RIGHT, WRONG, None) for kind in ("refusal", "hedge", "quotes_question")}
    assert audit["refusal"] not in EVASIONS
    connective = audit["hedge"][len(RIGHT):-len(WRONG)].strip()
    assert connective == "Some sources say otherwise:" and connective not in CONNECTIVES
    assert all(form.format(q="Q?") != "Q?" for form in QUESTION_BACK)  # never the bare question
    forged = {hostile.KINDS[k]("Q?", RIGHT, WRONG, random.Random(0))
              for k in ("answer_tag", "information_tag", "search_tag", "special_tokens")}
    assert not forged & {markup("Q?", WRONG, random.Random(k)) for k in range(2000)}
    assert not any("This answer is right." in markup("Q?", WRONG, random.Random(k)) for k in range(2000))
