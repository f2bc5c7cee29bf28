"""The learning proof's grid in parallel processes: experiments/learning_proof.py once per (variant, seed) cell, side
by side on one GPU, then the one-process command over every cell, which finds them all cached and writes the
stage's table, results file and curves.

    python -m experiments.learning_grid --stage c --parallel 10 -- --bf16 false
    python -m experiments.learning_grid --stage c --variants decoupled --parallel 3 -- --bf16 false --tool-term per_call

Everything after `--` goes to every learning_proof run unchanged (not --stage, --out, --seeds or --variants: this
command sets them). In one shared --out folder, so each cell reuses what another wrote:
1. the first seed's warm-up alone (it also writes the toy data and indexes every later run reads);
2. the other seeds' warm-ups side by side (`--grpo-steps 0`);
3. every (variant, seed) cell, --parallel at a time, each from its seed's warm-up;
4. `learning_proof --seeds ... --variants ...` over them all: every cell is cached, so it only reads and writes
   (its table on this command's output; the seconds it records per cell are its reading's, the training's are in
   each part's log line here).
Logs: `<out>/grid/<part>.log`. A cell that fails stops step 4 (it would train the cell again, alone); rerun the same
command: finished cells are cached and only the failed ones train. On a GPU, start CUDA MPS first
(`nvidia-cuda-mps-control -d`) so the processes' kernels overlap. Each process's allocator keeps the memory its
peaks took (9-13 GB for a SmolLM2 cell): twelve cells ran side by side on one 140 GB H200, fifteen ran out of memory.
On a CPU keep --parallel 1: two torch jobs on the same cores slow each other down more than they gain.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from experiments.processes import run_logged

OWN = ("--stage", "--out", "--seeds", "--variants")
VARIANTS = ["composite", "unit_weight", "em_only", "decoupled"]


def proof_command(stage: str, out: Path, seeds: list[int], variants: list[str], passed: list[str],
                  *more: str) -> list[str]:
    """The command line of one learning_proof run."""
    return [sys.executable, "-m", "experiments.learning_proof", "--stage", stage, "--out", str(out),
            "--seeds", *map(str, seeds), "--variants", *variants, *passed, *more]


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    own, passed = (argv[:argv.index("--")], argv[argv.index("--") + 1:]) if "--" in argv else (argv, [])
    parser = argparse.ArgumentParser(description=" ".join(__doc__.split("\n\n")[0].split()),
                                     usage="%(prog)s --stage {a,b,c} [--out OUT] [--seeds S ...] [--variants V ...] "
                                           "[--parallel N] -- ARGS")
    parser.add_argument("--stage", choices=("a", "b", "c"), required=True, help="as learning_proof's")
    parser.add_argument("--out", type=Path, default=Path("runs/learning-proof"), help="the shared cache folder")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--variants", nargs="+", default=VARIANTS, help="reward variants (stage b: composite)")
    parser.add_argument("--parallel", type=int, default=1, help="runs at once (one H200: up to 12; CPU: 1)")
    args = parser.parse_args(own)
    if args.parallel < 1 or len(set(args.seeds)) != len(args.seeds):
        parser.error("--parallel must be ≥ 1 and --seeds distinct")
    taken = sorted({w.split("=")[0] for w in passed} & set(OWN))
    if taken:
        parser.error(f"{', '.join(taken)}: this command's own, give them before `--`")
    variants = ["composite"] if args.stage == "b" else args.variants
    threads = max(1, (os.cpu_count() or 2) // args.parallel)
    logs = args.out / "grid"

    def run(part: str, seeds: list[int], cell_variants: list[str], *more: str) -> tuple[str, int]:
        started = time.perf_counter()
        print(f"{part}: running (log {logs / f'{part}.log'})", flush=True)
        code = run_logged(proof_command(args.stage, args.out, seeds, cell_variants, passed, *more),
                          logs / f"{part}.log", threads)
        print(f"{part}: {'done' if code == 0 else f'failed (exit {code})'} in {time.perf_counter() - started:.0f} s",
              flush=True)
        return part, code

    first, *rest = args.seeds
    parts = [run(f"warm-up-s{first}", [first], variants, "--grpo-steps", "0")]
    with ThreadPoolExecutor(max_workers=args.parallel) as pool:
        if parts[0][1] == 0:
            parts += pool.map(lambda s: run(f"warm-up-s{s}", [s], variants, "--grpo-steps", "0"), rest)
        if all(code == 0 for _, code in parts):
            cells = [(v, s) for s in args.seeds for v in variants]
            parts += pool.map(lambda cell: run(f"{cell[0]}-s{cell[1]}", [cell[1]], [cell[0]]), cells)
    failed = [part for part, code in parts if code != 0]
    if failed:
        print(f"failed: {', '.join(failed)} (logs in {logs}); rerun to train only what is missing", file=sys.stderr)
        return 1
    print("the table, from the cached cells:", flush=True)
    return run_logged(proof_command(args.stage, args.out, args.seeds, variants, passed), None, threads)


if __name__ == "__main__":
    sys.exit(main())
