"""Learning proof on CPU: the judge's RL loop (multi-turn rollout, env mask, composite reward, TRL GRPO) learns what
its reward asks, measured on held-out toy pairs over several seeds.

    .venv/bin/python bench/learning_proof.py --stage a --seeds 0 1 2    # the reward shapes tool choice
    .venv/bin/python bench/learning_proof.py --stage b --seeds 0        # the judge learns to use evidence
    .venv/bin/python bench/learning_proof.py --stage a --variants decoupled --tool-term per_call   # over-searching

Both stages run the quickstart's recipe (train/quickstart.py: short single-fact pairs, one fact per passage with
top-1 evidence, the compact prompt, a whole-word tokenizer, induction stages (`--constant-induction`: session 27s
three constant-rate ones), a warm-up that mixes pairs with
freshly drawn facts and drills, GRPO with configs/grpo_openrm/tiny_cpu.yaml) and judge held-out pairs greedily in
both orders. Each seed has its own tiny model, induction stages and warm-up (`--shared-start`: the first seed's).

Stage A. The warm-up's gold trajectories carry a tool drawn by a fair coin, so the tool choice starts uninformed, on
wiki and science pairs (`--domains`), so WIKI and ARXIV are each the gold tool of half the prompts; then 120 GRPO
steps at lr 1e-3 with each reward variant from that same start, one run per seed. (With medical pairs too, WIKI is
gold 2 times in 3: GRPO first collapsed onto it and the tool never came to depend on the question; RESULTS.)
composite and unit_weight pay for the gold tool, em_only does not (a wrong corpus still costs it: its evidence is
about another subject, so the verdict becomes a guess). Reported: the share of searches on the right corpus (greedy,
and sampled at T=1), searches and model-written tokens per order (the paper's Fig. 3 axes), accuracy, parse
failures: mean ± sd over seeds. The table in bench/RESULTS.md used the 2,000-step cosine warm-up (`--sft-steps 2000
--sft-decay 0`).
Stage B. The warm-up uses the gold tool; then GRPO (composite). Accuracy with search and without it (the no-tool
prompt; the facts are fictional and test pairs ask about documents no training pair uses, so without evidence the
judge can only guess).

Every stage is cached under --out (delete a folder to redo it); results go to `<out>/stage_<x>.json` and a
markdown table on stdout.
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import logging
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from openrm.tiny import TinyConfig  # noqa: E402
from openrm.toyworld import ToyWorld, write_dataset  # noqa: E402
from retrieval.manifest import file_sha256  # noqa: E402
from train.curriculum import RECALL_SHARE, induction_stages, warm_up  # noqa: E402
from train.quickstart import QuickstartArguments, evaluate, grpo, tiny_model, toy_indexes  # noqa: E402

logger = logging.getLogger("learning_proof")
WORLD_SEED = 0  # every seed judges the same toy world; seeds vary the model, its stages and GRPO
METRICS = ("correct_tool_share", "sampled_tool_share", "searches_per_order", "model_tokens_per_order", "accuracy",
           "parse_failures")


def measured(model: Path, indexes, test: list[dict], **overrides) -> dict:
    """`evaluate`, remembered in `<model>/judged.json` under a hash of the weights, the test pairs and the settings:
    a rerun that reuses a stage (say, the final all-seeds table after one run per seed) also reuses its numbers."""
    what = {"weights": file_sha256(model / "model.safetensors"), "search": bool(indexes),
            "test": [e["id"] for e in test], **overrides}
    key = hashlib.sha256(json.dumps(what, sort_keys=True).encode()).hexdigest()
    cache = model / "judged.json"
    saved = json.loads(cache.read_text()) if cache.exists() else {}
    if key not in saved:
        saved[key] = evaluate(model, indexes, test, **overrides)
        tmp = cache.with_name(f"judged.{os.getpid()}.tmp")  # runs of other seeds may judge the same start at once
        tmp.write_text(json.dumps({**saved, key: saved[key]}) + "\n", encoding="utf-8")
        tmp.replace(cache)
    return dict(saved[key])


def judged(model: Path, indexes, test: list[dict], sampled: bool) -> dict:
    metrics = measured(model, indexes, test)
    metrics["searches_per_order"] = metrics["searches_per_judgment"] / 2
    if sampled:  # the policy GRPO trains, not only its mode
        metrics["sampled_tool_share"] = measured(model, indexes, test, temperature=1.0, seed=0)["correct_tool_share"]
    return metrics


def start_config(seed: int, hidden: int, layers: int, head_dim: int) -> TinyConfig:
    """The tiny judge of `seed`: its weights from `seed`, its whole-word tokenizer from the world the proof's pairs
    come from. (Until session 26 the tokenizer came from world `seed`, so for seeds 1 and 2 the pairs' names were
    split into letters: bench/RESULTS.md.)"""
    recipe = QuickstartArguments(seed=seed, hidden_size=hidden, num_layers=layers, head_dim=head_dim)
    return dataclasses.replace(recipe.tiny_config(), world_seed=WORLD_SEED)


def curve(run: Path) -> list[dict[str, float]]:
    keys = ("reward", "openrm/em", "openrm/tool", "openrm/calls_per_trajectory", "completions/mean_length")
    history = json.loads((run / "trainer_state.json").read_text())["log_history"]
    return [{"step": h["step"], **{k: h[k] for k in keys if k in h}} for h in history if "reward" in h]


def spread(values: list[float | None]) -> str:
    values = [v for v in values if v is not None]
    if not values:
        return "-"
    mean = statistics.fmean(values)
    return f"{mean:.2f} ± {statistics.stdev(values):.2f}" if len(values) > 1 else f"{mean:.2f}"


def run_suffix(args) -> str:
    """What a GRPO run's folder and table row add to the variant's name: the non-default settings."""
    return (("" if args.tool_term == "share" else f"-{args.tool_term}") + f"-g{args.generations}"
            + ("" if args.loss_type == "dapo" else f"-{args.loss_type}"))


def run_stage(args, world: ToyWorld, data: Path, indexes, test: list[dict]) -> dict:
    stage_a = args.stage == "a"
    runs: dict[str, dict] = {}
    for seed in args.seeds:
        start_seed = args.seeds[0] if args.shared_start else seed
        base = tiny_model(args.out / f"tiny-h{args.hidden}-l{args.layers}-d{args.head_dim}-s{start_seed}-w{WORLD_SEED}",
                          start_config(start_seed, args.hidden, args.layers, args.head_dim))
        if args.induct_steps:  # as the quickstart (curriculum.induction_stages)
            induct = (f"induct-h{args.hidden}-l{args.layers}-d{args.head_dim}-s{start_seed}-{args.induct_steps}"
                      f"-v{args.induct_vocab}" + ("-fast" if args.fast_induction else ""))
            base = induction_stages(world, base, args.out / induct, args.induct_steps, args.induct_vocab, start_seed,
                                    fast=args.fast_induction)
        folder = (f"{args.stage}-sft-h{args.hidden}-l{args.layers}-d{args.head_dim}-s{start_seed}-{args.sft_steps}"
                  f"-c{args.copy}-d{args.decide}-i{args.induct_steps}-{args.induct_share}"
                  + (f"-wsd{args.sft_decay}" if args.sft_decay else "") + ("-fast" if args.fast_induction else "")
                  + ("" if len(args.domains) == 3 else "-" + "-".join(args.domains)))
        start = warm_up(world, base, args.out / folder, args.sft_steps, args.sft_lr, args.recombined, start_seed,
                        random_tool=stage_a, copy_share=args.copy, domains=args.domains, decision_share=args.decide,
                        induction_share=args.induct_share, decay_steps=min(args.sft_decay, args.sft_steps),
                        recall=RECALL_SHARE if args.fast_induction else 0.0)
        runs[f"sft/s{seed}"] = judged(start, indexes, test, sampled=stage_a)
        if not stage_a:
            runs[f"sft/s{seed}"]["no_search_accuracy"] = measured(start, None, test)["accuracy"]
        logger.info("stage %s seed %d SFT start: %s", args.stage, seed, runs[f"sft/s{seed}"])
        for variant in (args.variants if stage_a else ["composite"]) if args.grpo_steps else ():
            t = time.perf_counter()
            name = variant + run_suffix(args)
            run = grpo(start, data, indexes, args.out / f"{args.stage}-{name}-s{seed}-{args.grpo_steps}",
                       args.grpo_steps, "--reward_variant", variant, "--tool_term", args.tool_term, "--seed",
                       str(seed), *(["--learning_rate", str(args.grpo_lr)] if args.grpo_lr else []),
                       "--num_generations", str(args.generations), "--loss_type", args.loss_type,
                       "--per_device_train_batch_size", str(8 * args.generations))
            metrics = judged(run, indexes, test, sampled=stage_a)
            if not stage_a:
                metrics["no_search_accuracy"] = measured(run, None, test)["accuracy"]
            metrics.update(grpo_seconds=time.perf_counter() - t, curve=curve(run))
            runs[f"{name}/s{seed}"] = metrics
            logger.info("stage %s seed %d %s: %s", args.stage, seed, name,
                        {k: v for k, v in metrics.items() if k != "curve"})
    return runs


def table(runs: dict, args) -> str:
    names = ["sft", *(args.variants if args.stage == "a" else ["composite"])]
    names = [n if n == "sft" else n + run_suffix(args) for n in names]
    metrics = METRICS if args.stage == "a" else (*METRICS[2:], "no_search_accuracy")
    lines = ["| start → GRPO variant | " + " | ".join(metrics) + " |", "|---" * (len(metrics) + 1) + "|"]
    for name in names:
        rows = [runs[f"{name}/s{s}"] for s in args.seeds if f"{name}/s{s}" in runs]
        label = "SFT start" if name == "sft" else f"GRPO {name}"
        lines.append(f"| {label} | " + " | ".join(spread([r.get(k) for r in rows]) for k in metrics) + " |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stage", choices=("a", "b"), required=True, help="a: tool choice; b: use of evidence")
    parser.add_argument("--out", type=Path, default=Path("runs/learning-proof"), help="cache and results folder")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2], help="model, warm-up and GRPO seeds")
    parser.add_argument("--variants", nargs="+", default=["composite", "unit_weight", "em_only"],
                        help="stage A reward variants")
    parser.add_argument("--domains", nargs="+", default=None,
                        help="toy domains of the pairs; default: wiki and science in stage A (WIKI and ARXIV are the "
                             "gold tool equally often, so no single tool scores above a coin), all three in stage B")
    parser.add_argument("--tool-term", default="share", choices=("share", "per_call"), help="R_tool's definition")
    parser.add_argument("--hidden", type=int, default=64, help="tiny judge width")
    parser.add_argument("--layers", type=int, default=4, help="tiny judge depth")
    parser.add_argument("--head-dim", type=int, default=32, help="tiny judge attention head width")
    parser.add_argument("--n-train", type=int, default=4000, help="short training pairs (warm-up records, prompts)")
    parser.add_argument("--n-eval", type=int, default=100, help="held-out pairs judged in both orders")
    parser.add_argument("--sft-steps", type=int, default=1500, help="warm-up steps (batch 32)")
    parser.add_argument("--sft-lr", type=float, default=3e-3, help="warm-up peak learning rate")
    parser.add_argument("--sft-decay", type=int, default=500,
                        help="the warm-up's rate holds at its peak, then decays over its last this many steps "
                             "(0: cosine over the whole warm-up, the schedule of the stage A table)")
    parser.add_argument("--recombined", type=float, default=0.5, help="share of warm-up records with a fresh fact")
    parser.add_argument("--copy", type=float, default=0.15, help="share of warm-up records that are copy drills")
    parser.add_argument("--decide", type=float, default=0.2, help="share of warm-up records that are decision drills")
    parser.add_argument("--induct-steps", type=int, default=None,
                        help="most steps of each induction stage before the warm-up (0 = none); default: 1500, "
                             "6000 with --constant-induction")
    parser.add_argument("--induct-share", type=float, default=0.2, help="share of warm-up records that are "
                                                                         "induction drills")
    parser.add_argument("--induct-vocab", type=int, default=None,
                        help="toy words of the first induction stage; default: 0 (every word), 128 with "
                             "--constant-induction")
    parser.add_argument("--constant-induction", dest="fast_induction", action="store_false",
                        help="session 27's constant-rate induction stages (128 words, every word, long runs), the "
                             "recipe of the stage A table and of stage B before session 29; default: the "
                             "quickstart's (a ramp, every word, then long runs with value-letter recall drills)")
    parser.add_argument("--fast-induction", dest="fast_induction", action="store_true",
                        help="the default (kept so older commands still parse)")
    parser.add_argument("--shared-start", action="store_true",
                        help="one model and warm-up (the first seed's) for every seed; seeds then vary GRPO only")
    parser.add_argument("--grpo-steps", type=int, default=None,
                        help="GRPO steps (8 prompts x 8 completions); default: 120 in stage A, 20 in stage B")
    parser.add_argument("--generations", type=int, default=8, help="GRPO group size (8 prompts per step)")
    parser.add_argument("--loss-type", default=None, choices=("dapo", "grpo"),
                        help="TRL's GRPO loss: 'grpo' averages each completion's token losses, then the completions; "
                             "'dapo' (TRL's default, the quickstart's) averages over every token of the batch. "
                             "Default: grpo in stage A (under dapo the tool choice collapsed onto one tool for every "
                             "question while each domain paid its own tool: bench/RESULTS.md, session 27), dapo in B")
    parser.add_argument("--grpo-lr", type=float, default=None,
                        help="GRPO learning rate (constant); default: 1e-3 in stage A (the tool choice starts at a "
                             "coin), the quickstart's configs/grpo_openrm/tiny_cpu.yaml in stage B")
    args = parser.parse_args()
    if args.induct_steps is None:
        args.induct_steps = 1500 if args.fast_induction else 6000
    if args.induct_vocab is None:
        args.induct_vocab = 0 if args.fast_induction else 128
    if args.grpo_lr is None and args.stage == "a":
        args.grpo_lr = 1e-3
    if args.domains is None:  # with medical, WIKI is gold 2 times in 3 and GRPO first collapses onto it (RESULTS)
        args.domains = ["wiki", "science"] if args.stage == "a" else ["wiki", "science", "medical"]
    if args.loss_type is None:
        args.loss_type = "grpo" if args.stage == "a" else "dapo"
    if args.grpo_steps is None:
        args.grpo_steps = 120 if args.stage == "a" else 20
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")
    args.out.mkdir(parents=True, exist_ok=True)
    world = ToyWorld(WORLD_SEED)
    data = args.out / f"data-{args.n_train}-{'-'.join(args.domains)}"
    if not (data / "dataset").exists():
        write_dataset(world, data, args.n_train, max(args.n_eval, 200), style="short", granularity="fact",
                      domains=args.domains)
    indexes = toy_indexes(data / "corpora", args.out / f"indexes-{data.name}")  # one set per data folder
    test = world.examples(args.n_eval, "test", args.domains, style="short")
    t = time.perf_counter()
    runs = run_stage(args, world, data, indexes, test)
    seconds = time.perf_counter() - t
    out = args.out / f"stage_{args.stage}{'' if args.tool_term == 'share' else '_' + args.tool_term}.json"
    out.write_text(json.dumps({"args": {k: str(v) for k, v in vars(args).items()}, "seconds": seconds,
                               "runs": runs}, indent=1) + "\n", encoding="utf-8")
    print(table(runs, args))
    print(f"({seconds:.0f} s; {out})")


if __name__ == "__main__":
    main()
