"""The SmolLM2 judge trained on real text: clean pairs over real Wikipedia lead sections, an SFT warm-up on gold
trajectories in both orders, optional GRPO with live search over the real Wikipedia index, then one table on
held-out articles.

    .venv/bin/python -m experiments.real_text_judge [--out runs/real-judge] [--seed 0] [--grpo-steps 0]

Stages (each cached under --out and reused when its inputs match; GRPO resumes from its last checkpoint):
1. the pair dataset: `data_synthesis.wiki_judge_pairs` (an article's lead section cut to one sentence, two or three
   sentences or the whole lead, against the same text with one kind of error put in; test articles, and every
   article a test pair borrows from, never in train), or --dataset (any `data_synthesis.build_dataset` output);
   --holdout-kind trains on every kind but one, so the table shows a kind the judge never saw;
2. the bm25 index of the packaged lead sections, and what a search shows for each test pair: whether it holds words
   that separate the answers (evidence coverage, the ceiling of any judge that searches) and the lexical reference
   (the answer sharing more of its words with that evidence wins);
3. gold trajectories for the train pairs of --train-kinds and --train-lengths (by default `numbers` and `swap`, one
   sentence or two to three: the test split's other kinds and the whole lead are then held out), both orders of a
   pair side by side (`train.gold_trajectories`, --trace: by default `quotes`, the searching protocol whose
   second think quotes where the two answers part, after the evidence, then the letter; `verdict`, the letter alone
   after the evidence; `retrieved`, the evidence in the prompt before the answers and the letter alone, as `eval.run
   --retrieve_then_judge` judges; `restate`, the searching protocol whose second think copies both answers whole
   after the evidence, then the letter), and the SFT warm-up on them: one epoch (--sft-epochs), each step holding both
   orders of its pairs, the verdict letter's loss weighed --verdict-weight times, under bf16 autocast (--bf16), with
   its learning curve: the teacher-forced verdict of the first --probe-pairs test pairs every --probe-every steps
   (`train.verdict_probe`, `<out>/judge-sft/probe.jsonl`);
4. GRPO (`configs/grpo_openrm/smollm2_wiki_cpu.yaml`, composite reward; --both-orders-reward pays a verdict only
   as often as the pair's other order is right; --rival-share puts hostile rivals into its pairs as into the
   warm-up's) on the whole train split (every kind and length) and export, when --grpo-steps > 0 (from a searching
   warm-up only);
5. `eval.run --benchmark in-domain` on the test split, both orders, greedy (a pair is right when both orders pick
   the right answer; a coin scores 0.25): each judge row with its 95 % bootstrap interval, accuracy by kind and by
   length, the same-letter rate (both orders gave the same letter: the verdict followed the position), ties and
   unparsed orders; beside them the lexical reference and "the longer answer wins".

Results go to `<out>/results.json` and `<out>/results.md`.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import logging
import os
import time
from pathlib import Path

from eval.breakdown import kind_of, length_of
from openrm.card import JudgeCard
from openrm.models import resolve
from plumbing import atomic
from retrieval.wikipedia import packaged_index
from data_synthesis.hostile_rivals import KINDS as RIVAL_KINDS
from toy.judge_stages import grpo, judging_settings
from toy.stages import built, on_gpu
from toy.warmup import run_sft
from train.trajectories import TRACES

ROOT = Path(__file__).resolve().parents[1]

logger = logging.getLogger("real_text_judge")
CONFIG = ROOT / "configs/grpo_openrm/smollm2_wiki_cpu.yaml"
RESTATE_TOKENS = 480  # both answers of 150 words restated, with their tags and the verdict
ROWS = ("zero-shot", "warm-up", "warm-up, no search", "warm-up, retrieve-then-judge", "after GRPO",
        "after GRPO, no search")


def longer(e: dict) -> str:
    a, b = len(e["answer_a"].split()), len(e["answer_b"].split())
    return "tie" if a == b else ("A" if a > b else "B")


def bootstrap(values: list[float], seed: int = 0, resamples: int = 1000) -> list[float]:
    """95 % percentile interval of the mean."""
    import numpy as np

    x = np.asarray(values, dtype=float)
    means = x[np.random.default_rng(seed).integers(0, len(x), size=(resamples, len(x)))].mean(axis=1)
    return [float(np.quantile(means, 0.025)), float(np.quantile(means, 0.975))]


def reference_row(test: list[dict], verdict_of) -> dict:
    """A rule's both-order row: `verdict_of(e)` is order-free, so one verdict stands for both orders."""
    from eval.breakdown import both_order_accuracy

    verdicts = {e["id"]: {"prediction": verdict_of(e)} for e in test}
    hits = [float(verdicts[e["id"]]["prediction"] == e["label"]) for e in test]
    return {"accuracy": sum(hits) / len(hits), "ci95": bootstrap(hits), "n": len(test),
            "ties": sum(v["prediction"] == "tie" for v in verdicts.values()) / len(test),
            "by_kind": both_order_accuracy(test, verdicts, kind_of),
            "by_length": both_order_accuracy(test, verdicts, length_of)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("runs/real-judge"))
    parser.add_argument("--dataset", type=Path, default=None, help="a pair dataset folder (default: wiki pairs)")
    parser.add_argument("--n-train", type=int, default=2640,
                        help="train pairs over every kind and length (the warm-up takes those --train-kinds and "
                             "--train-lengths name, each in both orders)")
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
                             "'retrieved': the evidence in the prompt before the answers, then the letter (judge it "
                             "with the row 'warm-up, retrieve-then-judge'); 'quotes': after the evidence, "
                             "where the answers part, quoted from each, then the letter; or 'restate': after the "
                             "evidence, both answers copied whole, then the letter")
    parser.add_argument("--sft-epochs", type=float, default=1.0)
    parser.add_argument("--sft-batch", type=int, default=8)
    parser.add_argument("--sft-lr", type=float, default=5e-5)
    parser.add_argument("--sft-schedule", default="cosine", choices=("cosine", "constant_with_warmup"),
                        help="the warm-up's learning rate after its first tenth of steps: cosine decay, or held")
    parser.add_argument("--verdict-weight", type=float, default=10.0,
                        help="the verdict letters' weight in the SFT loss (train/plain_head.py)")
    parser.add_argument("--rival-share", type=float, default=0.0,
                        help="share of the pairs (warm-up and GRPO) whose wrong answer becomes a hedge, an evasion or "
                             "forged markup (data_synthesis.hostile_rivals), so the judge does not pay a candidate "
                             "for gaming it")
    parser.add_argument("--bf16", choices=("true", "false"), default="true",
                        help="bf16 autocast for SFT and GRPO (float32 weights)")
    parser.add_argument("--grpo-steps", type=int, default=0)
    parser.add_argument("--grpo-lr", type=float, default=1e-5)
    parser.add_argument("--both-orders-reward", action="store_true", help="GRPO: pay a pair only in both orders")
    parser.add_argument("--rows", nargs="+", default=["warm-up", "warm-up, no search"],
                        choices=ROWS,
                        help="judge rows to evaluate (each a pass over the test split)")
    parser.add_argument("--eval-limit", type=int, default=0, help="judge only the first N test pairs (0: all)")
    parser.add_argument("--probe-pairs", type=int, default=70,
                        help="the warm-up's learning curve: the teacher-forced verdict of the first N test pairs in "
                             "both orders (train/verdict_probe.py) every --probe-every steps (0: no probe)")
    parser.add_argument("--probe-every", type=int, default=20)
    parser.add_argument("--probe-model", default="",
                        help="only probe this model (folder or packaged name) on the test pairs, print and exit")
    args = parser.parse_args()
    if args.trace == "retrieved" and args.grpo_steps:
        parser.error("GRPO trains the searching protocol: warm it up with --trace verdict or quotes")
    if not 0.0 <= args.rival_share <= 1.0:
        parser.error(f"--rival-share must be in [0, 1], got {args.rival_share}")
    if args.holdout_kind and args.grpo_steps:
        parser.error("--holdout-kind leaves a kind out of the warm-up only: GRPO reads the whole train split")
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    from transformers import AutoTokenizer

    from data_synthesis.hostile_rivals import HostileRivals
    from eval import loaders
    from openrm.dataset import in_both_orders_rows
    from openrm.evidence import lexical_verdict, separates, shown_evidence
    from openrm.tools import ToolBox
    from train.trajectories import GoldStats, gold_records
    from train.verdict_probe import probe_items, verdict_probe

    started = time.perf_counter()
    bf16 = args.bf16 == "true"
    data = args.out / "data"
    if args.dataset:
        dataset = args.dataset
    else:
        from data_synthesis.wiki_dataset import write_dataset

        dataset = data / "dataset"
        built(data, {"n_train": args.n_train, "n_test": args.n_test, "seed": args.seed, "recipe": 2},
              lambda: write_dataset(dataset, args.n_train, args.n_test, args.seed), "the Wikipedia pair dataset",
              marker="built.json")
    index = args.index or packaged_index(Path("runs/wiki-vital"))
    retrievers = {"wiki": index, "arxiv": index}
    settings = judging_settings(CONFIG)
    if args.trace == "restate":  # the second turn copies both answers: up to ~450 tokens at 150 words each
        settings |= {"max_new_tokens": RESTATE_TOKENS,
                     "max_completion_tokens": settings["max_completion_tokens"] + RESTATE_TOKENS}
    train = loaders.load_benchmark("in-domain", dataset, "train").examples
    train = [e for e in train if kind_of(e) != args.holdout_kind and (not args.train_kinds or kind_of(e) in
                                                                     args.train_kinds)
             and (not args.train_lengths or length_of(e) in args.train_lengths)]
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
        gold = GoldStats()

        def warm() -> None:
            sft_dir.mkdir(parents=True, exist_ok=True)
            rivals = HostileRivals(args.rival_share, args.seed)
            records = gold_records(in_both_orders_rows(train, args.seed), toolbox, tokenizer,
                                   settings["max_information_tokens"], settings["prompt_style"], stats=gold,
                                   trace=args.trace, rewrite=rivals)
            (sft_dir / "gold_stats.json").write_text(json.dumps(
                {**gold.summary(), "rivals": dict(rivals.made)}, indent=1) + "\n")
            logger.info("gold trajectories: %s", gold.summary())
            path = sft_dir / "sft_records.jsonl"
            path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8")
            steps = max(1, round(args.sft_epochs * len(records) / args.sft_batch))
            curve = sft_dir / "probe.jsonl"
            curve.unlink(missing_ok=True)
            run_sft(path, base, sft_dir, steps, args.sft_batch, args.sft_lr, args.seed, max_length=1536, bf16=bf16,
                    in_file_order=True, verdict_weight=args.verdict_weight, schedule=args.sft_schedule,
                    callbacks=[verdict_probe(probe, args.probe_every, curve, bf16)] if probe else ())

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
                        **({"rivals": args.rival_share, "rival_kinds": list(RIVAL_KINDS)} if args.rival_share else {})},
              warm, "the SFT warm-up")
    finally:
        toolbox.close()
    judges = args.out / "judges"
    folders = {"zero-shot": judge_folder(Path(base), judges / "zero-shot", settings),
               "warm-up": judge_folder(sft_dir, judges / "sft", settings)}
    if args.grpo_steps:
        folders["after GRPO"] = grpo_judge(args, sft_dir, dataset, data, retrievers, settings, bf16)
    results = {"gold": json.loads((sft_dir / "gold_stats.json").read_text())
               if (sft_dir / "gold_stats.json").exists() else None, "args": vars(args) | {"out": str(args.out)},
               "settings": {k: settings[k] for k in ("topk", "max_information_tokens")}, "rows": {}}
    results["args"]["dataset"] = str(args.dataset or "")
    results["args"]["index"] = str(args.index or "")
    results["warm-up"] = json.loads((sft_dir / "warmup.json").read_text())
    curve = sft_dir / "probe.jsonl"
    results["probe"] = [json.loads(line) for line in curve.read_text().splitlines()] if curve.exists() else []
    saved = args.out / "results.json"
    if saved.exists():  # rows judged by an earlier call on the same warm-up stay in the table
        before = json.loads(saved.read_text(encoding="utf-8"))
        if before.get("warm-up") == results["warm-up"]:
            results["rows"] = {k: v for k, v in before["rows"].items() if k not in args.rows}
    covered = {e["id"]: separates(shown[e["id"]], e) for e in test}
    results["coverage"] = {"all": sum(covered.values()) / len(test), "by_kind": _share_by(test, covered, kind_of),
                           "by_length": _share_by(test, covered, length_of)}
    results["references"] = {"lexical reference": reference_row(test, lambda e: lexical_verdict(shown[e["id"]], e)),
                             "longer answer wins": reference_row(test, longer)}
    for name in args.rows:
        judge = "after GRPO" if name.startswith("after GRPO") else name.split(",")[0]
        if judge not in folders:
            logger.warning("skipping row %r: no %s judge (--grpo-steps 0?)", name, judge)
            continue
        results["rows"][name] = judge_row(name, folders[judge], dataset, test, retrievers, settings, args)
    results["seconds"] = time.perf_counter() - started
    atomic.write_json(args.out / "results.json", results, indent=1)
    atomic.write_text(args.out / "results.md", table(results))
    print(table(results))


def probe_model(model: str, items: list, bf16: bool) -> dict:
    """The teacher-forced verdict probe of one model on `items`."""
    from transformers import AutoModelForCausalLM

    from train.verdict_probe import right_letter_margin, summary

    judge = AutoModelForCausalLM.from_pretrained(resolve(model), dtype="float32")
    return summary(items, right_letter_margin(judge, items, bf16=bf16))


def _share_by(test: list[dict], flags: dict[str, bool], key) -> dict[str, float]:
    groups: dict[str, list[bool]] = {}
    for e in test:
        groups.setdefault(key(e), []).append(flags[e["id"]])
    return {k: sum(v) / len(v) for k, v in sorted(groups.items())}


def judge_folder(model: Path, out: Path, settings: dict) -> Path:
    """`out`: `model`'s files linked (not copied) beside a judge card of `settings`, so eval.run judges every row
    with the same run settings."""
    out.mkdir(parents=True, exist_ok=True)
    for f in model.iterdir():
        if f.is_file() and f.name != "judge_card.json" and not (out / f.name).exists():
            (out / f.name).symlink_to(f.resolve())
    JudgeCard(**settings).write(out)
    return out


def grpo_judge(args, sft_dir: Path, dataset: Path, data: Path, retrievers: dict, settings: dict, bf16: bool) -> Path:
    """GRPO from the warm-up with live search, exported with the table's run settings."""
    from train.judge_export import ExportArguments, export_judge

    grpo_data = Path(dataset).parent  # grpo() reads <data>/dataset
    if Path(dataset).name != "dataset":  # e.g. a build_dataset --out folder: linked as <out>/data/dataset
        grpo_data, link = data, data / "dataset"
        data.mkdir(parents=True, exist_ok=True)
        if link.is_symlink() and link.resolve() != Path(dataset).resolve():
            link.unlink()
        if not link.exists():
            link.symlink_to(Path(dataset).resolve(), target_is_directory=True)
    extra = ["--seed", str(args.seed), "--learning_rate", str(args.grpo_lr), "--bf16", str(bf16).lower(),
             "--max_new_tokens", str(settings["max_new_tokens"]),
             "--max_completion_length", str(settings["max_completion_tokens"]),
             "--trajectory_log", str(args.out / "grpo" / "trajectories.jsonl")]
    if args.both_orders_reward:
        extra += ["--both_orders", "true"]
    if args.rival_share:
        extra += ["--rival_share", str(args.rival_share)]
    run = grpo(sft_dir, grpo_data, retrievers, args.out / "grpo", args.grpo_steps, *extra, config=CONFIG)
    exported = args.out / "judges" / "grpo"
    export_judge(ExportArguments(checkpoint=str(run), out=str(exported), overwrite=True))
    JudgeCard(**{**json.loads((exported / "judge_card.json").read_text()), **settings}).write(exported)
    return exported


def judge_row(name: str, folder: Path, dataset: Path, test: list[dict], retrievers: dict, settings: dict,
              args) -> dict:
    """One judge row: eval.run over the test split (resumable), broken down by kind and length."""
    from eval.breakdown import both_order_accuracy, same_letter_rate
    from eval.evaluation import EvalArguments, evaluate
    from eval.scorecard import markdown

    out = args.out / "eval" / name.replace(", ", "-").replace(" ", "-")
    no_search, retrieved = name.endswith("no search"), name.endswith("retrieve-then-judge")
    r = evaluate(EvalArguments(
        judge=str(folder), benchmark="in-domain", data=str(dataset), split="test", out=str(out), chunk_size=16,
        seed=args.seed, judge_device="cuda" if on_gpu() else "cpu",  # where the warm-up trained (toy.warmup.run_sft)
        limit=args.eval_limit or None, no_tools=no_search,
        retrievers=[] if no_search else [f"{k}={v}" for k, v in retrievers.items()], retrieve_then_judge=retrieved,
        **({"evidence_tokens": int(settings["max_information_tokens"])} if retrieved else {})))
    print(markdown(r))
    verdicts = {v["id"]: v for v in map(json.loads, (out / "verdicts.jsonl").read_text(encoding="utf-8").splitlines())}
    j = r["judging"]
    hits = [float(verdicts.get(e["id"], {}).get("prediction") == e["label"]) for e in test]
    row = {"accuracy": sum(hits) / len(hits), "ci95": bootstrap(hits, args.seed), "n": len(test),
           "ties": sum(verdicts.get(e["id"], {}).get("prediction") == "tie" for e in test) / len(test),
           "same_letter": same_letter_rate(test, verdicts),
           "single_order": (r.get("single_order") or {}).get("accuracy"),
           "unparsed_orders": j["unparsed_orders"] / max(1, 2 * j["judged"]),
           "searches": j["searches_per_judgment"], "seconds_per_pair": j["seconds_per_judgment"],
           "by_kind": both_order_accuracy(test, verdicts, kind_of),
           "by_length": both_order_accuracy(test, verdicts, length_of)}
    logger.info("%s: %s", name, {k: v for k, v in row.items() if not k.startswith("by_")})
    return row


def table(results: dict) -> str:
    rows = {**results["rows"], **results["references"]}
    kinds = sorted({k for r in rows.values() for k in r["by_kind"]})
    lengths = [x for x in ("sentence", "short", "lead") if any(x in r["by_length"] for r in rows.values())]
    lengths += sorted({k for r in rows.values() for k in r["by_length"]} - set(lengths))
    head = ["judge", "both orders (95 % CI)", *kinds, *lengths, "same letter", "ties", "single order",
            "unparsed orders", "searches / pair"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for name, r in rows.items():
        cells = [name, f"{r['accuracy']:.2f} ({r['ci95'][0]:.2f}-{r['ci95'][1]:.2f})"]
        cells += [f"{r['by_kind'][k]['accuracy']:.2f}" if k in r["by_kind"] else "-" for k in kinds]
        cells += [f"{r['by_length'][k]['accuracy']:.2f}" if k in r["by_length"] else "-" for k in lengths]
        judged = "same_letter" in r
        cells += [f"{r['same_letter']:.2f}" if judged else "-", f"{r['ties']:.2f}",
                  "-" if r.get("single_order") is None else f"{r['single_order']:.2f}",
                  f"{r['unparsed_orders']:.2f}" if judged else "-", f"{r['searches'] or 0:.2f}" if judged else "-"]
        lines.append("| " + " | ".join(cells) + " |")
    cov = results["coverage"]
    lines += ["", f"Evidence coverage (the search shows words that separate the answers): {cov['all']:.2f} of "
              f"{next(iter(rows.values()))['n']} test pairs; by kind "
              + ", ".join(f"{k} {v:.2f}" for k, v in cov["by_kind"].items()) + "; by length "
              + ", ".join(f"{k} {v:.2f}" for k, v in cov["by_length"].items()) + "."]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
