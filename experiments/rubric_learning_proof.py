"""Learning proof of the rubric generator's GRPO (train/grpo_rubric_generator.py) on CPU: the toy rubric task, a
scripted scorer served over HTTP on loopback (toy/rubric_scorer.py: ratings follow a hidden rule, items
naming the query's entity rate reports that mention it higher), the tiny generator warmed up on a noisy mixture,
then GRPO; held-out valid-JSON rate and preference accuracy of the warm-up (step 0) and the trained generator.

    OMP_NUM_THREADS=2 .venv/bin/python -m experiments.rubric_learning_proof --out runs/rubric-proof
    OMP_NUM_THREADS=2 .venv/bin/python -m experiments.rubric_learning_proof --out runs/rubric-smollm2-s0 \
        --model smollm2-135m-instruct --sft_steps 40 --sft_batch 8 --sft_learning_rate 1e-4 --grpo_steps 30 --seed 0
    .venv/bin/python -m experiments.rubric_learning_proof \
        --table runs/rubric-smollm2-s0 runs/rubric-smollm2-s1  # mean ± sd

Besides valid JSON and preference accuracy (an invalid rubric counts as a miss), the table gives the accuracy among
the rubrics that were scored, and the share of valid rubrics naming the held-out query's own entity or another one
(the toy scorer pays only for the query's).

Every stage is cached under --out (toy.rubric_stages); the table goes to stdout and `<out>/results.json`.
"""

from __future__ import annotations

import argparse
import json
import logging
import threading
import time
from pathlib import Path

from experiments.cells import mean_sd
from plumbing import atomic
from plumbing.records import RESULTS
from toy.rubric_scorer import ToyScorer, scorer_app
from toy.rubric_stages import RubricQuickstartArguments, run
from toy.rubric_task import entity_naming, toy_entities
from toy.world import ToyWorld


def start_server(app, port: int):
    import uvicorn

    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", access_log=False))
    threading.Thread(target=server.run, daemon=True).start()
    while not server.started:
        time.sleep(0.05)
    return server


def eval_naming(eval_dir: Path, heldout: Path, entities: frozenset[str]) -> dict:
    """`toy.rubric_task.entity_naming` over one evaluation's rubrics (`rubrics.jsonl`) and its held-out triplets."""
    entity_of = {row["id"]: row["meta"]["entity"]
                 for row in map(json.loads, heldout.read_text(encoding="utf-8").splitlines())}
    rows = map(json.loads, (eval_dir / "rubrics.jsonl").read_text(encoding="utf-8").splitlines())
    return entity_naming([(entity_of[row["id"]], text) for row in rows for text in row["rubrics"]], entities)


ROWS = (  # (row name, stage of results.json, method, evaluation folder of a generator)
    ("generator, step 0 (warm-up)", "before", "generated", "warm"),
    ("generator, after GRPO", "after", "generated", "grpo"),
    ("general rubric", "before", "general", None),
    ("pointwise, no rubric", "before", "pointwise", None),
    ("pairwise, no rubric", "before", "pairwise", None),
)


def summary(out: Path) -> dict:
    """One finished proof folder: its seed, the held-out metrics per row and the entity-naming shares."""
    proof = json.loads((out / RESULTS).read_text())
    entities = toy_entities(ToyWorld(proof["seed"]))
    naming = {stage: eval_naming(out / f"eval-{stage}", out / "data/heldout.jsonl", entities)
              for stage in ("warm", "grpo")}
    return {"seed": proof["seed"], "seconds": proof["seconds"], "naming": naming,
            "rows": {name: {**proof[when][method], **(naming[stage] if stage else {})}
                     for name, when, method, stage in ROWS}}


def print_table(summaries: list[dict]) -> None:
    """The proof's table: one seed's values, or mean ± sd over seeds."""
    def cell(name: str, key: str) -> str:
        values = [s["rows"][name].get(key) for s in summaries]
        if any(v is None for v in values):
            return "–"
        return mean_sd(values, 3)

    print(f"seeds {[s['seed'] for s in summaries]}")
    print("| method | valid JSON | preference accuracy | among valid rubrics | names the query's entity "
          "| names another entity | paired Cohen's d | rows |")
    print("|---|---|---|---|---|---|---|---|")
    for name, *_ in ROWS:
        print(f"| {name} | {cell(name, 'valid_rate')} | {cell(name, 'accuracy')} | {cell(name, 'scored_accuracy')} "
              f"| {cell(name, 'names_own_entity')} | {cell(name, 'names_other_entity')} | {cell(name, 'cohens_d')} "
              f"| {summaries[0]['rows'][name]['rows']} |")


def main_cli() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default="runs/rubric-proof")
    parser.add_argument("--port", type=int, default=8011)
    parser.add_argument("--table", nargs="+", type=Path, default=None, metavar="OUT",
                        help="only print the table over these finished proof folders (one per seed)")
    args, rest = parser.parse_known_args()
    if args.table:
        missing = [str(out) for out in args.table if not (out / RESULTS).exists()]
        if missing:
            parser.error(f"no finished proof ({RESULTS}) in {', '.join(missing)}")
        print_table([summary(out) for out in args.table])
        return
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    (qs,) = __import__("trl").TrlParser(RubricQuickstartArguments).parse_args_into_dataclasses(
        ["--out", args.out, *rest])
    server = start_server(scorer_app(ToyScorer(toy_entities(ToyWorld(qs.seed)))), args.port)
    url = f"http://127.0.0.1:{args.port}/v1"
    started = time.perf_counter()
    table = run(qs, scorer={"scorer": "server", "scorer_server": url, "scorer_model": "toy"})
    seconds = time.perf_counter() - started
    server.should_exit = True
    out = Path(args.out)
    atomic.write_json(out / RESULTS, {**table, "seed": qs.seed, "seconds": seconds})
    print_table([summary(out)])
    print(f"\nwall time (all stages not cached before): {seconds:.0f} s")


if __name__ == "__main__":
    main_cli()
