"""Learning proof of the rubric generator's GRPO (train/grpo_rubric_generator.py) on CPU: the toy rubric task, a
scripted scorer served over HTTP on loopback (toy/rubric_scorer.py: ratings follow a hidden rule, items
naming the query's entity rate reports that mention it higher), the tiny generator warmed up on a noisy mixture,
then GRPO; held-out valid-JSON rate and preference accuracy of the warm-up (step 0) and the trained generator.

    OMP_NUM_THREADS=2 .venv/bin/python bench/rubric_learning_proof.py --out runs/rubric-proof

Every stage is cached under --out (toy.rubric_quickstart); the table goes to stdout and `<out>/proof.json`.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from toy.rubric_quickstart import RubricQuickstartArguments, main  # noqa: E402
from toy.rubric_scorer import ToyScorer, scorer_app  # noqa: E402
from toy.rubric_task import toy_entities  # noqa: E402
from toy.world import ToyWorld  # noqa: E402


def start_server(app, port: int):
    import uvicorn

    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", access_log=False))
    threading.Thread(target=server.run, daemon=True).start()
    while not server.started:
        time.sleep(0.05)
    return server


def main_cli() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default="runs/rubric-proof")
    parser.add_argument("--port", type=int, default=8011)
    args, rest = parser.parse_known_args()
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    (qs,) = __import__("trl").TrlParser(RubricQuickstartArguments).parse_args_into_dataclasses(
        ["--out", args.out, *rest])
    server = start_server(scorer_app(ToyScorer(toy_entities(ToyWorld(qs.seed)))), args.port)
    url = f"http://127.0.0.1:{args.port}/v1"
    flags = ["--scorer", "server", "--scorer_server", url, "--scorer_model", "toy"]
    qs.grpo_args = " ".join([*flags, qs.grpo_args])
    started = time.perf_counter()
    table = main(qs, scorer=flags)
    seconds = time.perf_counter() - started
    server.should_exit = True
    b, a = table["before"], table["after"]
    rows = [("generator, step 0 (warm-up)", b["generated"]), ("generator, after GRPO", a["generated"]),
            ("general rubric", b["general"]), ("pointwise, no rubric", b["pointwise"]),
            ("pairwise, no rubric", b["pairwise"])]
    print("| method | valid JSON | preference accuracy | paired Cohen's d | rows |")
    print("|---|---|---|---|---|")
    for name, m in rows:
        valid = "–" if m["valid_rate"] is None else f"{m['valid_rate']:.3f}"
        d = "–" if m["cohens_d"] is None else f"{m['cohens_d']:.3f}"
        print(f"| {name} | {valid} | {m['accuracy']:.3f} | {d} | {m['rows']} |")
    print(f"\nwall time (all stages not cached before): {seconds:.0f} s")
    (Path(args.out) / "proof.json").write_text(json.dumps({**table, "seconds": seconds}, indent=2) + "\n")


if __name__ == "__main__":
    main_cli()
