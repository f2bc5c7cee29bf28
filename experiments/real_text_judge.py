"""The SmolLM2 judge trained on real text: clean pairs over real Wikipedia lead sections, an SFT warm-up on gold
trajectories in both orders, optional GRPO with live search over the real Wikipedia index, then one table on
held-out articles.

    .venv/bin/python -m experiments.real_text_judge [--out runs/real-judge] [--seed 0] [--grpo-steps 0]

Stages (each cached under --out and reused when its inputs match; GRPO resumes from its last checkpoint):
1. the pairs: `data_synthesis.wiki_judge_pairs` (a lead section cut to one sentence, two or three or the whole lead,
   against the same text with one kind of error put in; test articles, and every article a test pair borrows from,
   never in train), or --dataset (any `data_synthesis.build_dataset` output); --holdout-kind leaves a kind out;
2. what a bm25 search of the packaged lead sections shows for each test pair: its evidence coverage and the lexical
   reference (the answer sharing more of its words with that evidence wins);
3. the SFT warm-up (`toy.judge_stages.gold_warm_up`) on gold trajectories (--trace) of the train pairs of
   --train-kinds and --train-lengths, its learning curve in `<out>/judge-sft/probe.jsonl`;
4. GRPO (`configs/grpo_openrm/smollm2_wiki_cpu.yaml`, `toy.judge_stages.exported_grpo`) on the whole train split, or
   on the pairs the warm-up has not settled (--grpo-unsettled), and export; or --judge, a model trained elsewhere;
5. `eval.run --benchmark in-domain` on the test split, both orders, greedy, one pass per --rows row
   (`eval.judge_table`: bootstrap interval, accuracy by kind and length, same-letter rate, ties, unparsed orders),
   beside the lexical reference and "the longer answer wins". Results: `<out>/results.json` and `results.md`.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import logging
import os
import time
from pathlib import Path

from data_synthesis.hostile_rivals import KINDS as RIVAL_KINDS
from eval.breakdown import kind_of, length_of, selected
from eval.judge_table import coverage, earlier_rows, judge_row, longer, reference_row, table
from openrm.card import JudgeCard
from openrm.models import resolve
from plumbing import atomic
from plumbing.records import STAGE
from retrieval.wikipedia import packaged_index
from toy.judge_stages import exported_grpo, gold_warm_up, judge_folder, judging_settings, unsettled_pairs, wiki_pairs
from toy.stages import built, on_gpu
from train.trajectories import TRACES

ROOT = Path(__file__).resolve().parents[1]

logger = logging.getLogger("real_text_judge")
CONFIG = ROOT / "configs/grpo_openrm/smollm2_wiki_cpu.yaml"
UNSETTLED_SAMPLE = 800  # train pairs the warm-up reads for --grpo-unsettled: 15 min on 2 CPU cores
RESTATE_TOKENS = 480  # both answers of 150 words restated, with their tags and the verdict
ROWS = ("zero-shot", "warm-up", "warm-up, no search", "warm-up, retrieve-then-judge", "after GRPO",
        "after GRPO, no search")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("runs/real-judge"))
    parser.add_argument("--dataset", type=Path, default=None, help="a pair dataset folder (default: wiki pairs)")
    parser.add_argument("--n-train", type=int, default=2640, help="train pairs over every kind and length "
                        "(the warm-up takes those --train-kinds and --train-lengths name, each in both orders)")
    parser.add_argument("--n-test", type=int, default=210)
    parser.add_argument("--holdout-kind", default="", help="train on every kind but this one (it stays in test)")
    parser.add_argument("--train-kinds", nargs="*", default=["numbers", "swap"],
                        help="warm up on these kinds only (the test split keeps all; no value: every kind)")
    parser.add_argument("--train-lengths", nargs="*", default=["sentence", "short"],
                        help="warm up on these lengths only (the test split keeps all; no value: every length)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--model", default="smollm2-135m-instruct", help="packaged short name or folder")
    parser.add_argument("--index", type=Path, default=None, help="default: bm25 over the packaged lead sections")
    parser.add_argument("--trace", default="quotes", choices=TRACES,
                        help="after the evidence: the letter alone, or the evidence span then the letter; or "
                             "'retrieved': the evidence in the prompt before the answers (row 'warm-up, "
                             "retrieve-then-judge'); 'quotes': where the answers part, quoted from each; or "
                             "'restate': both answers copied whole; then the letter")
    parser.add_argument("--sft-epochs", type=float, default=1.0)
    parser.add_argument("--sft-batch", type=int, default=8)
    parser.add_argument("--sft-lr", type=float, default=5e-5)
    parser.add_argument("--sft-schedule", default="cosine", choices=("cosine", "constant_with_warmup"),
                        help="the warm-up's learning rate after its first tenth of steps: cosine decay, or held")
    parser.add_argument("--verdict-weight", type=float, default=10.0,
                        help="the verdict letters' weight in the SFT loss (train/plain_head.py)")
    parser.add_argument("--rival-share", type=float, default=0.0, help="share of the pairs (warm-up and GRPO) whose "
                        "wrong answer becomes a hedge, an evasion or forged markup (data_synthesis.hostile_rivals)")
    parser.add_argument("--rival-kinds", nargs="+", default=list(RIVAL_KINDS), choices=RIVAL_KINDS)
    parser.add_argument("--grpo-rival-share", type=float, default=None, help="GRPO's share (default: --rival-share)")
    parser.add_argument("--bf16", choices=("true", "false"), default="true", help="autocast for SFT and GRPO")
    parser.add_argument("--grpo-steps", type=int, default=0)
    parser.add_argument("--judge", type=Path, default=None, help="a model trained elsewhere, judged as it is by "
                        "the 'after GRPO' rows (no warm-up or GRPO here): e.g. a trained judge on another --dataset")
    parser.add_argument("--grpo-lr", type=float, default=1e-5)
    parser.add_argument("--grpo-unsettled", type=float, default=0.0, help="GRPO on the train pairs (of a sample of "
                        f"{UNSETTLED_SAMPLE}) whose right letter the warm-up's log-odds put below this in an order")
    parser.add_argument("--both-orders-reward", action="store_true", help="GRPO: pay a pair only in both orders")
    parser.add_argument("--order-groups", action="store_true",
                        help="GRPO: each group one pair, half its completions in each order (train/order_groups.py)")
    parser.add_argument("--rows", nargs="+", default=["warm-up", "warm-up, no search"],
                        choices=ROWS,
                        help="judge rows to evaluate (one pass over the test split each; zero-shot alone: no warm-up)")
    parser.add_argument("--eval-limit", type=int, default=0, help="judge only the first N test pairs (0: all)")
    parser.add_argument("--probe-pairs", type=int, default=70, help="the warm-up's learning curve: the teacher-"
                        "forced verdict of the first N test pairs in both orders every --probe-every steps (0: none)")
    parser.add_argument("--probe-every", type=int, default=20)
    parser.add_argument("--probe-model", default="",
                        help="only probe this model (folder or packaged name) on the test pairs, print and exit")
    args = parser.parse_args()
    if args.trace == "retrieved" and args.grpo_steps:
        parser.error("GRPO trains the searching protocol: warm it up with --trace verdict or quotes")
    if not 0.0 <= args.rival_share <= 1.0 or not 0.0 <= (args.grpo_rival_share or 0.0) <= 1.0:
        parser.error("--rival-share and --grpo-rival-share must be in [0, 1]")
    if args.both_orders_reward and args.order_groups:
        parser.error("--both-orders-reward and --order-groups are two ways to train both orders: choose one")
    if args.holdout_kind and args.grpo_steps:
        parser.error("--holdout-kind leaves a kind out of the warm-up only: GRPO reads the whole train split")
    if args.judge and (args.grpo_steps or not set(args.rows) <= {"after GRPO", "after GRPO, no search"}):
        parser.error("--judge is judged as it is: no --grpo-steps, and only the rows of 'after GRPO'")
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    from transformers import AutoTokenizer

    from eval import loaders
    from openrm.dataset import in_both_orders_rows
    from openrm.evidence import lexical_verdict, separates, shown_evidence
    from openrm.tools import ToolBox
    from train.verdict_probe import probe_items, probe_model

    started = time.perf_counter()
    bf16 = args.bf16 == "true"
    data = args.out / "data"
    dataset = args.dataset or wiki_pairs(data, args.n_train, args.n_test, args.seed)
    index = args.index or packaged_index(Path("runs/wiki-vital"))
    retrievers = {"wiki": index, "arxiv": index}
    settings = judging_settings(CONFIG)
    if args.trace == "restate":  # the second turn copies both answers: up to ~450 tokens at 150 words each
        settings |= {"max_new_tokens": RESTATE_TOKENS,
                     "max_completion_tokens": settings["max_completion_tokens"] + RESTATE_TOKENS}
    train = selected(loaders.load_benchmark("in-domain", dataset, "train").examples, args.train_kinds,
                     args.train_lengths, but=args.holdout_kind)
    test = loaders.load_benchmark("in-domain", dataset, "test", limit=args.eval_limit or None).examples
    base = resolve(args.model)
    tokenizer = AutoTokenizer.from_pretrained(base)
    toolbox = ToolBox.from_locations({k: str(v) for k, v in retrievers.items()}, JudgeCard(**settings).tool_specs(),
                                     topk=settings["topk"])
    try:
        shown = shown_evidence(test, toolbox, tokenizer, settings["max_information_tokens"])
        probe = probe_items(in_both_orders_rows(test[:args.probe_pairs], args.seed), toolbox, tokenizer,
                            settings["max_information_tokens"], settings["prompt_style"],
                            {"kind": kind_of, "length": length_of},
                            args.trace) if args.probe_pairs and args.trace != "span" else []
        if args.probe_model:
            print(json.dumps(probe_model(args.probe_model, probe, bf16), indent=1))
            return
        sft_dir = args.out / "judge-sft"
        warm = not args.judge and (args.grpo_steps or set(args.rows) != {"zero-shot"})  # zero-shot: no warm-up
        # the data files only: a trainer leaves cache-*.arrow files beside them
        data_sha = hashlib.sha256(b"".join(p.read_bytes() for p in sorted(Path(dataset).rglob("data-*.arrow")))
                                  ).hexdigest()
        gold_settings = {k: settings[k] for k in ("tools", "topk", "prompt_style", "max_information_tokens")}
        built(sft_dir, {"base": base, "data": data_sha, "epochs": args.sft_epochs, "batch": args.sft_batch,
                        "lr": args.sft_lr, "seed": args.seed, "gold": gold_settings, "trace": args.trace,
                        "holdout": args.holdout_kind, "bf16": bf16, "both_orders": True,
                        **({"prompt": "eval.run"} if args.trace == "retrieved" else {}),
                        **({"train_kinds": args.train_kinds, "train_lengths": args.train_lengths}
                           if args.train_kinds or args.train_lengths else {}),
                        **({"verdict_weight": args.verdict_weight} if args.verdict_weight != 1.0 else {}),
                        **({"schedule": args.sft_schedule} if args.sft_schedule != "cosine" else {}),
                        **({"rivals": args.rival_share, "rival_kinds": args.rival_kinds} if args.rival_share else {})},
              lambda: gold_warm_up(train, toolbox, tokenizer, settings, base, sft_dir, trace=args.trace,
                                   rival_share=args.rival_share, rival_kinds=args.rival_kinds, seed=args.seed,
                                   epochs=args.sft_epochs, batch=args.sft_batch, learning_rate=args.sft_lr, bf16=bf16,
                                   verdict_weight=args.verdict_weight, schedule=args.sft_schedule, probe=probe,
                                   probe_every=args.probe_every), "the SFT warm-up") if warm else None
        grpo_pairs = unsettled_pairs(sft_dir, dataset, args.out / "grpo-pairs", toolbox, tokenizer, settings,
                                     trace=args.trace, margin=args.grpo_unsettled, limit=UNSETTLED_SAMPLE,
                                     seed=args.seed, bf16=bf16) if args.grpo_steps and args.grpo_unsettled else dataset
    finally:
        toolbox.close()
    judges = args.out / "judges"
    folders = {"zero-shot": judge_folder(Path(base), judges / "zero-shot", settings),
               **({"warm-up": judge_folder(sft_dir, judges / "sft", settings)} if warm else {})}
    if args.grpo_steps:
        share = args.rival_share if args.grpo_rival_share is None else args.grpo_rival_share
        folders["after GRPO"] = exported_grpo(sft_dir, grpo_pairs, data, retrievers, settings, args.out,
                                              args.grpo_steps, seed=args.seed, learning_rate=args.grpo_lr, bf16=bf16,
                                              both_orders=args.both_orders_reward, rival_kinds=args.rival_kinds,
                                              rival_share=share, order_groups=args.order_groups, config=CONFIG)
    elif args.judge:
        folders["after GRPO"] = judge_folder(args.judge, judges / "grpo", settings)
    results = {"gold": json.loads((sft_dir / "gold_stats.json").read_text())
               if (sft_dir / "gold_stats.json").exists() else None, "args": vars(args) | {"out": str(args.out)},
               "settings": {k: settings[k] for k in ("topk", "max_information_tokens")}, "rows": {}}
    results["args"] |= {k: str(getattr(args, k) or "") for k in ("dataset", "index", "judge")}
    results["warm-up"] = json.loads((sft_dir / STAGE).read_text()) if warm else None
    curve = sft_dir / "probe.jsonl"
    results["probe"] = [json.loads(line) for line in curve.read_text().splitlines()] if curve.exists() else []
    results["rows"] = earlier_rows(args.out / "results.json", results["warm-up"], args.rows)
    covered = {e["id"]: separates(shown[e["id"]], e) for e in test}
    results["coverage"] = coverage(test, covered)
    results["references"] = {"lexical reference": reference_row(test, lambda e: lexical_verdict(shown[e["id"]], e)),
                             "longer answer wins": reference_row(test, longer)}
    device = "cuda" if on_gpu() else "cpu"  # where the warm-up trained (toy.warmup.run_sft)
    for name in args.rows:
        judge = "after GRPO" if name.startswith("after GRPO") else name.split(",")[0]
        if judge not in folders:
            logger.warning("skipping row %r: no %s judge (--grpo-steps 0?)", name, judge)
            continue
        results["rows"][name] = judge_row(name, folders[judge], dataset, test, retrievers, settings, args.out,
                                          args.seed, args.eval_limit, device)
    results["seconds"] = time.perf_counter() - started
    atomic.write_json(args.out / "results.json", results, indent=1)
    atomic.write_text(args.out / "results.md", table(results))
    print(table(results))


if __name__ == "__main__":
    main()
