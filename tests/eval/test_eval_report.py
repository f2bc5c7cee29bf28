"""The report of one run: two decimals as published tables, consistency n/a when no order answered, an honest
label on timing, and a per-domain plot that stays readable with dozens of domains."""

from __future__ import annotations

import pytest

from eval import report, scorecard


def examples(domains: list[str], per: int = 2) -> list[dict]:
    return [{"id": f"{d}-{k}", "domain": d, "label": "A" if k % 2 else "B"} for d in domains for k in range(per)]


def test_markdown_has_two_decimals():
    ex = examples(["x"], per=3)  # labels B, A, B; predictions right on 2 of 3 → 66.67 %
    results = scorecard.score("pairwise", ex, {"x-0": "B", "x-1": "A", "x-2": "A"}, resamples=10)
    text = scorecard.markdown(results)
    assert "| accuracy (%) | 66.67 |" in text
    assert "66.7 " not in text and "| 66.7 |" not in text


@pytest.mark.parametrize("records, shown", [
    ({"x-0": {"prediction": "fail", "consistent": False}, "x-1": {"prediction": "fail", "consistent": False}},
     "n/a"),
    ({"x-0": {"prediction": "fail", "consistent": False}, "x-1": {"prediction": "A", "consistent": True}},
     "100.00"),
    ({"x-0": {"prediction": "tie", "consistent": False}, "x-1": {"prediction": "A", "consistent": True}},
     "50.00"),
])
def test_consistency_counts_only_judgments_where_an_order_answered(records, shown):
    ex = examples(["x"])
    results = scorecard.score("pairwise", ex, {i: r["prediction"] for i, r in records.items()}, records, resamples=10)
    text = scorecard.markdown(results)
    assert f"where some order answered | {shown} |" in text


def test_seconds_are_labelled_as_chunk_averages():
    results = scorecard.score("pairwise", examples(["x"]), {"x-0": "B"}, {"x-0": {"prediction": "B", "seconds": 2.0}},
                           resamples=10)
    assert "each chunk's wall time ÷ its pairs" in scorecard.markdown(results)


@pytest.mark.parametrize("n_domains, horizontal", [(3, False), (58, True)])
def test_plot_layout_follows_the_number_of_domains(tmp_path, n_domains, horizontal):
    from PIL import Image

    domains = [f"autoj/scenario_{k:02d}" for k in range(n_domains)]
    ex = examples(domains)
    results = scorecard.score("autoj", ex, {e["id"]: e["label"] for e in ex}, resamples=10)
    width, height = Image.open(scorecard.plot(results, tmp_path / "p.png")).size
    if horizontal:
        # one row per domain: at least ~20 px per label at the saved dpi, and taller than wide
        assert height >= 20 * n_domains and height > width
    else:
        assert width > height


def test_rows_over_the_context_are_counted_and_named_and_an_unchecked_run_says_so():
    fit = {"status": "fit", "limit": 600, "prompt_tokens": 90, "cut_tokens": {}, "reason": None}
    cut = {**fit, "status": "truncated", "prompt_tokens": 2400, "cut_tokens": {"answer_a": 900, "answer_b": 905}}
    failed = {**fit, "status": "failed", "prompt_tokens": 9000, "reason": "too long"}
    records = {"x-0": {"prediction": "A", "context": cut}, "x-1": {"prediction": "fail", "context": failed},
               "y-0": {"prediction": "B", "context": fit}}
    results = scorecard.score("pairwise", examples(["x", "y"], per=2), {i: r["prediction"] for i, r in records.items()},
                           records, resamples=10)
    ctx = results["judging"]["context"]
    assert (ctx["checked"], ctx["truncated"], ctx["failed"]) == (3, 1, 1) and list(ctx["rows"]) == ["x-0", "x-1"]
    text = scorecard.markdown(results)
    assert "1 cut to fit, 1 judged as failures, of 3 checked" in text
    assert "⚠ `x-0`: truncated, prompt 2400 > 600 tokens (answer_a −900, answer_b −905)" in text
    assert "⚠ `x-1`: failed, prompt 9000 > 600 tokens (not sent)" in text
    unknown = {i: {**r, "context": {**fit, "limit": None}} for i, r in records.items()}
    text = scorecard.markdown(scorecard.score("pairwise", examples(["x", "y"], per=2), {}, unknown, resamples=10))
    assert "context: **not checked**" in text


def _orders(ab: str | None, ba: str | None) -> list[dict]:
    return [{"order": "AB", "answer": ab}, {"order": "BA", "answer": ba}]


def test_single_order_accuracy_scores_each_order_alone():
    # labels: p0 A, p1 B, p2 A, p3 tie (left out of the single-order count)
    ex = [{"id": f"p{k}", "domain": "pandalm", "label": label} for k, label in enumerate(["A", "B", "A", "tie"])]
    records = {"p0": {"prediction": "A", "orders": _orders("A", "A")},      # both right
               "p1": {"prediction": "tie", "orders": _orders("B", "A")},    # AB right, BA wrong: a tie both-order
               "p2": {"prediction": "fail", "orders": _orders(None, None)},  # no answer: wrong twice
               "p3": {"prediction": "A", "orders": _orders("A", "A")}}
    results = scorecard.score("pandalm", ex, {i: r["prediction"] for i, r in records.items()}, records, resamples=50)
    so = results["single_order"]
    assert (so["orders"], so["accuracy"], so["ab_accuracy"], so["ba_accuracy"]) == (6, 3 / 6, 2 / 3, 1 / 3)
    assert results["accuracy"] == 1 / 4  # both-order, 3-class: only p0 is right
    text = scorecard.markdown(results)
    assert "each order scored alone | 50.00" in text and "AB / BA order alone | 66.67 / 33.33" in text
    assert scorecard.score("pandalm", ex, {i: r["prediction"] for i, r in records.items()},
                        resamples=10).get("single_order") is None  # precomputed predictions: no orders, no number


def test_eval_report_prints_single_and_both_order_beside_the_published_rows(tmp_path, capsys):
    import json

    ex = [{"id": f"p{k}", "domain": "pandalm", "label": "AB"[k % 2]} for k in range(4)]
    records = {e["id"]: {"prediction": e["label"], "orders": _orders(e["label"], "A")} for e in ex}
    results = scorecard.score("pandalm", ex, {i: r["prediction"] for i, r in records.items()}, records, resamples=10)
    results.update(judge="smol", mode="tools")
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "results.json").write_text(json.dumps(results))
    report.main([str(tmp_path / "run")])
    out = capsys.readouterr().out
    header = out.splitlines()[0]
    assert "Overall" in header and "1 order" in header and "AB only" in header
    assert "| smol | tools | 100.00 |" in out and "| 75.00 | 100.00 |" in out
    assert "| OpenRM-Qwen2.5-7B | pandalm | with tools | Table 3 | 79.42 |" in out
    assert "rewardbench" not in out.split("Source:")[0]  # only the benchmark of the runs
    report.main([str(tmp_path / "run"), "--no-published"])
    assert "79.42" not in capsys.readouterr().out
