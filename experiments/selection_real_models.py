"""Selection accuracy with real judges (the paper's Table 6 shape): `train.select_preferences` with SmolLM2 judges on
UltraFeedback-shaped pairs and on multi-candidate sets, against the length baseline and a random pick, each judge
with and without its search tool.

    .venv/bin/python -m experiments.selection_real_models --out runs/selection-real \
        --judges zero-shot=smollm2-135m-instruct toy=runs/learning-proof/c-composite-30x1e-05-hedge0.25-s1 \
        --toy-retrievers wiki=IDX/wiki arxiv=IDX/arxiv \
        [--synth runs/wiki-synth-llm --wiki-retrievers wiki=runs/wiki-vital/index-bm25 arxiv=runs/wiki-vital/index-bm25]
    .venv/bin/python -m experiments.selection_real_models --out runs/selection-real --table     # the table only

Row files, written once under <out>/data:
- `toy-uf.jsonl`: held-out toy-world questions (split test), each with the best- and worst-rated of 4 toy answers,
  shaped as trl / HuggingFaceH4 ultrafeedback_binarized rows (chat-message `chosen` / `rejected`, the ratings in a
  `metadata` object); sets whose 4 answers all rate alike are left out;
- `toy-sets.jsonl`: other held-out toy questions with all 4 answers and their ratings (a round robin picks the best
  and worst; right when the pick has the top rating);
- `wiki-uf.jsonl` (with --synth): the test split of a `data_synthesis.build_dataset` run (e.g. SmolLM2 writing over
  real Wikipedia), the answer written with the documents as `chosen`, plain-text rows.

Each (rows, judge, mode) cell is its own `train.select_preferences` run folder (resumable). Per cell: selection
accuracy (an undecided row counts wrong) with a 95 % bootstrap interval over rows, decided rows, and judge seconds
per row. Baselines per row file: the longer answer (in words) chosen (equal lengths: wrong) and a random pick
(its expected accuracy, exact). Writes <out>/results.json and <out>/results.md.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
from pathlib import Path

import numpy as np

from data_synthesis.pairs import preference_rows
from eval.metrics import bootstrap_ci
from eval.preference_sets import load_preference_sets
from openrm.judge_spec import is_plugin_judge
from plumbing import atomic

logger = logging.getLogger("selection_real_models")
CANDIDATES = 4


def toy_rows(world_seed: int, n_pairs: int, n_sets: int, seed: int = 0) -> tuple[list[dict], list[dict]]:
    """(binarized rows, candidate-set rows) over held-out toy questions; the two never share a question."""
    from toy.candidate_sets import toy_candidate_rows
    from toy.world import ToyWorld

    sets = toy_candidate_rows(ToyWorld(world_seed), 2 * n_pairs + n_sets, CANDIDATES, "test", seed)
    pairs = []
    for row in sets[n_sets:]:
        ratings = row["ratings"]
        if len(set(ratings)) == 1:
            continue
        best, worst = ratings.index(max(ratings)), ratings.index(min(ratings))
        user = [{"role": "user", "content": row["question"]}]
        pairs.append({"prompt_id": row["id"], "prompt": row["question"],
                      "chosen": user + [{"role": "assistant", "content": row["candidates"][best]}],
                      "rejected": user + [{"role": "assistant", "content": row["candidates"][worst]}],
                      "metadata": {"score_chosen": ratings[best], "score_rejected": ratings[worst],
                                   "source": "toyworld"}})
        if len(pairs) == n_pairs:
            break
    candidate_sets = [{"id": r["id"], "question": r["question"], "candidates": r["candidates"],
                       "ratings": r["ratings"]} for r in sets[:n_sets]]
    return pairs, candidate_sets


def write_rows(path: Path, rows: list[dict]) -> None:
    if not path.exists():
        atomic.write_jsonl(path, rows)


def interval(hits: list[float], seed: int = 0) -> list[float] | None:
    ci = bootstrap_ci(hits, np.random.default_rng(seed))
    return None if ci is None else [round(ci.low, 4), round(ci.high, 4)]


def baselines(path: Path) -> dict:
    """Length and random baselines over the rows whose file names a better answer."""
    rows = [s for s in load_preference_sets(path).sets if s.ordered]
    length_hits = []
    for s in rows:
        words = [len(c.split()) for c in s.candidates]
        top = [i for i, w in enumerate(words) if w == max(words)]
        length_hits.append(float(len(top) == 1 and top[0] in s.best))
    random_hits = [len(s.best) / len(s.candidates) for s in rows]
    return {"n": len(rows), "length": sum(length_hits) / len(rows), "length_ci95": interval(length_hits),
            "random": sum(random_hits) / len(rows)}


def cell_hits(path: Path, run: Path) -> list[float]:
    """Per ordered row: 1 when the judge decided and its chosen has the top rating (as eval.selection scores it)."""
    records = {}
    for line in (run / "selections.jsonl").read_text(encoding="utf-8").splitlines():
        r = json.loads(line)
        records[r["index"]] = r
    hits = []
    for s in load_preference_sets(path).sets:
        if s.ordered and s.index in records:
            r = records[s.index]
            hits.append(float(r["outcome"] == "decided" and r["chosen"] in s.best))
    return hits


def run_cell(data: Path, judge: str, retrievers: list[str], no_tools: bool, out: Path, args) -> dict:
    report_path = out / "report.json"
    if report_path.exists():
        return json.loads(report_path.read_text(encoding="utf-8"))
    try:
        return _run_select(data, judge, retrievers, no_tools, out, args)
    except ValueError as exc:  # a judge that decides no row leaves no pairs to write: its verdicts still count
        if "no pairs left" not in str(exc):
            raise
        from eval.judging import VerdictStore
        from eval.selection import selection_metrics

        records = VerdictStore(out / "selections.jsonl", key="index").records
        report = {"selection": selection_metrics(load_preference_sets(data).sets, records), "note": str(exc)}
        atomic.write_json(report_path, report, indent=1)
        return report


def _run_select(data: Path, judge: str, retrievers: list[str], no_tools: bool, out: Path, args) -> dict:
    from train.preference_selection import SelectArguments, run

    if is_plugin_judge(judge):  # the toy oracle: no model, no tools
        select = SelectArguments(data=str(data), out=str(out), judge=judge, world_seed=args.world_seed,
                                 on_tie="drop", seed=args.seed, batch_size=args.batch_size)
    else:
        select = SelectArguments(data=str(data), out=str(out), judge=judge, no_tools=no_tools,
                                 retrievers=[] if no_tools else retrievers, on_tie="drop", seed=args.seed,
                                 batch_size=args.batch_size, judge_batch_size=2 * args.chunk_size,
                                 judge_max_new_tokens=args.max_new_tokens)
    return run(select)


def markdown(results: dict) -> str:
    lines = ["| rows | judge | n | selection accuracy (95 % CI) | decided | decided accuracy | judge s / row |",
             "|---|---|---:|---|---:|---:|---:|"]
    for name, r in results["rows"].items():
        b = r["baselines"]
        lo, hi = b["length_ci95"] or (float("nan"), float("nan"))
        lines.append(f"| {name} | longer answer | {b['n']} | {b['length']:.3f} ({lo:.3f}-{hi:.3f}) | – | – | – |")
        lines.append(f"| {name} | random pick (expected) | {b['n']} | {b['random']:.3f} | – | – | – |")
        for cell in r["cells"]:
            ci = cell["ci95"] or (float("nan"), float("nan"))
            dec = cell["decided_accuracy"]
            lines.append(f"| {name} | {cell['judge']} ({cell['mode']}) | {cell['n']} | {cell['accuracy']:.3f} "
                         f"({ci[0]:.3f}-{ci[1]:.3f}) | {cell['decided']} | "
                         f"{'–' if dec is None else f'{dec:.3f}'} | {cell['seconds_per_row']:.2f} |")
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("runs/selection-real"))
    parser.add_argument("--judges", nargs="*", default=[], help="NAME=FOLDER (an exported judge, or a packaged "
                                                                 "model's short name for zero-shot), or "
                                                                 "NAME=toy-oracle (toy rows only)")
    parser.add_argument("--modes", nargs="+", default=["tools", "no-tools"], choices=["tools", "no-tools"])
    parser.add_argument("--rows", nargs="+", default=["toy-uf", "toy-sets", "wiki-uf"],
                        choices=["toy-uf", "toy-sets", "wiki-uf"])
    parser.add_argument("--toy-retrievers", nargs="*", default=[], help="CORPUS=INDEX of the toy world")
    parser.add_argument("--wiki-retrievers", nargs="*", default=[], help="CORPUS=INDEX of real Wikipedia")
    parser.add_argument("--synth", type=Path, default=None, help="a build_dataset folder: its test split is wiki-uf")
    parser.add_argument("--world-seed", type=int, default=0)
    parser.add_argument("--pairs", type=int, default=48, help="toy-uf and wiki-uf rows")
    parser.add_argument("--sets", type=int, default=16, help="toy-sets rows (4 answers each)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--chunk-size", type=int, default=8)
    parser.add_argument("--max-new-tokens", type=int, default=None,
                        help="per-turn token budget of every model judge in this call (default: each judge card's); "
                             "a cell's folder does not record it, so give a capped judge its own NAME")
    parser.add_argument("--table", action="store_true", help="only rebuild the table from finished cells")
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

    data = args.out / "data"
    pairs, sets = toy_rows(args.world_seed, args.pairs, args.sets, args.seed)
    write_rows(data / "toy-uf.jsonl", pairs)
    write_rows(data / "toy-sets.jsonl", sets)
    wanted = list(args.rows)
    if "wiki-uf" in wanted:
        if args.synth is None:
            if not (data / "wiki-uf.jsonl").exists():
                logger.info("no --synth: the wiki-uf rows are left out")
                wanted.remove("wiki-uf")
        else:
            write_rows(data / "wiki-uf.jsonl", preference_rows(args.synth, "test", args.pairs))
    retrievers = {"toy-uf": args.toy_retrievers, "toy-sets": args.toy_retrievers, "wiki-uf": args.wiki_retrievers}
    judges = dict(j.split("=", 1) for j in args.judges)

    results: dict = {"rows": {}}
    for name in wanted:
        path = data / f"{name}.jsonl"
        entry = {"path": str(path), "baselines": baselines(path), "cells": []}
        for judge, folder in judges.items():
            if is_plugin_judge(folder) and name == "wiki-uf":
                continue  # the toy oracle knows only toy questions
            for mode in (["oracle"] if is_plugin_judge(folder) else args.modes):
                run = args.out / name / f"{judge}-{mode}"
                if mode == "tools" and not retrievers[name] and not is_plugin_judge(folder):
                    raise SystemExit(f"{name} with tools needs --{'wiki' if name == 'wiki-uf' else 'toy'}-retrievers")
                if args.table and not (run / "report.json").exists():
                    continue
                report = run_cell(path, folder, retrievers[name], mode == "no-tools", run, args)
                sel, hits = report["selection"], cell_hits(path, run)
                entry["cells"].append({
                    "judge": judge, "mode": mode, "n": len(hits), "accuracy": sum(hits) / len(hits),
                    "ci95": interval(hits), "decided": sel["decided"], "decided_accuracy": sel["decided_accuracy"],
                    "outcomes": sel["outcomes"], "judge_calls": sel["judge_calls"],
                    "seconds_per_row": sel["judge_seconds"] / max(sel["rows"], 1)})
                logger.info("%s / %s (%s): %s", name, judge, mode, entry["cells"][-1])
        results["rows"][name] = entry
    atomic.write_json(args.out / "results.json", results, indent=1)
    table = markdown(results)
    atomic.write_text(args.out / "results.md", table)
    print(table)


if __name__ == "__main__":
    main()
