"""Learning proof of a search-agent policy trained on judge tournaments (train/grpo_policy.py with
`--policy_retrievers`), SmolLM2-135M-Instruct on CPU: the toy agent task (toy/agent_task.py: questions about fictional
facts, entities split into warm-up / GRPO / held-out), a warm-up that searches in a share of its trajectories, then
GRPO per topology and seed with one match judge, each trained agent played against its step-0 self by the toy oracle.

    .venv/bin/python -m experiments.agent_policy_proof --judge toy-oracle --seeds 0 --topologies round_robin
    .venv/bin/python -m experiments.agent_policy_proof --judge runs/quickstart/judge --tag trained \\
        --judge-retrievers wiki=runs/quickstart/indexes/wiki arxiv=runs/quickstart/indexes/arxiv
    .venv/bin/python -m experiments.agent_policy_proof --judge runs/quickstart/judge --tag trained-nosearch
    .venv/bin/python -m experiments.agent_policy_proof --table          # every finished run under --out, one table
    .venv/bin/python -m experiments.agent_policy_proof --null 8 --eval-prompts 50   # the measure's null, per seed

Reported per run, on held-out entities (never in a GRPO batch or the warm-up) and on the GRPO entities: the toy
oracle's win rate of the trained agent against its step-0 self (T = 1 samples, ties half, 95 % bootstrap over
prompts; 0.5 = no change), and of each agent's answers: the share stating the truth, refusing, hedging (naming more
than one value), searches per answer and the agent's own tokens. Every stage is cached under --out.
"""

from __future__ import annotations

import argparse
import json
import logging
import shlex
import time
from pathlib import Path

from experiments.cells import hostile_cell, hostile_quarters, tournament_stats
from experiments.cells import mean_sd as ms
from plumbing import atomic
from plumbing.records import RESULTS
from toy.agent_stages import evaluate, grpo, null_draws, write_data
from toy.agent_task import ToyAgentTask
from toy.world import ToyWorld

logger = logging.getLogger("experiments.agent_policy_proof")


def print_table(out: Path) -> None:
    """Every finished run under `out`, one row per match judge and topology (mean ± sd over its seeds)."""
    results = {}
    for path in sorted(out.glob(f"grpo-*/{RESULTS}")):
        r = json.loads(path.read_text())
        results.setdefault((r["tag"], r["topology"]), []).append(r)
    print("| match judge | topology | seeds | judge calls / step | judge tie rate | s / step | "
          "held-out win rate vs step 0 | "
          "truth before → after | searches / answer before → after | refusal, hedge after | GRPO-entity win rate | "
          "hostile kinds in the GRPO samples, first → last quarter |")
    print("|---" * 12 + "|")
    for (tag, topology), runs in sorted(results.items()):
        h = [r["table"]["heldout"] for r in runs]
        g = [r["table"]["grpo"] for r in runs]
        per_seed = ", ".join(f"{x['win_rate']:.2f}" for x in h)
        ci = f" [{h[0]['ci'][0]:.2f}, {h[0]['ci'][1]:.2f}]" if len(runs) == 1 else f" ({per_seed})"
        print(f"| {tag} | {topology} | {len(runs)} | {ms(r['judge_calls_per_step'] for r in runs)} | "
              f"{ms(r['tie_rate'] for r in runs)} | "
              f"{ms(r['seconds_per_step'] for r in runs)} | {ms(x['win_rate'] for x in h)}{ci} | "
              f"{ms(x['before']['truth'] for x in h)} → {ms(x['after']['truth'] for x in h)} | "
              f"{ms(x['before']['searches'] for x in h)} → {ms(x['after']['searches'] for x in h)} | "
              f"{ms(x['after']['refusal'] for x in h)}, {ms(x['after']['hedge'] for x in h)} | "
              f"{ms(x['win_rate'] for x in g)} | {hostile_cell(runs)} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("runs/agent-proof"))
    parser.add_argument("--model", default="smollm2-135m-instruct")
    parser.add_argument("--world", type=int, default=0, help="toy world of the task (the judge's world)")
    parser.add_argument("--judge", default="toy-oracle", help="match judge: toy-oracle or an exported judge folder")
    parser.add_argument("--judge-retrievers", nargs="*", default=[], help="CORPUS=LOCATION: the judge searches")
    parser.add_argument("--tag", default="", help="the judge's name in folders and the table (default: oracle)")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--topologies", nargs="+", default=["round_robin", "anchor"],
                        help="anchor: each completion against the group's first, 3 matches of 4 completions (half "
                             "of round robin's 6)")
    parser.add_argument("--sft-records", type=int, default=320, help="warm-up trajectories (40 steps x 8)")
    parser.add_argument("--search-share", type=float, default=0.3, help="warm-up trajectories that search")
    parser.add_argument("--grpo-steps", type=int, default=30)
    parser.add_argument("--eval-prompts", type=int, default=100, help="prompts per part in the head-to-head")
    parser.add_argument("--eval-samples", type=int, default=2, help="answers per prompt and agent")
    parser.add_argument("--extra", default="", help="more train/grpo_policy.py flags for every run")
    parser.add_argument("--table", action="store_true", help="only print the table of finished runs")
    parser.add_argument("--null", type=int, default=0, metavar="N",
                        help="only the measure's null: the warm-up policy under N other sampling seeds against "
                             "each --seeds seed's baseline sample, on the held-out prompts "
                             "(writes <out>/null-PROMPTSxSAMPLES-sSEED.json)")
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")
    if args.table:
        print_table(args.out)
        return
    from openrm.models import resolve
    from toy.judge_stages import toy_indexes
    from toy.stages import built
    from toy.warmup import run_sft

    world = ToyWorld(args.world)
    task = ToyAgentTask(world)
    data = write_data(task, args.out / "data", args.sft_records, args.search_share, 0)
    world.write_corpora(args.out / "corpora", "fact")
    indexes = toy_indexes(args.out / "corpora", args.out / "indexes")
    locations = {name: str(path) for name, path in indexes.items()}
    base = resolve(args.model)
    steps, batch = args.sft_records // 8, 8
    warm = built(args.out / "warm", {"base": base, "records": args.sft_records, "search_share": args.search_share},
                 lambda: run_sft(data / "sft.jsonl", base, args.out / "warm", steps, batch, 1e-4, 0),
                 "the agent's SFT warm-up")
    if args.null:
        for seed in args.seeds:
            summary = null_draws(task, warm, locations, args.null, seed, args.eval_prompts, args.eval_samples,
                                 args.out)
            print(json.dumps({k: v for k, v in summary.items() if k != "draws"}))
        return
    tag = args.tag or ("oracle" if args.judge == "toy-oracle" else Path(args.judge).name)
    judge: dict = {"judge": args.judge, "world_seed": args.world}
    if args.judge_retrievers:
        judge["retrievers"] = list(args.judge_retrievers)
    elif args.judge != "toy-oracle":  # a judge folder without search
        judge["no_tools"] = True
    agent = {"policy_retrievers": [f"{k}={v}" for k, v in locations.items()]}
    for topology in args.topologies:
        for seed in args.seeds:
            run_dir = args.out / f"grpo-{tag}-{topology}-s{seed}"
            started = time.perf_counter()
            run = grpo(warm, data, run_dir, args.grpo_steps, seed, {**judge, "topology": topology, **agent},
                       f"GRPO of the agent ({tag}, {topology}, seed {seed})", shlex.split(args.extra))
            table = evaluate(task, warm, run, locations, seed, args.eval_prompts, args.eval_samples)
            result = {"tag": tag, "topology": topology, "seed": seed, **tournament_stats(run),
                      "hostile_first_last_quarter": hostile_quarters(run), "table": table,
                      "wall_seconds": time.perf_counter() - started}
            atomic.write_json(run_dir / RESULTS, result, indent=1)
            logger.info("%s %s seed %d: %s", tag, topology, seed, json.dumps(table))
    print_table(args.out)


if __name__ == "__main__":
    main()
