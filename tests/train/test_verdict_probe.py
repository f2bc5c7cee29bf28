"""The teacher-forced verdict probe: its items stop right before the gold verdict letter, a pair counts only when
both orders prefer the right letter, the same-letter rate counts position-locked pairs, and the callback writes one
row per probe."""

import json
from types import SimpleNamespace

import pytest

from openrm.dataset import in_both_orders_rows
from openrm.tools import ToolBox
from train.verdict_probe import ProbeItem, probe_items, right_letter_margin, summary, verdict_probe

EVIDENCE = "Santiago is the capital of Chile. It was founded in 1541 by Pedro de Valdivia."


class Wiki:
    def search(self, queries, topk):
        return [[SimpleNamespace(id="S#0", title="Santiago", text=EVIDENCE, score=1.0)] for _ in queries]


def pair(i, right="It was founded in 1541 by Pedro de Valdivia.", wrong="It was founded in 1583 by Pedro de Valdivia."):
    return {"id": f"p{i}", "domain": "wiki", "question": "When was Santiago founded?", "answer_a": right,
            "answer_b": wrong, "label": "A", "gold_tool": "WIKI", "kind": "numbers" if i % 2 else "date"}


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from toy.tiny import build

    path = build(tmp_path_factory.mktemp("tiny"))
    return AutoTokenizer.from_pretrained(path), AutoModelForCausalLM.from_pretrained(path)


def item(pair_id, label, order="AB", kind="x"):
    return ProbeItem(pair_id, order, label, {"kind": kind}, [1, 2, 3], (10, 11))


def test_summary_counts_a_pair_only_when_both_orders_are_right():
    items = [item("p", "A"), item("p", "B", "BA"), item("q", "A", kind="y"), item("q", "B", "BA", "y")]
    # p: right in both orders; q: "A" in both orders (right, then wrong): position-locked
    out = summary(items, [2.0, 0.5, 1.0, -1.0])
    assert out["pairs"] == 2 and out["both_orders"] == 0.5 and out["single_order"] == 0.75
    assert out["same_letter"] == 0.5 and out["by_kind"] == {"x": 1.0, "y": 0.0}


@pytest.mark.parametrize("trace", ["verdict", "retrieved", "restate"])
def test_items_end_right_before_the_gold_letter_and_margins_match_the_logits(tiny, trace):
    import torch

    tokenizer, model = tiny
    toolbox = ToolBox({"wiki": Wiki(), "arxiv": Wiki()}, topk=1)
    rows = in_both_orders_rows([pair(i) for i in range(3)], seed=0)
    items = probe_items(rows, toolbox, tokenizer, 64, groups={"kind": lambda e: e["kind"]}, trace=trace)
    assert len(items) == 6 and {i.order for i in items} == {"AB", "BA"}
    for it, row in zip(items, rows, strict=True):
        assert it.label == row["label"] and it.group == {"kind": row["kind"]}
        assert tokenizer.decode(it.input_ids[-1:]) == ">"  # the next token is the verdict letter
        text = tokenizer.decode(it.input_ids)
        # the letter opens the second think, or (restate) the answer after both answers copied past the evidence
        assert text.endswith("<answer>" if trace == "restate" else "<think>") and "1541 by Pedro" in text
        assert ("</information>" in text.split("[B]")[-1]) == (trace == "verdict")  # evidence after the answers
        if trace == "restate":
            assert text.split("</information>")[1].count(row["answer_a"]) == 1
    margins = right_letter_margin(model, items, batch=4)
    model.eval()
    with torch.no_grad():
        for it, margin in zip(items, margins, strict=True):
            logits = model(torch.tensor([it.input_ids])).logits[0, -1]
            a, b = logits[list(it.letter_ids)].tolist()
            assert margin == pytest.approx(a - b if it.label == "A" else b - a, abs=1e-4)
    with pytest.raises(ValueError, match="trace"):
        probe_items(rows, toolbox, tokenizer, 64, trace="span")


def test_a_pair_missing_an_order_is_dropped(tiny):
    tokenizer, _ = tiny
    toolbox = ToolBox({"wiki": Wiki(), "arxiv": Wiki()}, topk=1)
    rows = in_both_orders_rows([pair(0), pair(1, wrong="It was founded in 1541 by Pedro de Valdivia too.")], 0)
    # the second pair's evidence holds no words only its right answer repeats: no gold trajectory, no item
    items = probe_items(rows, toolbox, tokenizer, 64)
    assert {i.pair_id for i in items} == {"p0"} and len(items) == 2


def test_callback_writes_a_row_per_probe(tiny, tmp_path):
    tokenizer, model = tiny
    toolbox = ToolBox({"wiki": Wiki(), "arxiv": Wiki()}, topk=1)
    items = probe_items(in_both_orders_rows([pair(0)], 0), toolbox, tokenizer, 64)
    out = tmp_path / "probe.jsonl"
    callback = verdict_probe(items, every=2, out=out)
    state = SimpleNamespace(global_step=0, max_steps=4)
    model.train()
    callback.on_log(None, state, None, logs={"loss": 0.7})
    for step in (1, 2, 3, 4):
        state.global_step = step
        callback.on_step_end(None, state, None, model=model)
    callback.on_train_end(None, state, None, model=model)
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["step"] for r in rows] == [2, 4] and rows[0]["loss"] == 0.7 and rows[0]["pairs"] == 1
    assert model.training  # the probe ran in eval mode and gave the training mode back


def test_grpo_keeps_the_train_pairs_the_warm_up_has_not_settled(tiny, tmp_path):
    import math

    from datasets import Dataset, DatasetDict, load_from_disk

    from toy.judge_stages import unsettled_pairs

    tokenizer, model = tiny
    warm = tmp_path / "warm"
    model.save_pretrained(warm)
    tokenizer.save_pretrained(warm)
    meta = {"source": "wiki_pairs/numbers"}
    rows = [{k: v for k, v in pair(i).items() if k != "kind"} | {"meta": meta} for i in range(4)]
    rows[1]["answer_b"] = "It was founded in 1541 by Pedro de Valdivia too."  # no gold trajectory: never scored
    rows[2]["answer_a"], rows[2]["answer_b"], rows[2]["label"] = rows[2]["answer_b"], rows[2]["answer_a"], "B"
    rows[3]["question"] = "In which year was Santiago founded?"
    DatasetDict({"train": Dataset.from_list(rows), "test": Dataset.from_list(rows[:1])}).save_to_disk(tmp_path / "d")
    toolbox = ToolBox({"wiki": Wiki(), "arxiv": Wiki()}, topk=1)
    settings = {"max_information_tokens": 64, "prompt_style": "compact"}
    # the rule by hand: a pair's lowest right-letter log-odds over its two orders
    items = probe_items(in_both_orders_rows([dict(r) for r in rows], 0), toolbox, tokenizer, 64)
    lowest = {}
    for it, margin in zip(items, right_letter_margin(model, items), strict=True):
        lowest[it.pair_id] = min(margin, lowest.get(it.pair_id, math.inf))
    assert set(lowest) == {"p0", "p2", "p3"}
    cut = sorted(lowest.values())[1] + 1e-6  # keeps the two least settled pairs

    def run(margin, out):
        return unsettled_pairs(warm, tmp_path / "d", tmp_path / out, toolbox, tokenizer, settings, trace="verdict",
                               margin=margin, limit=10, seed=0, bf16=False)

    kept = load_from_disk(str(run(cut, "u")))
    assert sorted(kept["train"]["id"]) == sorted(p for p, v in lowest.items() if v < cut) and len(kept["train"]) == 2
    assert kept["test"]["id"] == ["p0"]  # the test split as it was
    counts = json.loads((tmp_path / "u" / "unsettled.json").read_text())
    assert counts["sampled"] == 4 and counts["scored"] == 3 and counts["kept"] == 2
    with pytest.raises(ValueError, match="settled"):
        run(min(lowest.values()) - 1.0, "none")  # every pair above the margin: nothing for GRPO to learn from
