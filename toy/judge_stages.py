"""The judge's stages, for the quickstart (toy/quickstart.py) and the judge experiments: bm25 indexes of the toy
corpora, the SFT warm-up on gold trajectories of any pair dataset, GRPO of the judge with live search (and its export
with a table's run settings), judging held-out pairs in both orders (cached under a hash of the weights), and the
table, summary and training curves of a run. Run by toy/quickstart.py, experiments/learning_proof.py and
experiments/real_text_judge.py.
"""

from __future__ import annotations

import hashlib
import json
import logging
from pathlib import Path

from plumbing import atomic
from plumbing.records import STAGE
from retrieval.build_index import build_index
from retrieval.manifest import ManifestError, file_sha256
from retrieval.retriever import load_index
from toy.stages import built, on_gpu, trained

logger = logging.getLogger(__name__)
ROOT = Path(__file__).resolve().parents[1]
GRPO_CONFIG = ROOT / "configs/grpo_openrm/smollm2_cpu.yaml"


def toy_indexes(corpora: Path, out: Path) -> dict[str, Path]:
    """A bm25 index per toy corpus, rebuilt only when its corpus changed."""
    for tsv in sorted(corpora.glob("*.tsv")):
        path, sha = out / tsv.stem, file_sha256(tsv)
        try:
            load_index(path, expect_backend="bm25", expect_corpus_sha256=sha, numba=False)
            logger.info("reusing %s index at %s", tsv.stem, path)
        except ManifestError:
            build_index(tsv, "bm25", path, overwrite=True, progress=False)
            logger.info("built bm25 index of %s at %s", tsv.name, path)
    return {tsv.stem: out / tsv.stem for tsv in sorted(corpora.glob("*.tsv"))}


def config_key(config: Path) -> str:
    """A YAML config's values, hashed: editing a comment does not discard a finished run made from it."""
    import yaml

    values = yaml.safe_load(config.read_text(encoding="utf-8"))
    return hashlib.sha256(json.dumps(values, sort_keys=True, default=str).encode()).hexdigest()


def grpo(model: Path, data: Path, indexes: dict[str, Path], out: Path, steps: int, config: Path = GRPO_CONFIG,
         pairs: dict | None = None, **values) -> Path:
    """GRPO from `model` with `config`; `values` set more of the trainer's fields by name (train/judge_trainer.py's
    dataclasses: `seed=1`, `bf16=True`, ...). A run folder made from another warm-up or other values (or, with
    `pairs`, the record of how its train pairs were chosen, another choice) is discarded; an interrupted one resumes
    from its last checkpoint."""
    from train.judge_trainer import RUN_FILE, configs, train_judge

    if on_gpu():  # the CPU config pins use_cpu
        values = {**values, "use_cpu": False}
    start = {"model": str(model), "warmup": json.loads((model / STAGE).read_text()),
             "config": config_key(config), "values": values, **({"pairs": pairs} if pairs else {})}
    return trained(out, start, steps, RUN_FILE, lambda resume: train_judge(*configs(
        config, model_name_or_path=model, dataset=data / "dataset", output_dir=out, max_steps=steps,
        retrievers=[f"{name}={path}" for name, path in indexes.items()], resume_from_checkpoint=resume, **values)),
        "GRPO of the judge with search")


def wiki_pairs(data: Path, n_train: int, n_test: int, seed: int) -> Path:
    """`<data>/dataset`: clean pairs over the packaged Wikipedia lead sections (`data_synthesis.wiki_dataset`),
    rebuilt only for other sizes, another seed or another recipe."""
    from data_synthesis.wiki_dataset import write_dataset

    dataset = data / "dataset"
    built(data, {"n_train": n_train, "n_test": n_test, "seed": seed, "recipe": 2},
          lambda: write_dataset(dataset, n_train, n_test, seed), "the Wikipedia pair dataset")
    return dataset


def gold_warm_up(train: list[dict], toolbox, tokenizer, settings: dict, base: str, out: Path, *, trace: str,
                 rival_share: float, seed: int, epochs: float, batch: int, learning_rate: float, bf16: bool,
                 rival_kinds=None, verdict_weight: float, schedule: str, probe: list, probe_every: int) -> None:
    """The SFT warm-up into `out` on gold trajectories of `train` (`train.trajectories.gold_records` with `trace`),
    both orders of a pair side by side so that each step holds both, a `rival_share` of the wrong answers made hostile
    (`data_synthesis.hostile_rivals`); `epochs` over them, the verdict letter's loss weighed `verdict_weight` times.
    Writes `gold_stats.json`, `sft_records.jsonl` and, with `probe` items, the learning curve `probe.jsonl`: the
    teacher-forced verdict of the probe pairs every `probe_every` steps (`train.verdict_probe`)."""
    from data_synthesis.hostile_rivals import HostileRivals
    from openrm.dataset import in_both_orders_rows
    from toy.warmup import run_sft
    from train.trajectories import GoldStats, gold_records
    from train.verdict_probe import verdict_probe

    out.mkdir(parents=True, exist_ok=True)
    gold, rivals = GoldStats(), HostileRivals(rival_share, seed, **({"kinds": rival_kinds} if rival_kinds else {}))
    records = gold_records(in_both_orders_rows(train, seed), toolbox, tokenizer, settings["max_information_tokens"],
                           settings["prompt_style"], stats=gold, trace=trace, rewrite=rivals)
    (out / "gold_stats.json").write_text(json.dumps({**gold.summary(), "rivals": dict(rivals.made)}, indent=1) + "\n")
    logger.info("gold trajectories: %s", gold.summary())
    path = out / "sft_records.jsonl"
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8")
    steps = max(1, round(epochs * len(records) / batch))
    curve = out / "probe.jsonl"
    curve.unlink(missing_ok=True)
    run_sft(path, base, out, steps, batch, learning_rate, seed, max_length=1536, bf16=bf16, in_file_order=True,
            verdict_weight=verdict_weight, schedule=schedule,
            callbacks=[verdict_probe(probe, probe_every, curve, bf16)] if probe else ())


def judge_folder(model: Path, out: Path, settings: dict) -> Path:
    """`out`: `model`'s files linked (not copied) beside a judge card of `settings`, so eval.run judges every row
    with the same run settings."""
    from openrm.card import JudgeCard

    out.mkdir(parents=True, exist_ok=True)
    for f in model.iterdir():
        link = out / f.name
        if link.is_symlink() and not link.exists():  # left from an earlier run whose file has since gone
            link.unlink()
        if f.is_file() and f.name != "judge_card.json" and not link.exists():
            link.symlink_to(f.resolve())
    JudgeCard(**settings).write(out)
    return out


def exported_grpo(warm: Path, dataset: Path, data: Path, indexes: dict, settings: dict, out: Path, steps: int, *,
                  seed: int, learning_rate: float, bf16: bool, both_orders: bool, rival_share: float,
                  config: Path, order_groups: bool = False, rival_kinds=None) -> Path:
    """GRPO from the warm-up `warm` with live search (run folder `out/grpo`, its trajectories logged there), exported
    to `out/judges/grpo` with the table's run `settings`. `both_orders`: pay a verdict only as often as the pair's
    other order is right; `order_groups`: each group one pair in both orders (train/order_groups.py); `rival_share`:
    hostile rivals in its pairs, of `rival_kinds` (default: every kind). `grpo` reads `<data>/dataset`: a `dataset`
    folder of another name is linked there."""
    from data_synthesis.hostile_rivals import KINDS
    from openrm.card import JudgeCard
    from train.judge_export import ExportArguments, export_judge

    grpo_data = Path(dataset).parent
    if Path(dataset).name != "dataset":  # e.g. a build_dataset --out folder: linked as <out>/data/dataset
        grpo_data, link = data, data / "dataset"
        data.mkdir(parents=True, exist_ok=True)
        if link.is_symlink() and link.resolve() != Path(dataset).resolve():
            link.unlink()
        if not link.exists():
            link.symlink_to(Path(dataset).resolve(), target_is_directory=True)
    values = {"seed": seed, "learning_rate": learning_rate, "bf16": bf16, "max_new_tokens": settings["max_new_tokens"],
              "max_completion_length": settings["max_completion_tokens"],
              "trajectory_log": out / "grpo" / "trajectories.jsonl"}
    if both_orders:
        values["both_orders"] = True
    if rival_share:
        values["rival_share"] = rival_share
    if order_groups:
        values["order_groups"] = True
    if rival_share and rival_kinds and tuple(rival_kinds) != KINDS:
        values["rival_kinds"] = list(rival_kinds)
    chosen = grpo_data / STAGE if (grpo_data / "unsettled.json").exists() else None  # pairs `unsettled_pairs` chose
    run = grpo(warm, grpo_data, indexes, out / "grpo", steps, config,
               **({"pairs": json.loads(chosen.read_text())} if chosen else {}), **values)
    exported = out / "judges" / "grpo"
    export_judge(ExportArguments(checkpoint=str(run), out=str(exported), overwrite=True))
    JudgeCard(**{**json.loads((exported / "judge_card.json").read_text()), **settings}).write(exported)
    return exported


def unsettled_pairs(warm: Path, dataset: Path, out: Path, toolbox, tokenizer, settings: dict, *, trace: str,
                    margin: float, limit: int, seed: int, bf16: bool) -> Path:
    """The train pairs the warm-up `warm` has not settled, as the pair dataset `out/dataset` (train: those pairs;
    test: `dataset`'s own) for GRPO; cached under `out`. GRPO learns only from a group whose completions score
    differently, and a warm-up that gives a pair's right letter with near certainty in both orders samples the same
    verdict in every completion of the pair's group. So up to `limit` train pairs (a seeded sample) are read
    teacher-forced along their gold trajectories (`train.verdict_probe`), and a pair is kept when, in either order,
    the right letter's log-odds over the wrong one are below `margin` (a wrong pick included). Pairs without a gold
    trajectory (the search shows nothing that tells the answers apart) are not scored and not kept. The counts go
    to `out/unsettled.json`."""
    import math
    import random

    from datasets import DatasetDict, load_from_disk
    from transformers import AutoModelForCausalLM

    from eval import loaders
    from openrm.dataset import in_both_orders_rows
    from train.verdict_probe import probe_items, right_letter_margin

    def build() -> None:
        train = list(loaders.load_benchmark("in-domain", dataset, "train").examples)
        sample = random.Random(f"unsettled:{seed}").sample(train, min(limit, len(train)))
        items = probe_items(in_both_orders_rows(sample, seed), toolbox, tokenizer, settings["max_information_tokens"],
                            settings["prompt_style"], trace=trace)
        margins = right_letter_margin(AutoModelForCausalLM.from_pretrained(warm, dtype="float32"), items, bf16=bf16)
        lowest: dict[str, float] = {}
        for item, value in zip(items, margins, strict=True):
            lowest[item.pair_id] = min(value, lowest.get(item.pair_id, math.inf))
        keep = {p for p, value in lowest.items() if value < margin}
        if not keep:
            raise ValueError(f"{warm}: every one of the {len(lowest)} scored train pairs is settled (log-odds >= "
                             f"{margin} in both orders): GRPO would have no group to learn from; raise the margin")
        pairs = load_from_disk(str(dataset))
        DatasetDict({"train": pairs["train"].filter(lambda r: str(r["id"]) in keep), "test": pairs["test"]}
                    ).save_to_disk(str(out / "dataset"))
        atomic.write_json(out / "unsettled.json", {
            "sampled": len(sample), "scored": len(lowest), "kept": len(keep), "margin": margin,
            "wrong_in_an_order": sum(value <= 0 for value in lowest.values()),
            "lowest_log_odds_quartiles": [round(q, 2) for q in _quartiles(sorted(lowest.values()))]}, indent=1)

    built(out, {"warm": str(Path(warm).resolve()), "dataset": str(Path(dataset).resolve()), "trace": trace,
                "margin": margin, "limit": limit, "seed": seed, "bf16": bf16}, build,
          "the train pairs the warm-up has not settled")
    logger.info("GRPO pairs the warm-up has not settled: %s", (out / "unsettled.json").read_text().replace("\n", " "))
    return out / "dataset"


def _quartiles(values: list[float]) -> list[float]:
    return [values[min(len(values) - 1, int(q * len(values)))] for q in (0.25, 0.5, 0.75)] if values else []


def judging_settings(config: Path = GRPO_CONFIG) -> dict:
    """The judge's run settings as `config` trains it, so every row of the table is judged alike."""
    import yaml

    from openrm.card import RunSettings
    from plumbing.arguments import parse_pairs

    values = yaml.safe_load(config.read_text(encoding="utf-8"))
    names = {f for f in RunSettings.__dataclass_fields__ if f in values and f != "tools"}
    return {**{k: values[k] for k in names}, "tools": parse_pairs(values["tools"], "tools"),
            "max_completion_tokens": values["max_completion_length"], "temperature": 0.0}


def evaluate(judge_dir: Path, indexes: dict[str, Path] | None, examples: list[dict], **overrides) -> dict:
    """Judge `examples` in both orders (greedy; `overrides` of the run settings, e.g. temperature) with search, or
    without it when `indexes` is None (the no-tool prompt)."""
    from openrm.judge import Judge

    retrievers = {k: str(v) for k, v in indexes.items()} if indexes else None
    with Judge.from_pretrained(judge_dir, retrievers=retrievers, batch_size=32, device="cuda" if on_gpu() else "cpu",
                               **{**judging_settings(), **overrides}) as judge:
        verdicts = judge.compare_batch([(e["question"], e["answer_a"], e["answer_b"]) for e in examples],
                                       progress=True)
    n = len(verdicts)
    runs = [(r, e) for v, e in zip(verdicts, examples, strict=True) for r in v.orders]
    calls = [(call.tool, e["gold_tool"]) for r, e in runs for call in r.searches]
    # the subject's first word, case-insensitively: a pretrained judge may lowercase an acronym, and bm25 still
    # finds the passage
    subject = [e["meta"]["subject"].split()[0].lower() in call.query.lower() for r, e in runs for call in r.searches]
    return {"accuracy": sum(v.winner == e["label"] for v, e in zip(verdicts, examples, strict=True)) / n,
            "consistency": sum(v.consistent for v in verdicts) / n,
            "ties": sum(v.winner == "tie" for v in verdicts) / n,
            "parse_failures": sum(r.answer is None for r, _ in runs) / len(runs),
            "malformed": sum(not r.well_formed for r, _ in runs) / len(runs),
            "correct_tool_share": sum(tool == gold for tool, gold in calls) / len(calls) if calls else None,
            "searches_per_judgment": len(calls) / n,  # both orders, as eval.run counts
            "queries_with_subject": sum(subject) / len(subject) if subject else None,
            "model_tokens_per_order": sum(sum(r.trajectory.env_mask) for r, _ in runs) / len(runs)}


def measured(model: Path, indexes: dict[str, Path] | None, examples: list[dict], cache: Path | None = None,
             **overrides) -> dict:
    """`evaluate`, remembered in `cache` (default `<model>/judged.json`) under a hash of the weights, the pairs and
    the settings, so a rerun that reuses a stage also reuses its numbers."""
    what = {"weights": file_sha256(model / "model.safetensors"), "search": bool(indexes),
            "pairs": [e["id"] for e in examples], "settings": judging_settings(), **overrides}
    key = hashlib.sha256(json.dumps(what, sort_keys=True).encode()).hexdigest()
    cache = cache or model / "judged.json"
    try:
        saved = json.loads(cache.read_text()) if cache.exists() else {}
    except ValueError:  # a cache cut short by an interrupted write: judge again
        saved = {}
    if key not in saved:
        saved[key] = evaluate(model, indexes, examples, **overrides)
        atomic.write_json(cache, saved, indent=None)
    return dict(saved[key])


def judged(model: Path, indexes: dict[str, Path], test: list[dict], other: tuple | None, sampled: bool,
           **judging) -> dict:
    """`measured` with search, plus searches per order; with `sampled`, the right-corpus share and searches at
    temperature 1 (the policy GRPO trains, not only its mode); with `other` = (indexes, pairs), the accuracy on
    another toy world. `judging`: run-setting overrides for every judgment (e.g. the dtype)."""
    metrics = measured(model, indexes, test, **judging)
    metrics["searches_per_order"] = metrics["searches_per_judgment"] / 2
    if sampled:
        at_t1 = measured(model, indexes, test, temperature=1.0, seed=0, **judging)
        metrics["sampled_tool_share"] = at_t1["correct_tool_share"]
        metrics["sampled_searches_per_order"] = at_t1["searches_per_judgment"] / 2
    if other:
        metrics["other_world_accuracy"] = measured(model, other[0], other[1], **judging)["accuracy"]
    return metrics


def plot_curves(run_dir: Path, out: Path) -> Path | None:
    state = run_dir / "trainer_state.json"
    if not state.exists():
        return None
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    logs = [h for h in json.loads(state.read_text())["log_history"] if "openrm/em" in h]
    keys = [("reward", "reward"), ("openrm/em", "R_EM"), ("openrm/tool", "R_tool"),
            ("openrm/calls_per_trajectory", "searches / trajectory"), ("completions/mean_length", "length")]
    fig, axes = plt.subplots(1, len(keys), figsize=(4 * len(keys), 3))
    for ax, (key, title) in zip(axes, keys, strict=True):
        ax.plot([h["step"] for h in logs], [h.get(key) for h in logs], marker="o")
        ax.set_title(title)
        ax.set_xlabel("step")
    fig.tight_layout()
    fig.savefig(out)
    plt.close(fig)
    return out


def results_table(table: dict) -> list[str]:
    """The table as markdown lines ("name in query": searches whose query names the pair's subject)."""
    lines = ["| judge | accuracy | parse failures | right corpus | searches / judgment | consistency | ties | "
             "name in query |", "|---|---|---|---|---|---|---|---|"]
    for name, m in table.items():
        tool, named = (("-" if m[k] is None else f"{m[k]:.3f}") for k in ("correct_tool_share", "queries_with_subject"))
        lines.append(f"| {name} | {m['accuracy']:.3f} | {m['parse_failures']:.3f} | {tool} | "
                     f"{m['searches_per_judgment']:.2f} | {m['consistency']:.3f} | {m['ties']:.3f} | {named} |")
    return lines


GOALS = {"accuracy": 0.90, "gain": 0.10, "no_search": 0.60, "parse_failures": 0.02}


def summary(table: dict) -> str:
    """What the table shows, in words that follow from its numbers, each goal marked met or NOT met."""
    zero, warm, after, blind = (table[k] for k in ("zero-shot", "SFT warm-up", "after GRPO", "after GRPO, no search"))

    def mark(ok: bool) -> str:
        return "met" if ok else "NOT met"

    def share(value: float | None) -> str:
        return "-" if value is None else f"{value:.2f}"

    gain = after["accuracy"] - warm["accuracy"]
    lines = [
        f"Zero-shot, the packaged model ignores the protocol: {zero['parse_failures']:.0%} of its orders end without "
        f"a parseable answer (accuracy {zero['accuracy']:.2f}).",
        f"After the warm-up {warm['parse_failures']:.1%} of its orders fail to parse; it searches "
        f"{warm['searches_per_judgment']:.2f} times a judgment (both orders), {share(warm['correct_tool_share'])} of "
        f"its searches on the right corpus, accuracy {warm['accuracy']:.2f}.",
        f"GRPO moved searches per judgment {warm['searches_per_judgment']:.2f} → {after['searches_per_judgment']:.2f}, "
        f"the right-corpus share {share(warm['correct_tool_share'])} → {share(after['correct_tool_share'])} and "
        f"accuracy {warm['accuracy']:.2f} → {after['accuracy']:.2f} "
        f"({gain:+.2f}; goal >= +{GOALS['gain']:.2f}: {mark(gain >= GOALS['gain'])}; goal >= {GOALS['accuracy']:.2f}: "
        f"{mark(after['accuracy'] >= GOALS['accuracy'])}), with {after['parse_failures']:.1%} parse failures "
        f"(goal <= {GOALS['parse_failures']:.0%}: {mark(after['parse_failures'] <= GOALS['parse_failures'])}).",
        f"Without search the same judge scores {blind['accuracy']:.2f} (goal <= {GOALS['no_search']:.2f}: "
        f"{mark(blind['accuracy'] <= GOALS['no_search'])}; a coin-flipping judge scores 0.25, since a pair counts "
        f"only when both orders are right), so "
        + ("its verdicts come from the evidence it finds." if after["accuracy"] - blind["accuracy"] >= 0.1 else
           "search does not make it better: it does not use the evidence.")]
    return "\n".join(lines)
