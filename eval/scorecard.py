"""A run's scorecard: its verdict records scored against the benchmark's labels (`score`), written as
`results.json`, `report.md` and `report.png` (`write`), and several runs laid side by side like the paper's
Tables 2-3 (`comparison_table`, with the papers' own rows beside them). Library code of `python -m eval.run` and
`python -m eval.report`.
"""

from __future__ import annotations

import json
import logging
from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from eval import metrics
from plumbing import atomic

logger = logging.getLogger(__name__)


def _acc(predictions: list[str], labels: list[str], policies: Mapping[str, str], rng) -> dict[str, Any]:
    result = metrics.accuracy(predictions, labels, policies["tie"], policies["failure"], rng)
    return {"accuracy": result.value, "n": result.n, "excluded": result.excluded,
            "ci95": None if result.ci95 is None else [result.ci95.low, result.ci95.high]}


def _mean(values: list[float]) -> float | None:
    return float(np.mean(values)) if values else None


def score(benchmark: str, examples: Sequence[Mapping[str, Any]], predictions: Mapping[str, str],
          records: Mapping[str, Mapping[str, Any]] | None = None, tie_policy: str = "half",
          failure_policy: str = "wrong", seed: int = 0, resamples: int = 1000) -> dict[str, Any]:
    """Every metric of one run. `predictions` maps example id → A | B | tie | fail; an example without one counts
    as a failure (and is counted under `missing_predictions`). `records` (our verdict records) add consistency,
    searches and timing."""
    policies = {"tie": tie_policy, "failure": failure_policy}
    rng = np.random.default_rng(seed)
    ids = [e["id"] for e in examples]
    labels = [e["label"] for e in examples]
    preds = [predictions.get(i, "fail") for i in ids]
    records = records or {}
    judged = [records[i] for i in ids if i in records]
    out: dict[str, Any] = {
        "benchmark": benchmark, "policies": policies, "seed": seed, "bootstrap_resamples": resamples,
        "counts": {"examples": len(examples), "labels": dict(Counter(labels)), "predictions": dict(Counter(preds)),
                   "missing_predictions": sum(i not in predictions for i in ids),
                   "unmatched_predictions": len(set(predictions) - set(ids))},
        "confusion": metrics.confusion(preds, labels),
    }
    binary = [(p, y) for p, y in zip(preds, labels, strict=True) if y != "tie"]
    has_ties = len(binary) < len(labels)
    scoring = policies
    if has_ties:  # a benchmark with tie labels: 3-class protocol (PandaLM), plus A/B-only accuracy on non-ties
        # 3-class scoring: a tie prediction is a class like any other and a failure predicts no class, so only
        # "exclude" changes anything
        scoring = {"tie": "wrong", "failure": "exclude" if failure_policy == "exclude" else "wrong"}
        out.update(metrics.three_class(preds, labels, failure_policy))
        out["ci95"] = _acc(preds, labels, scoring, rng)["ci95"]
        b = _acc([p for p, _ in binary], [y for _, y in binary], policies, rng) if binary else {"accuracy": None}
        out["binary_accuracy"], out["binary_ci95"], out["binary_n"] = b["accuracy"], b.get("ci95"), b.get("n", 0)
    else:
        out.update(_acc(preds, labels, policies, rng))
    by_domain: dict[str, list[int]] = defaultdict(list)
    for k, e in enumerate(examples):
        by_domain[e["domain"]].append(k)
    out["per_domain"] = {d: _acc([preds[k] for k in rows], [labels[k] for k in rows], scoring, rng)
                         for d, rows in sorted(by_domain.items())}
    if benchmark == "rewardbench":
        subsets = {d.removeprefix("rewardbench/"): v["accuracy"] for d, v in out["per_domain"].items()
                   if v["accuracy"] is not None}
        out["rewardbench"] = metrics.rewardbench_sections(subsets)
    if benchmark == "rmbench":
        cells = [(e["domain"].removeprefix("rmbench/"), e["meta"]["chosen_style"], e["meta"]["rejected_style"],
                  metrics.example_score(p, e["label"], tie_policy, failure_policy))
                 for e, p in zip(examples, preds, strict=True)]
        out["rmbench"] = metrics.rmbench_accuracies((d, i, j, v) for d, i, j, v in cells if v is not None)
    single = single_order(examples, records, rng)
    if single:
        out["single_order"] = single
    out["judging"] = {
        "judged": len(judged),
        # only judgments where some order answered say anything about consistency; none answered → None (n/a)
        "consistency": metrics.consistency(r.get("consistent") for r in judged if r.get("prediction") != "fail"),
        "unparsed_orders": sum(r.get("unparsed_orders", 0) for r in judged),
        "searches_per_judgment": _mean([r["searches"] for r in judged if "searches" in r]),
        "seconds_per_judgment": _mean([r["seconds"] for r in judged if "seconds" in r]),
        "context": context_flags({i: records[i] for i in ids if i in records}),
    }
    return out


def single_order(examples: Sequence[Mapping[str, Any]], records: Mapping[str, Mapping[str, Any]],
                 rng: np.random.Generator) -> dict[str, Any] | None:
    """Accuracy with each order scored on its own, as papers that judge every pair once report it (the OpenRM
    paper's Tables 2-3: no majority over orders): over every order of every example labelled A or B, and over the
    AB order (the pair as given) and the BA order alone. An order without a parseable answer counts as wrong.
    None without per-order records (precomputed predictions)."""
    hits: dict[str, list[float]] = {"AB": [], "BA": []}
    for e in examples:
        record = records.get(e["id"])
        if record is None or e["label"] not in ("A", "B"):
            continue
        for order in record.get("orders") or ():
            if order.get("order") in hits:
                hits[order["order"]].append(float(order.get("answer") == e["label"]))
    every = hits["AB"] + hits["BA"]
    if not every:
        return None

    def interval(values: list[float]) -> list[float]:
        x = np.asarray(values)
        means = x[rng.integers(0, len(x), size=(1000, len(x)))].mean(axis=1)
        return [float(np.quantile(means, 0.025)), float(np.quantile(means, 0.975))]

    return {"accuracy": float(np.mean(every)), "ci95": interval(every), "orders": len(every),
            "ab_accuracy": float(np.mean(hits["AB"])) if hits["AB"] else None,
            "ba_accuracy": float(np.mean(hits["BA"])) if hits["BA"] else None,
            "rule": "each order scored alone over examples labelled A or B; no answer = wrong"}


def context_flags(records: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """Rows whose prompt exceeded the judge's context: cut to fit or judged as failures (`openrm.context`), with
    their ids and the tokens cut. `checked` counts rows whose prompt was measured at all (0: context unknown)."""
    out: dict[str, Any] = {"checked": 0, "truncated": 0, "failed": 0, "rows": {}}
    for rid, r in records.items():
        fit = r.get("context")
        if not fit:
            continue
        out["checked"] += fit.get("limit") is not None
        if fit["status"] in ("truncated", "failed"):
            out[fit["status"]] += 1
            out["rows"][rid] = {"status": fit["status"], "prompt_tokens": fit["prompt_tokens"],
                                    "limit": fit["limit"], "cut_tokens": fit.get("cut_tokens") or {}}
    return out


def _fmt(x: Any, pct: bool = True, missing: str = "–") -> str:
    """Two decimals, as published tables print them (66.77, not 66.8)."""
    if x is None:
        return missing
    if isinstance(x, float) and pct:
        return f"{100 * x:.2f}"
    if isinstance(x, float):
        return f"{x:.2f}"
    return str(x)


def headline(results: Mapping[str, Any]) -> dict[str, float | None]:
    """The columns of a paper-style table: RewardBench sections, else per-domain accuracy; then the overall score."""
    if "rmbench" in results:
        rm = results["rmbench"]
        cols = {d: v["score"] for d, v in rm["per_domain"].items()}
        cols.update({"Easy": rm["overall"]["easy"], "Normal": rm["overall"]["normal"], "Hard": rm["overall"]["hard"],
                     "Avg": rm["overall"]["score"]})
        return cols
    if "rewardbench" in results:
        cols = dict(results["rewardbench"]["sections"])
        cols["Score"] = results["rewardbench"]["score"]
        return cols
    cols = {d: v["accuracy"] for d, v in results["per_domain"].items()} if len(results["per_domain"]) > 1 else {}
    cols["Overall"] = results["accuracy"]
    if "f1_macro" in results:
        cols.update({"Precision": results["precision_macro"], "Recall": results["recall_macro"],
                     "F1": results["f1_macro"], "A/B-only acc.": results["binary_accuracy"]})
    if results.get("single_order"):
        cols.update({"1 order": results["single_order"]["accuracy"], "AB only": results["single_order"]["ab_accuracy"]})
    return cols


PUBLISHED = Path(__file__).with_name("data") / "published.json"


def published_rows(benchmarks: Sequence[str], path: str | Path = PUBLISHED) -> list[dict[str, Any]]:
    """The papers' published rows (`eval/data/published.json`, numbers in %) for these benchmarks."""
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    return [r for r in data["rows"] if r["benchmark"] in benchmarks]


def comparison_table(runs: Sequence[Mapping[str, Any]]) -> str:
    """Rows = runs (judge and mode), columns = the union of their headline columns; numbers in %."""
    columns = list(dict.fromkeys(c for r in runs for c in headline(r)))
    lines = ["| judge | mode | " + " | ".join(columns) + " |", "|---|---|" + "---|" * len(columns)]
    for r in runs:
        cols = headline(r)
        lines.append(f"| {r.get('judge', '?')} | {r.get('mode', '?')} | "
                     + " | ".join(_fmt(cols.get(c)) for c in columns) + " |")
    return "\n".join(lines)


def published_table(rows: Sequence[Mapping[str, Any]]) -> str:
    """The papers' rows (`published_rows`) in their own columns, numbers in % as printed there. The papers score
    each judgment once, so their overall number compares with our `1 order` column, not our both-order one."""
    columns = list(dict.fromkeys(c for r in rows for c in r["columns"]))
    lines = ["| published judge | benchmark | setting | source | " + " | ".join(columns) + " |",
             "|---|---|---|---|" + "---|" * len(columns)]
    for r in rows:
        lines.append(f"| {r['judge']} | {r['benchmark']} | {r['setting']} | {r['table']} | "
                     + " | ".join(f"{r['columns'][c]:.2f}" if c in r["columns"] else "–" for c in columns) + " |")
    return "\n".join(lines)


def markdown(results: Mapping[str, Any]) -> str:
    """The report of one run."""
    j, c = results["judging"], results["counts"]
    lines = [f"# {results['benchmark']} — {results.get('judge', '?')} ({results.get('mode', '?')})", "",
             f"- data: `{results.get('data', '?')}`; {c['examples']} examples, labels {c['labels']}",
             f"- policies: tie → {results['policies']['tie']}, parse failure → {results['policies']['failure']} "
             "(a judge whose two orders disagree predicts tie; a failure is no parseable answer in either order)",
             f"- predictions: {c['predictions']}; missing {c['missing_predictions']}, "
             f"unmatched {c['unmatched_predictions']}"]
    for key, value in results.get("notes", {}).items():
        lines.append(f"- {key}: {value}")
    if results.get("skipped"):
        lines.append(f"- skipped rows: {results['skipped']}")
    if results.get("adjusted_answers"):
        lines.append(f"- adjusted answers (judged, not skipped): {results['adjusted_answers']}")
    lines += _context_lines(j)
    lines += ["", comparison_table([results]), ""]
    ci = results.get("ci95") or results.get("binary_ci95")
    lines += ["| metric | value |", "|---|---|",
              f"| accuracy (%) | {_fmt(results['accuracy'])} |"]
    if ci:
        lines.append(f"| 95% bootstrap interval (%) | {_fmt(ci[0])} – {_fmt(ci[1])} |")
    if results.get("single_order"):
        so = results["single_order"]
        lines += [f"| single-order accuracy (%), each order scored alone | {_fmt(so['accuracy'])} "
                  f"({_fmt(so['ci95'][0])} – {_fmt(so['ci95'][1])}), {so['orders']} orders |",
                  f"| single-order accuracy (%), AB / BA order alone | {_fmt(so['ab_accuracy'])} / "
                  f"{_fmt(so['ba_accuracy'])} |"]
    if "f1_macro" in results:
        lines += [f"| macro precision / recall / F1 (%) | {_fmt(results['precision_macro'])} / "
                  f"{_fmt(results['recall_macro'])} / {_fmt(results['f1_macro'])} |",
                  f"| A/B-only accuracy on non-tie items (%) | {_fmt(results['binary_accuracy'])} |"]
    lines += [f"| both-order consistency (%), over judgments where some order answered | "
              f"{_fmt(j['consistency'], missing='n/a')} |",
              f"| orders without an answer | {j['unparsed_orders']} |",
              f"| search calls written per judgment, both orders (run only in tools mode) | "
              f"{_fmt(j['searches_per_judgment'], pct=False)} |",
              "| seconds per judgment (mean of each chunk's wall time ÷ its pairs, both orders; not timed one "
              f"by one) | {_fmt(j['seconds_per_judgment'], pct=False)} |"]
    if "rewardbench" in results:
        rb = results["rewardbench"]
        lines += ["", f"RewardBench sections use the official per-subset example counts (math-prm weighted 984). "
                  f"Partial sections: {rb['partial'] or 'none'}; unmapped subsets: {rb['unmapped_subsets'] or 'none'}."]
        if "score_with_prior" in rb:
            lines.append(f"With Prior Sets at half weight: {_fmt(rb['score_with_prior'])}.")
    if "rmbench" in results:
        lines += ["", "RM-Bench (3 chosen × 3 rejected styles; hard = chosen less styled than rejected, easy = more):",
                  "", "| domain | easy (%) | normal (%) | hard (%) | all nine cells (%) |", "|---|---|---|---|---|"]
        rm = results["rmbench"]
        for d, v in [*rm["per_domain"].items(), ("overall (mean of domains)", rm["overall"])]:
            lines.append(f"| {d} | {_fmt(v['easy'])} | {_fmt(v['normal'])} | {_fmt(v['hard'])} | {_fmt(v['score'])} |")
    lines += ["", "| domain | accuracy (%) | n | 95% interval |", "|---|---|---|---|"]
    for d, v in results["per_domain"].items():
        interval = f"{_fmt(v['ci95'][0])} – {_fmt(v['ci95'][1])}" if v.get("ci95") else "–"
        lines.append(f"| {d} | {_fmt(v['accuracy'])} | {v['n']} | {interval} |")
    return "\n".join(lines) + "\n"


LISTED_ROWS = 50  # report.md names this many over-long rows; results.json holds them all


def _context_lines(judging: Mapping[str, Any]) -> list[str]:
    ctx = judging.get("context")
    if not ctx or not judging.get("judged"):
        return []
    if not ctx["checked"]:
        return ["- context: **not checked** (the judge's context length is unknown; pass --judge_max_context_tokens)"]
    rows = ctx["rows"]
    lines = [f"- prompts over the judge's context (policy {judging.get('context_policy', '?')}): "
             f"{ctx['truncated']} cut to fit, {ctx['failed']} judged as failures, of {ctx['checked']} checked"]
    for rid, row in list(rows.items())[:LISTED_ROWS]:
        cut = ", ".join(f"{k} −{v}" for k, v in row["cut_tokens"].items()) or "not sent"
        lines.append(f"  - ⚠ `{rid}`: {row['status']}, prompt {row['prompt_tokens']} > {row['limit']} tokens ({cut})")
    if len(rows) > LISTED_ROWS:
        lines.append(f"  - … and {len(rows) - LISTED_ROWS} more (results.json lists every one)")
    return lines


WIDE_PLOT_DOMAINS = 12  # beyond this many domains, bars go horizontal: one readable row per domain


def plot(results: Mapping[str, Any], path: str | Path) -> Path:
    """Per-domain accuracy with bootstrap intervals: vertical bars for a few domains, one labelled row per domain
    (with its n) when there are many (Auto-J has 58 scenarios)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    per = results["per_domain"]
    domains = list(per)
    acc = [per[d]["accuracy"] or 0.0 for d in domains]
    err = [[a - (v["ci95"] or [a, a])[0] for a, v in zip(acc, per.values(), strict=True)],
           [(v["ci95"] or [a, a])[1] - a for a, v in zip(acc, per.values(), strict=True)]]
    if len(domains) > WIDE_PLOT_DOMAINS:
        names = [f"{d} (n={per[d]['n']})" for d in domains]
        fig, ax = plt.subplots(figsize=(7.0, 0.22 * len(domains) + 1.2))
        ax.barh(range(len(domains)), acc, xerr=err, capsize=2, color="#4c72b0")
        ax.axvline(0.5, color="grey", linestyle=":", linewidth=1)
        ax.set_yticks(range(len(domains)), names, fontsize=7)
        ax.invert_yaxis()  # first domain on top, as in the report's table
        ax.set_xlim(0, 1)
        ax.set_xlabel("accuracy")
    else:
        fig, ax = plt.subplots(figsize=(max(4.0, 0.6 * len(domains) + 2), 3.2))
        ax.bar(range(len(domains)), acc, yerr=err, capsize=3, color="#4c72b0")
        ax.axhline(0.5, color="grey", linestyle=":", linewidth=1)
        ax.set_xticks(range(len(domains)), domains, rotation=45 if len(domains) > 3 else 0, ha="right", fontsize=8)
        ax.set_ylim(0, 1)
        ax.set_ylabel("accuracy")
    ax.set_title(f"{results['benchmark']} — {results.get('mode', '')}", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return Path(path)


def write(results: Mapping[str, Any], out_dir: str | Path) -> dict[str, Path]:
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = {"results": out / "results.json", "report": out / "report.md", "plot": out / "report.png"}
    atomic.write_json(paths["results"], results)
    paths["report"].write_text(markdown(results), encoding="utf-8")
    plot(results, paths["plot"])
    return paths
