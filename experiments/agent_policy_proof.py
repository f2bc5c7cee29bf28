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
import random
import statistics
import time
from pathlib import Path

from experiments.cells import mean_sd as ms
from experiments.cells import tournament_logs, tournament_stats
from plumbing import atomic
from toy.agent_task import PARTS, ToyAgentTask
from toy.stages import write_task_files
from toy.world import ToyWorld

ROOT = Path(__file__).resolve().parents[1]

logger = logging.getLogger("experiments.agent_policy_proof")
CONFIG = ROOT / "configs/grpo_policy/smollm2_agent_cpu.yaml"
REFUSALS = ("do not know", "don't know", "unknown", "cannot", "not sure")


def write_data(task: ToyAgentTask, out: Path, sft_records: int, search_share: float, seed: int) -> Path:
    sft = task.sft_records(sft_records, search_share, random.Random(f"agent:sft:{seed}"))
    return write_task_files(out, {**{part: task.rows(part) for part in PARTS}, "sft": sft})


def answer_stats(oracle, rows: list[dict], samples: list[list[dict]]) -> dict[str, float]:
    """Shares over every sampled answer: truth (the oracle's agreement), refusal, hedge (more than one value of
    the asked attribute named), searches and the agent's own tokens per answer."""
    flat = [(r["question"], s) for r, group in zip(rows, samples, strict=True) for s in group]
    n = len(flat)
    named = [oracle.named(q, s["answer"]) for q, s in flat]
    return {"truth": sum(oracle.agreements(q, s["answer"]) == 1 for q, s in flat) / n,
            "refusal": sum(not v and any(w in s["answer"].lower() for w in REFUSALS)
                           for v, (_, s) in zip(named, flat, strict=True)) / n,
            "hedge": sum(len(v) > 1 for v in named) / n,
            "searches": sum(s["searches"] for _, s in flat) / n,
            "tokens": sum(s["tokens"] for _, s in flat) / n}


def samples_of(model: Path, rows: list[dict], args, locations: dict, cache: Path, seed: int) -> list[list[dict]]:
    from openrm.agent import sample_agent_answers

    if cache.exists():
        return json.loads(cache.read_text())
    out = sample_agent_answers(model, [r["prompt"] for r in rows], args.eval_samples, 1.0, locations, seed=seed)
    atomic.write_json(cache, out, indent=None)
    return out


def baseline_samples(warm: Path, rows: list[dict], args, locations: dict, part: str, seed: int) -> list[list[dict]]:
    """The step-0 policy's answers that every run of `seed` is measured against (sampled once, with seed 1000 + seed,
    and cached in the warm-up folder)."""
    return samples_of(warm, rows, args, locations, warm / f"samples-{part}-{args.eval_samples}-s{seed}.json",
                      1000 + seed)


def evaluate(task: ToyAgentTask, warm: Path, run: Path, args, locations: dict, seed: int) -> dict:
    from eval.win_rate import head_to_head
    from toy.oracle import ToyOracle

    table = {}
    for part in ("heldout", "grpo"):
        rows = task.rows(part)[:args.eval_prompts]
        before = baseline_samples(warm, rows, args, locations, part, seed)
        after = samples_of(run, rows, args, locations, run / f"samples-{part}-{args.eval_samples}.json", 2000 + seed)
        oracle = ToyOracle.from_rows(task.world, rows)
        h2h = head_to_head(oracle, [r["question"] for r in rows], [[s["answer"] for s in g] for g in after],
                           [[s["answer"] for s in g] for g in before], seed=seed)
        table[part] = {"win_rate": h2h.win_rate, "ci": [h2h.ci_low, h2h.ci_high], "prompts": len(rows),
                       "before": answer_stats(oracle, rows, before), "after": answer_stats(oracle, rows, after)}
    return table


def null_draws(task: ToyAgentTask, warm: Path, args, locations: dict, draws: int, seed: int) -> dict:
    """The measure's null distribution for one seed: the step-0 policy, sampled with `draws` other seeds, against
    that seed's own baseline sample (the "before" of every run of that seed), on the held-out prompts (each draw's
    win rate, its 95 % interval, and whether that interval holds 0.5). The draws are shared by every seed."""
    from eval.win_rate import head_to_head
    from toy.oracle import ToyOracle

    rows = task.rows("heldout")[:args.eval_prompts]
    oracle = ToyOracle.from_rows(task.world, rows)
    base = baseline_samples(warm, rows, args, locations, "heldout", seed)
    results = []
    for k in range(draws):
        other = samples_of(warm, rows, args, locations,
                           warm / f"samples-heldout-{args.eval_samples}-null{k}.json", 3000 + k)
        h2h = head_to_head(oracle, [r["question"] for r in rows], [[x["answer"] for x in g] for g in other],
                           [[x["answer"] for x in g] for g in base], seed=k)
        results.append({"seed": 3000 + k, "win_rate": h2h.win_rate, "ci": [h2h.ci_low, h2h.ci_high],
                        "covers_half": h2h.ci_low <= 0.5 <= h2h.ci_high,
                        "truth": answer_stats(oracle, rows, other)["truth"]})
    rates = [r["win_rate"] for r in results]
    summary = {"seed": seed, "prompts": len(rows), "samples": args.eval_samples, "draws": results,
               "win_rate_mean": statistics.fmean(rates), "win_rate_sd": statistics.stdev(rates) if draws > 1 else None,
               "ci_half_width_mean": statistics.fmean((r["ci"][1] - r["ci"][0]) / 2 for r in results),
               "intervals_holding_half": sum(r["covers_half"] for r in results),
               "truth_base": answer_stats(oracle, rows, base)["truth"]}
    name = f"null-{args.eval_prompts}x{args.eval_samples}-s{seed}.json"
    atomic.write_json(args.out / name, summary, indent=1)
    return summary


def run_stats(run: Path) -> dict:
    logs = tournament_logs(run)
    quarter = max(len(logs) // 4, 1)
    kinds = sorted({k for h in logs for k in h if k.startswith("hostile/")})
    hostile = {k.removeprefix("hostile/"): [statistics.fmean(h.get(k, 0.0) for h in part)
                                            for part in (logs[:quarter], logs[-quarter:])] for k in kinds}
    return {**tournament_stats(run), "hostile_first_last_quarter": hostile}


def grpo_runner(warm: Path, data: Path, run_dir: Path, steps: int, seed: int, extra: list[str]):
    from train.policy_trainer import parse, train_policy

    return lambda resume: train_policy(*parse([
        "--config", str(CONFIG), "--model_name_or_path", str(warm), "--dataset", str(data / "grpo.jsonl"),
        "--output_dir", str(run_dir), "--max_steps", str(steps), "--seed", str(seed), *extra, *resume]))


def print_table(out: Path) -> None:
    results = {}
    for path in sorted(out.glob("grpo-*/agent_result.json")):
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


def hostile_cell(runs: list[dict]) -> str:
    """The kinds a policy's training samples showed (`eval.hostile.traits`), mean over the seeds that logged them;
    "none seen" when every share was 0, "not logged" when no run has the shares."""
    logged = [r["hostile_first_last_quarter"] for r in runs if r.get("hostile_first_last_quarter")]
    if not logged:
        return "not logged"
    seen = []
    for kind in sorted({k for h in logged for k in h}):
        first = statistics.fmean(h.get(kind, [0.0, 0.0])[0] for h in logged)
        last = statistics.fmean(h.get(kind, [0.0, 0.0])[1] for h in logged)
        if first or last:
            seen.append(f"{kind} {share(first)} → {share(last)}")
    return ", ".join(seen) or "none seen"


def share(value: float) -> str:
    """Two decimals, three for a share above 0 that two would print as 0.00 (one answer in a few hundred)."""
    return f"{value:.3f}" if 0 < value < 0.005 else f"{value:.2f}"


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
    from toy.stages import built, trained
    from toy.warmup import run_sft
    from train.policy_trainer import RUN_FILE

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
            summary = null_draws(task, warm, args, locations, args.null, seed)
            print(json.dumps({k: v for k, v in summary.items() if k != "draws"}))
        return
    tag = args.tag or ("oracle" if args.judge == "toy-oracle" else Path(args.judge).name)
    judge = ["--judge", args.judge, "--world_seed", str(args.world)]
    if args.judge_retrievers:
        judge += ["--retrievers", *args.judge_retrievers]
    elif args.judge != "toy-oracle":  # a judge folder without search
        judge += ["--no_tools", "true"]
    agent = ["--policy_retrievers", *[f"{k}={v}" for k, v in locations.items()]]
    for topology in args.topologies:
        for seed in args.seeds:
            run_dir = args.out / f"grpo-{tag}-{topology}-s{seed}"
            started = time.perf_counter()
            extra = [*judge, "--topology", topology, *agent, *args.extra.split()]
            run = trained(run_dir, {"model": str(warm), "seed": seed, "extra": extra}, args.grpo_steps,
                          RUN_FILE, grpo_runner(warm, data, run_dir, args.grpo_steps, seed, extra),
                          f"GRPO of the agent ({tag}, {topology}, seed {seed})")
            table = evaluate(task, warm, run, args, locations, seed)
            result = {"tag": tag, "topology": topology, "seed": seed, **run_stats(run), "table": table,
                      "wall_seconds": time.perf_counter() - started}
            atomic.write_json(run_dir / "agent_result.json", result, indent=1)
            logger.info("%s %s seed %d: %s", tag, topology, seed, json.dumps(table))
    print_table(args.out)


if __name__ == "__main__":
    main()
