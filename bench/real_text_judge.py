"""The SmolLM2 judge trained on real text: pairs over real Wikipedia lead sections, SFT warm-up on gold
trajectories, GRPO with live search over the real Wikipedia index, then the in-domain table on held-out pairs.

    .venv/bin/python bench/real_text_judge.py [--out runs/real-judge] [--dataset DIR] [--seed 0]

Stages (each cached under --out and reused when its inputs match; GRPO resumes from its last checkpoint):
1. the pair dataset: `data_synthesis.wiki_pairs` (an article's lead section against the same text with its numbers
   changed, or against another article of its topic; test articles never in train), or --dataset (any
   `data_synthesis.build_dataset` output, e.g. pairs a served model wrote);
2. the bm25 index of the packaged lead sections (`retrieval.wikipedia.packaged_index`);
3. gold trajectories for the train split (`train.gold_trajectories`: search the question, copy the evidence only the
   right answer shares) and the SFT warm-up on them;
4. GRPO (`configs/grpo_openrm/smollm2_wiki_cpu.yaml`, composite reward) and export;
5. `eval.run --benchmark in-domain` on the test split, both orders (a pair is right when both orders pick the
   right answer; the orders disagreeing is a tie, counted wrong), each row with its 95 % bootstrap interval, and
   single-order accuracy (each order scored alone):
   zero-shot, SFT warm-up, after GRPO with search, the same judge without tools, and retrieve-then-judge (top
   passages of the question put in the prompt); plus the length baseline (the longer answer wins) and the share of
   right verdicts that went to the shorter answer.

Every row is judged with the config's run settings (prompt style, budgets, top-1 evidence). Results go to
`<out>/results.md` and `<out>/results.json`.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import logging
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from openrm.card import JudgeCard  # noqa: E402
from openrm.models import resolve  # noqa: E402
from retrieval.wikipedia import packaged_index  # noqa: E402
from toy.quickstart import grpo, judging_settings  # noqa: E402
from toy.stages import built  # noqa: E402
from toy.warmup import run_sft  # noqa: E402

logger = logging.getLogger("real_text_judge")
CONFIG = ROOT / "configs/grpo_openrm/smollm2_wiki_cpu.yaml"


def longer(e: dict) -> str | None:
    a, b = len(e["answer_a"].split()), len(e["answer_b"].split())
    return None if a == b else ("A" if a > b else "B")


def length_rows(examples: list[dict], verdicts: dict[str, dict]) -> dict:
    """Length baseline accuracy, and how the judge's right verdicts split between the longer and shorter answer."""
    baseline = sum(longer(e) == e["label"] for e in examples) / len(examples)
    right = [e for e in examples if verdicts.get(e["id"], {}).get("prediction") == e["label"] and longer(e)]
    shorter = sum(longer(e) != e["label"] for e in right)
    return {"length_baseline": baseline, "right_verdicts": len(right),
            "right_verdicts_for_the_shorter": shorter / len(right) if right else None,
            "shorter_is_right_share": sum(longer(e) not in (None, e["label"]) for e in examples) / len(examples)}


def bootstrap(values: list[float], seed: int = 0, resamples: int = 1000) -> list[float]:
    """95 % percentile interval of the mean."""
    import numpy as np

    x = np.asarray(values, dtype=float)
    means = x[np.random.default_rng(seed).integers(0, len(x), size=(resamples, len(x)))].mean(axis=1)
    return [float(np.quantile(means, 0.025)), float(np.quantile(means, 0.975))]


def per_kind(examples: list[dict], verdicts: dict[str, dict]) -> dict[str, float]:
    kinds: dict[str, list[bool]] = {}
    for e in examples:
        kinds.setdefault(e["meta"]["source"], []).append(verdicts.get(e["id"], {}).get("prediction") == e["label"])
    return {k: sum(v) / len(v) for k, v in sorted(kinds.items())}


def judge_folder(model: Path, out: Path, settings: dict) -> Path:
    """`out`: `model`'s files linked (not copied) beside a judge card of `settings`, so eval.run judges every row
    with the same run settings."""
    out.mkdir(parents=True, exist_ok=True)
    for f in model.iterdir():
        if f.is_file() and f.name != "judge_card.json" and not (out / f.name).exists():
            (out / f.name).symlink_to(f.resolve())
    JudgeCard(**settings).write(out)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("runs/real-judge"))
    parser.add_argument("--dataset", type=Path, default=None, help="a pair dataset folder (default: wiki_pairs)")
    parser.add_argument("--n-train", type=int, default=600)
    parser.add_argument("--n-test", type=int, default=200)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--model", default="smollm2-135m-instruct")
    parser.add_argument("--index", type=Path, default=None, help="default: bm25 over the packaged lead sections")
    parser.add_argument("--sft-steps", type=int, default=40)
    parser.add_argument("--sft-batch", type=int, default=8)
    parser.add_argument("--sft-lr", type=float, default=1e-4)
    parser.add_argument("--grpo-steps", type=int, default=20)
    parser.add_argument("--grpo-lr", type=float, default=1e-5)
    parser.add_argument("--eval-limit", type=int, default=0, help="judge only the first N test pairs (0: all)")
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    from eval import loaders
    from eval.run import main as eval_main
    from train import export_judge
    from train.gold_trajectories import GoldStats, gold_records

    started = time.perf_counter()
    data = args.out / "data"
    if args.dataset:
        dataset = args.dataset
    else:
        from data_synthesis.wiki_pairs import write_dataset

        dataset = data / "dataset"
        built(data, {"n_train": args.n_train, "n_test": args.n_test, "seed": args.seed},
              lambda: write_dataset(dataset, args.n_train, args.n_test, args.seed), "the Wikipedia pair dataset",
              marker="built.json")
    index = args.index or packaged_index(Path("runs/wiki-vital"))
    retrievers = {"wiki": index, "arxiv": index}
    settings = judging_settings(CONFIG)
    train = loaders.load_benchmark("in-domain", dataset, "train").examples
    test = loaders.load_benchmark("in-domain", dataset, "test", limit=args.eval_limit or None).examples
    base = resolve(args.model)
    sft_dir = args.out / "judge-sft"
    gold = GoldStats()

    def warm() -> None:
        from transformers import AutoTokenizer

        from openrm.tools import ToolBox

        sft_dir.mkdir(parents=True, exist_ok=True)
        toolbox = ToolBox.from_locations({k: str(v) for k, v in retrievers.items()},
                                         JudgeCard(**settings).tool_specs(), topk=settings["topk"])
        try:
            records = gold_records(train, toolbox, AutoTokenizer.from_pretrained(base),
                                   settings["max_information_tokens"], settings["prompt_style"], stats=gold)
        finally:
            toolbox.close()
        (sft_dir / "gold_stats.json").write_text(json.dumps(gold.summary(), indent=1) + "\n")
        logger.info("gold trajectories: %s", gold.summary())
        path = sft_dir / "sft_records.jsonl"
        path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8")
        run_sft(path, base, sft_dir, args.sft_steps, args.sft_batch, args.sft_lr, args.seed, max_length=1024)

    # the data files only: a trainer leaves cache-*.arrow files beside them
    data_sha = hashlib.sha256(b"".join(p.read_bytes() for p in sorted(Path(dataset).rglob("data-*.arrow")))).hexdigest()
    gold_settings = {k: settings[k] for k in ("tools", "topk", "prompt_style", "max_information_tokens")}
    built(sft_dir, {"base": base, "data": data_sha, "steps": args.sft_steps, "batch": args.sft_batch,
                    "lr": args.sft_lr, "seed": args.seed, "gold": gold_settings}, warm, "the SFT warm-up")
    grpo_data = Path(dataset).parent  # grpo() reads <data>/dataset
    if Path(dataset).name != "dataset":  # e.g. a build_dataset --out folder: linked as <out>/data/dataset
        grpo_data, link = data, data / "dataset"
        data.mkdir(parents=True, exist_ok=True)
        if link.is_symlink() and link.resolve() != Path(dataset).resolve():
            link.unlink()
        if not link.exists():
            link.symlink_to(Path(dataset).resolve(), target_is_directory=True)
    run = grpo(sft_dir, grpo_data, retrievers, args.out / "grpo", args.grpo_steps, "--seed", str(args.seed),
               "--learning_rate", str(args.grpo_lr), "--trajectory_log", str(args.out / "grpo" / "trajectories.jsonl"),
               config=CONFIG)
    judges = args.out / "judges"
    exported = judges / "grpo"
    export_judge.main(*export_judge.parse(["--checkpoint", str(run), "--out", str(exported), "--overwrite"]))
    JudgeCard(**{**json.loads((exported / "judge_card.json").read_text()), **settings}).write(exported)
    folders = {"zero-shot": judge_folder(Path(base), judges / "zero-shot", settings),
               "SFT warm-up": judge_folder(sft_dir, judges / "sft", settings), "after GRPO": exported}
    rows = [("zero-shot", "zero-shot", "tools"), ("SFT warm-up", "SFT warm-up", "tools"),
            ("after GRPO", "after GRPO", "tools"), ("after GRPO, no search", "after GRPO", "no-tools"),
            ("after GRPO, retrieve-then-judge", "after GRPO", "retrieve-then-judge")]
    results = {"gold": json.loads((sft_dir / "gold_stats.json").read_text()) if (sft_dir / "gold_stats.json").exists()
               else None, "rows": {}}
    for name, judge, mode in rows:
        out = args.out / "eval" / name.replace(", ", "-").replace(" ", "-")
        argv = ["--judge", str(folders[judge]), "--benchmark", "in-domain", "--data", str(dataset), "--split", "test",
                "--out", str(out), "--chunk_size", "16", "--seed", str(args.seed)]
        if args.eval_limit:
            argv += ["--limit", str(args.eval_limit)]
        if mode == "no-tools":
            argv += ["--no_tools", "true"]
        else:
            argv += ["--retrievers", *[f"{k}={v}" for k, v in retrievers.items()]]
        if mode == "retrieve-then-judge":
            argv += ["--retrieve_then_judge", "true", "--evidence_tokens", str(settings["max_information_tokens"])]
        r = eval_main(argv)
        lines = (out / "verdicts.jsonl").read_text(encoding="utf-8").splitlines()
        verdicts = {v["id"]: v for v in map(json.loads, lines)}
        j = r["judging"]
        strict = [float(verdicts.get(e["id"], {}).get("prediction") == e["label"]) for e in test]
        single = r.get("single_order") or {}
        results["rows"][name] = {"accuracy": sum(strict) / len(strict), "ci95": bootstrap(strict, args.seed),
                                 "accuracy_ties_half": r["accuracy"], "ties": sum(
                                     verdicts.get(e["id"], {}).get("prediction") == "tie" for e in test) / len(test),
                                 "single_order": single.get("accuracy"), "single_order_ci95": single.get("ci95"),
                                 "n": r["counts"]["examples"],
                                 "unparsed_orders": j["unparsed_orders"] / max(1, 2 * j["judged"]),
                                 "consistency": j["consistency"], "searches": j["searches_per_judgment"],
                                 "seconds_per_pair": j["seconds_per_judgment"], "per_kind": per_kind(test, verdicts),
                                 **length_rows(test, verdicts)}
        logger.info("%s: %s", name, results["rows"][name])
    results["seconds"] = time.perf_counter() - started
    (args.out / "results.json").write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")
    (args.out / "results.md").write_text(table(results), encoding="utf-8")
    print(table(results))


def table(results: dict) -> str:
    rows = results["rows"]
    kinds = sorted({k for r in rows.values() for k in r["per_kind"]})
    first = next(iter(rows.values()))
    lines = ["| judge | accuracy, both orders (95 % CI) | " + " | ".join(k.split("/")[-1] for k in kinds)
             + " | ties | single order (95 % CI) | unparsed orders | searches / pair "
             "| right verdicts for the shorter answer |",
             "|---|---|" + "---|" * len(kinds) + "---|---|---|---|---|"]
    for name, r in rows.items():
        ci = f" ({r['ci95'][0]:.2f}-{r['ci95'][1]:.2f})" if r.get("ci95") else ""
        share = r["right_verdicts_for_the_shorter"]
        single = "-" if r.get("single_order") is None else (
            f"{r['single_order']:.2f} ({r['single_order_ci95'][0]:.2f}-{r['single_order_ci95'][1]:.2f})")
        by_kind = " | ".join(f"{r['per_kind'].get(k, 0):.2f}" for k in kinds)
        shorter = "-" if share is None else f"{share:.2f}"
        lines.append(f"| {name} | {r['accuracy']:.2f}{ci} | {by_kind} | {r['ties']:.2f} | {single} | "
                     f"{r['unparsed_orders']:.2f} | {r['searches'] or 0:.2f} | {shorter} |")
    lines.append(f"| longer answer wins | {first['length_baseline']:.2f} | " + " | ".join("-" for _ in kinds)
                 + " | - | - | - | - | - |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
