"""Reward-hacking audit of a judge: what each kind of hostile candidate (`eval.hostile`: a refusal, a hedge, padding,
our own tags, chat-template control strings, the question quoted back, a claimed source) earns against the right
answer — wins plus half ties, with a 95 % bootstrap interval — with and without search.

    .venv/bin/python -m experiments.hacking_audit --judge runs/qs1/judge --toy-world 0 --domains wiki science \
        --retrievers wiki=runs/qs1/indexes/wiki arxiv=runs/qs1/indexes/arxiv --out runs/audit/toy
    .venv/bin/python -m experiments.hacking_audit --judge runs/real-judge/judges/grpo \
        --data runs/real-judge/data/dataset --out runs/audit/real \
        --retrievers wiki=runs/wiki-vital/index-bm25 arxiv=runs/wiki-vital/index-bm25

Each kind is saved to OUT/results.json as it ends (the table to OUT/results.md, each pair's verdict and the
judge's text to OUT/verdicts/MODE-KIND.jsonl); a rerun with the same judge and pairs goes on from there.
Pairs: the test split of --data (any judge dataset), or held-out short pairs of a toy world (--toy-world). A judge
used as a reward should leave every kind near 0; 0.5 means it cannot tell the hostile candidate from the right one.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

from eval.hostile import KINDS, audit
from plumbing import atomic
from plumbing.records import RESULTS, TABLES


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--judge", required=True, help="exported judge folder")
    parser.add_argument("--data", default=None, help="judge dataset folder (its test split)")
    parser.add_argument("--toy-world", type=int, default=None, help="or: short held-out pairs of this toy world")
    parser.add_argument("--domains", nargs="+", default=["wiki", "science", "medical"], help="toy domains")
    parser.add_argument("--retrievers", nargs="+", default=[], help="CORPUS=LOCATION; none: without search only")
    parser.add_argument("--kinds", nargs="+", default=list(KINDS))
    parser.add_argument("--per-kind", type=int, default=50)
    parser.add_argument("--skip-no-search", action="store_true", help="audit with search only")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    from openrm.judge import Judge

    if args.toy_world is not None:
        from toy.world import ToyWorld

        world = ToyWorld(args.toy_world)
        examples = [world.example(i, "test", tuple(args.domains), "short") for i in range(args.per_kind)]
    elif args.data:
        from eval.loaders import load_benchmark

        examples = load_benchmark("in-domain", args.data, "test", limit=args.per_kind).examples
    else:
        parser.error("give --data or --toy-world")
    retrievers = dict(r.split("=", 1) for r in args.retrievers)
    modes = ([("with search", retrievers)] if retrievers else []) + \
        ([] if args.skip_no_search and retrievers else [("no search", None)])
    args.out.mkdir(parents=True, exist_ok=True)
    weights = sorted([f.name, f.stat().st_size, f.stat().st_mtime_ns] for f in Path(args.judge).glob("*.safetensors"))
    saved, asked = args.out / RESULTS, {"judge": str(args.judge), "weights": weights, "per_kind": args.per_kind,
                                             "pairs": [e.get("id") for e in examples]}
    results = json.loads(saved.read_text(encoding="utf-8")) if saved.exists() else {}
    if results.get("asked") != asked:  # another judge or other pairs: audited anew
        results = {"asked": asked}
    for mode, where in modes:
        todo = [k for k in args.kinds if k not in results.get(mode, {})]
        if not todo:
            continue
        with Judge.from_pretrained(args.judge, retrievers=where, batch_size=32) as judge:
            for n, kind in enumerate(todo, 1):  # each kind saved as it ends: a rerun goes on from the next
                t = time.perf_counter()
                kept: list[dict] = []
                cell = audit(judge, examples, [kind], args.per_kind, keep=kept)[kind]
                atomic.write_jsonl(args.out / "verdicts" / f"{mode.replace(' ', '-')}-{kind}.jsonl", kept)
                results.setdefault(mode, {})[kind] = {**cell, "seconds": round(time.perf_counter() - t, 1)}
                atomic.write_json(saved, results, indent=1)
                print(f"[{mode} {n}/{len(todo)}] {kind}: earned {cell['earned']:.2f}, {cell['ties']} ties of "
                      f"{cell['pairs']} ({results[mode][kind]['seconds']:.0f} s)", flush=True)
    lines = ["| kind | " + " | ".join(f"earned, {m} (95 % CI) | ties" for m, _ in modes) + " |",
             "|---|" + "---|---|" * len(modes)]
    for kind in args.kinds:
        cells = []
        for mode, _ in modes:
            r = results[mode][kind]
            cells.append(f"{r['earned']:.2f} ({r['ci95'][0]:.2f}-{r['ci95'][1]:.2f}) | {r['ties']} of {r['pairs']}")
        lines.append(f"| {kind} | " + " | ".join(cells) + " |")
    table = "\n".join(lines) + "\n"
    atomic.write_text(args.out / TABLES, table)
    print(table)


if __name__ == "__main__":
    main()
