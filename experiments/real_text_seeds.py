"""The real-text judge over several seeds: experiments/real_text_judge.py once per seed on the same pairs, then one
table with every seed and the mean ± sd.

    python -m experiments.real_text_seeds --out runs/real-judge-seeds --seeds 0 1 2 -- --trace verdict \
        --train-kinds --train-lengths --sft-epochs 0.5 --sft-schedule constant_with_warmup --grpo-steps 20 \
        --both-orders-reward --rows warm-up "warm-up, no search" "after GRPO" "after GRPO, no search"

Everything after `--` goes to every seed's run unchanged (not --out or --seed: this command sets them). The pairs
are built once, with the first seed, under `<out>/data` (or --dataset, passed through, names them), so the seeds
differ in their warm-up and GRPO draws, never in their test articles. Each seed runs as its own process into
`<out>/s<seed>` (log: `<out>/s<seed>.log`), cached and resumable as real_text_judge is: a rerun trains and judges
only what is missing. --parallel runs that many seeds at once: on one GPU small jobs like these share it (with CUDA
MPS, `nvidia-cuda-mps-control -d`, their kernels overlap); on a CPU keep 1, since two torch jobs on the same cores
slow each other down more than they gain. The table goes to `<out>/results.md` and `<out>/results.json`.
A recipe of two stages runs as two commands, the second with --warm-from the first's --out (each seed on top of its
own first stage) and the first's pairs as --dataset.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from experiments.cells import seeds_table
from experiments.processes import run_logged
from plumbing import atomic


def seed_command(out: Path, seed: int, dataset: Path, passed: list[str], warm_from: Path | None = None) -> list[str]:
    """The command line of one seed's run; with `warm_from`, from that seed's own warm-up there."""
    start = ["--model", str(warm_from / f"s{seed}" / "judge-sft")] if warm_from else []
    return [sys.executable, "-m", "experiments.real_text_judge", "--out", str(out / f"s{seed}"), "--seed", str(seed),
            "--dataset", str(dataset), *start, *passed]


def without_option(words: list[str], option: str) -> list[str]:
    """`words` without `option VALUE` or `option=VALUE`."""
    out, skip = [], False
    for word in words:
        if skip:
            skip = False
        elif word == option:
            skip = True
        elif not word.startswith(option + "="):
            out.append(word)
    return out


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    own, passed = (argv[:argv.index("--")], argv[argv.index("--") + 1:]) if "--" in argv else (argv, [])
    parser = argparse.ArgumentParser(description=" ".join(__doc__.split("\n\n")[0].split()),
                                     usage="%(prog)s [--out OUT] [--seeds S ...] [--parallel N] -- ARGS")
    parser.add_argument("--out", type=Path, default=Path("runs/real-judge-seeds"), help="one folder per seed in here")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2], help="the first also draws the pairs")
    parser.add_argument("--parallel", type=int, default=1, help="seeds run at once (GPU: 2-3; CPU: 1)")
    parser.add_argument("--warm-from", type=Path, default=None,
                        help="an earlier run of this command: each seed starts from its own warm-up there "
                             "(<dir>/s<seed>/judge-sft), e.g. a second warm-up stage or GRPO on top; pass that "
                             "run's pairs as --dataset <dir>/data/dataset")
    args = parser.parse_args(own)
    if args.parallel < 1 or len(set(args.seeds)) != len(args.seeds):
        parser.error("--parallel must be ≥ 1 and --seeds distinct")
    if {"--out", "--seed"} & set(passed) or (args.warm_from and {"--model"} & set(passed)):
        parser.error("--out, --seed (and --model with --warm-from) are this command's own: give them before `--`")
    if args.warm_from and "--dataset" not in " ".join(passed):
        parser.error("--warm-from: pass the earlier run's pairs (--dataset DIR/data/dataset), so each seed "
                     "judges the pairs its warm-up held out")
    missing = [s for s in args.seeds if args.warm_from and not (args.warm_from / f"s{s}" / "judge-sft" / "config.json")
               .is_file()]
    if missing:
        parser.error(f"--warm-from {args.warm_from}: no warm-up (s<seed>/judge-sft) for seeds {missing}")
    # the pairs, once: real_text_judge's own --dataset, or the packaged Wikipedia pairs of the first seed
    given = argparse.ArgumentParser(add_help=False)
    given.add_argument("--dataset", type=Path)
    given.add_argument("--n-train", type=int, default=2640)
    given.add_argument("--n-test", type=int, default=210)
    pairs, _ = given.parse_known_args(passed)
    if pairs.dataset is None:
        from toy.judge_stages import wiki_pairs

        dataset = wiki_pairs(args.out / "data", pairs.n_train, pairs.n_test, args.seeds[0])
    else:  # every seed gets it below, as the pairs built here
        dataset, passed = pairs.dataset, without_option(passed, "--dataset")
    args.out.mkdir(parents=True, exist_ok=True)
    threads = max(1, (os.cpu_count() or 2) // args.parallel)

    def one(seed: int) -> tuple[int, int, float]:
        started = time.perf_counter()
        print(f"seed {seed}: running (log {args.out / f's{seed}.log'})", flush=True)
        code = run_logged(seed_command(args.out, seed, dataset, passed, args.warm_from), args.out / f"s{seed}.log",
                          threads)
        print(f"seed {seed}: {'done' if code == 0 else f'failed (exit {code})'} in "
              f"{time.perf_counter() - started:.0f} s", flush=True)
        return seed, code, time.perf_counter() - started

    with ThreadPoolExecutor(max_workers=args.parallel) as pool:
        finished = list(pool.map(one, args.seeds))
    failed = [s for s, code, _ in finished if code != 0]
    results = {s: json.loads((args.out / f"s{s}" / "results.json").read_text(encoding="utf-8"))
               for s, code, _ in finished if code == 0}
    if results:
        table = seeds_table(results)
        atomic.write_json(args.out / "results.json", {
            "dataset": str(dataset), "passed": passed, "seconds": {s: round(t, 1) for s, _, t in finished},
            "failed": failed, "seeds": results}, indent=1)
        atomic.write_text(args.out / "results.md", table)
        print(table)
    for s in failed:
        print(f"seed {s} failed: see {args.out / f's{s}.log'}", file=sys.stderr)
    return 1 if failed or not results else 0


if __name__ == "__main__":
    sys.exit(main())
