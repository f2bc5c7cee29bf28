"""The table of judges on held-out judge pairs in both orders, as experiments/real_text_judge.py reports it: a judge's
row from its `eval.run` verdicts, a rule's row (the lexical reference, "the longer answer wins"), the share of pairs
whose searched evidence separates the answers, and the markdown table of them all. A pair is right when both orders
pick the right answer, so a coin scores 0.25.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from eval.breakdown import both_order_accuracy, kind_of, length_of, same_letter_rate
from eval.metrics import interval_of_mean

logger = logging.getLogger(__name__)
LENGTHS = ("sentence", "short", "lead")  # the table's length columns in this order, any other after them


def longer(example: Mapping[str, Any]) -> str:
    """The rule "the longer answer wins", in words: the letter of the longer answer, "tie" for equal lengths."""
    a, b = len(example["answer_a"].split()), len(example["answer_b"].split())
    return "tie" if a == b else ("A" if a > b else "B")


def reference_row(test: Sequence[Mapping[str, Any]], verdict_of: Callable[[Mapping[str, Any]], str]) -> dict:
    """A rule's both-order row: `verdict_of(e)` is order-free, so one verdict stands for both orders."""
    verdicts = {e["id"]: {"prediction": verdict_of(e)} for e in test}
    hits = [float(verdicts[e["id"]]["prediction"] == e["label"]) for e in test]
    return {"accuracy": sum(hits) / len(hits), "ci95": interval_of_mean(hits), "n": len(test),
            "ties": sum(v["prediction"] == "tie" for v in verdicts.values()) / len(test),
            "by_kind": both_order_accuracy(test, verdicts, kind_of),
            "by_length": both_order_accuracy(test, verdicts, length_of)}


def _share_by(test: Sequence[Mapping[str, Any]], flags: Mapping[str, bool],
              key: Callable[[Mapping[str, Any]], str]) -> dict[str, float]:
    groups: dict[str, list[bool]] = {}
    for e in test:
        groups.setdefault(key(e), []).append(flags[e["id"]])
    return {k: sum(v) / len(v) for k, v in sorted(groups.items())}


def coverage(test: Sequence[Mapping[str, Any]], covered: Mapping[str, bool]) -> dict:
    """The share of test pairs whose evidence separates the answers (`covered` by pair id: the ceiling of any judge
    that searches), over all pairs, by kind and by length."""
    return {"all": sum(covered.values()) / len(test), "by_kind": _share_by(test, covered, kind_of),
            "by_length": _share_by(test, covered, length_of)}


def judge_row(name: str, folder: Path, dataset: Path, test: Sequence[Mapping[str, Any]], retrievers: Mapping[str, Any],
              settings: Mapping[str, Any], out: Path, seed: int, limit: int, device: str) -> dict:
    """The row `name` of the judge in `folder`: `eval.run` over the test split into `out/eval/<name>` (resumable;
    a name ending in "no search" judges without tools, one ending in "retrieve-then-judge" with the evidence in the
    prompt) on `device`, broken down by kind and length. `limit`: judge only the first N test pairs (0: all)."""
    from eval.evaluation import EvalArguments, evaluate
    from eval.scorecard import markdown

    run = out / "eval" / name.replace(", ", "-").replace(" ", "-")
    no_search, retrieved = name.endswith("no search"), name.endswith("retrieve-then-judge")
    r = evaluate(EvalArguments(
        judge=str(folder), benchmark="in-domain", data=str(dataset), split="test", out=str(run), chunk_size=16,
        seed=seed, judge_device=device,
        limit=limit or None, no_tools=no_search,
        retrievers=[] if no_search else [f"{k}={v}" for k, v in retrievers.items()], retrieve_then_judge=retrieved,
        **({"evidence_tokens": int(settings["max_information_tokens"])} if retrieved else {})))
    logger.info("%s:\n%s", name, markdown(r))
    verdicts = {v["id"]: v for v in map(json.loads, (run / "verdicts.jsonl").read_text(encoding="utf-8").splitlines())}
    j = r["judging"]
    hits = [float(verdicts.get(e["id"], {}).get("prediction") == e["label"]) for e in test]
    row = {"accuracy": sum(hits) / len(hits), "ci95": interval_of_mean(hits, seed), "n": len(test),
           "ties": sum(verdicts.get(e["id"], {}).get("prediction") == "tie" for e in test) / len(test),
           "same_letter": same_letter_rate(test, verdicts),
           "single_order": (r.get("single_order") or {}).get("accuracy"),
           "unparsed_orders": j["unparsed_orders"] / max(1, 2 * j["judged"]),
           "searches": j["searches_per_judgment"], "seconds_per_pair": j["seconds_per_judgment"],
           "by_kind": both_order_accuracy(test, verdicts, kind_of),
           "by_length": both_order_accuracy(test, verdicts, length_of)}
    logger.info("%s: %s", name, {k: v for k, v in row.items() if not k.startswith("by_")})
    return row


def earlier_rows(saved: Path, warm_up: Mapping[str, Any], rows: Sequence[str]) -> dict:
    """The rows of an earlier results file `saved` judged on the same warm-up (its `warm-up` record equals
    `warm_up`) that are not judged again now (`rows`): they stay in the table."""
    if not saved.exists():
        return {}
    before = json.loads(saved.read_text(encoding="utf-8"))
    return {k: v for k, v in before["rows"].items() if k not in rows} if before.get("warm-up") == warm_up else {}


def table(results: Mapping[str, Any]) -> str:
    """Markdown: a line per judge row then per reference row (both orders with the 95 % interval, by kind, by length,
    same letter, ties, single order, unparsed orders, searches; "-" where a rule has none), then the evidence
    coverage."""
    rows = {**results["rows"], **results["references"]}
    kinds = sorted({k for r in rows.values() for k in r["by_kind"]})
    lengths = [x for x in LENGTHS if any(x in r["by_length"] for r in rows.values())]
    lengths += sorted({k for r in rows.values() for k in r["by_length"]} - set(lengths))
    head = ["judge", "both orders (95 % CI)", *kinds, *lengths, "same letter", "ties", "single order",
            "unparsed orders", "searches / pair"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for name, r in rows.items():
        cells = [name, f"{r['accuracy']:.2f} ({r['ci95'][0]:.2f}-{r['ci95'][1]:.2f})"]
        cells += [f"{r['by_kind'][k]['accuracy']:.2f}" if k in r["by_kind"] else "-" for k in kinds]
        cells += [f"{r['by_length'][k]['accuracy']:.2f}" if k in r["by_length"] else "-" for k in lengths]
        judged = "same_letter" in r
        cells += [f"{r['same_letter']:.2f}" if judged else "-", f"{r['ties']:.2f}",
                  "-" if r.get("single_order") is None else f"{r['single_order']:.2f}",
                  f"{r['unparsed_orders']:.2f}" if judged else "-", f"{r['searches'] or 0:.2f}" if judged else "-"]
        lines.append("| " + " | ".join(cells) + " |")
    cov = results["coverage"]
    lines += ["", f"Evidence coverage (the search shows words that separate the answers): {cov['all']:.2f} of "
              f"{next(iter(rows.values()))['n']} test pairs; by kind "
              + ", ".join(f"{k} {v:.2f}" for k, v in cov["by_kind"].items()) + "; by length "
              + ", ".join(f"{k} {v:.2f}" for k, v in cov["by_length"].items()) + "."]
    return "\n".join(lines) + "\n"


def probe_curve(results: Mapping[str, Any]) -> str:
    """Markdown of the warm-up's learning curve (`results["probe"]`, train/verdict_probe.py): a line per probe with
    the step, the training loss, both-order accuracy, the same-letter rate, single-order accuracy and the both-order
    accuracy per kind and per length of the probed test pairs."""
    probes = results.get("probe") or []
    if not probes:
        return "No probe was recorded (--probe-every 0).\n"
    kinds = sorted({k for p in probes for k in p.get("by_kind", {})})
    lengths = [x for x in LENGTHS if any(x in p.get("by_length", {}) for p in probes)]
    head = ["step", "loss", f"both orders ({probes[-1]['pairs']} pairs)", "same letter", "single order", *kinds,
            *lengths]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for p in probes:
        cells = [str(p["step"]), "-" if p.get("loss") is None else f"{p['loss']:.3f}", f"{p['both_orders']:.2f}",
                 f"{p['same_letter']:.2f}", f"{p['single_order']:.2f}"]
        cells += [f"{p['by_kind'][k]:.2f}" if k in p.get("by_kind", {}) else "-" for k in kinds]
        cells += [f"{p['by_length'][x]:.2f}" if x in p.get("by_length", {}) else "-" for x in lengths]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"
