"""The main job on the embedded default, end to end on a laptop CPU, offline: toy world → bm25 indexes → the
packaged SmolLM2-135M-Instruct → zero-shot judging → SFT warm-up on gold trajectories, most of which answer without
searching → GRPO with live search → export → both-order judging of held-out pairs → a table and the training curves.

    make quickstart                       # = python -m toy.quickstart --out runs/quickstart
    python -m toy.quickstart --config configs/quickstart/smollm2.yaml

The toy world's facts are fictional, so a judge can only decide its pairs by searching. The warm-up teaches the
protocol, the right corpus and the copy, but searches in only 30 % of its trajectories and answers at once, a guess,
in the rest, so its greedy judge does not search; GRPO (configs/grpo_openrm/smollm2_cpu.yaml, reward `composite`)
pays for the right verdict and for searching the right corpus, and the table shows what it moved. A quarter of the
training pairs (warm-up and GRPO) set the right answer against a hedge naming both values, so the judge does not
pay a policy for hedging. A rerun reuses every finished stage and resumes an interrupted GRPO run.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from dataclasses import dataclass, field
from pathlib import Path

from plumbing import atomic
from retrieval.build_index import build_index
from retrieval.manifest import ManifestError, file_sha256
from retrieval.retriever import load_index
from toy.stages import on_gpu, trained
from toy.warmup import WarmupPlan, warm_up
from toy.world import DOMAINS, ToyWorld, WorldSize, write_dataset

logger = logging.getLogger("openrm.quickstart")
ROOT = Path(__file__).resolve().parents[1]
GRPO_CONFIG = ROOT / "configs/grpo_openrm/smollm2_cpu.yaml"
STAGES = 8


def stage(n: int, message: str, *args) -> None:
    logger.info(f"[{n}/{STAGES}] {message}", *args)


@dataclass
class QuickstartArguments:
    out: str = field(default="runs/quickstart", metadata={"help": "Folder for every artefact of the run."})
    seed: int = field(default=0, metadata={"help": "Seed of the toy world, the warm-up and GRPO."})
    model: str = field(default="smollm2-135m-instruct", metadata={
        "help": "The judge's base model: a packaged model's short name (python -m openrm.models list) or a folder."})
    domains: list[str] = field(default_factory=lambda: list(DOMAINS), metadata={
        "help": "Toy domains of the pairs (WIKI is the right tool for wiki and medical, ARXIV for science)."})
    n_train: int = field(default=2000, metadata={"help": "Training judge pairs (short style) to synthesise."})
    n_test: int = field(default=200, metadata={"help": "Test judge pairs (about documents no train pair uses)."})
    n_eval: int = field(default=100, metadata={"help": "Test pairs judged in both orders for the table."})
    sft_steps: int = field(default=40, metadata={"help": "SFT warm-up steps."})
    sft_batch: int = field(default=8, metadata={"help": "Gold trajectories per warm-up step (each drawn afresh)."})
    sft_learning_rate: float = field(default=1e-4, metadata={"help": "Peak warm-up learning rate (cosine)."})
    search_share: float = field(default=0.3, metadata={
        "help": "Share of the warm-up's trajectories that search (exactly, per kind of fact); the rest answer at "
                "once. Below 0.5 the warmed-up judge's greedy choice is not to search, which GRPO's reward is left "
                "to teach; 1: always search (a warm-up that already searches leaves GRPO little to do)."})
    random_tool: bool = field(default=False, metadata={
        "help": "Warm up on trajectories whose tool carries no information (each tool equally often per kind of "
                "fact), leaving the tool choice to GRPO; false: the gold tool. (On SmolLM2, 30 GRPO steps teach "
                "the tool choice on one seed in three: bench/RESULTS.md, Stage A.)"})
    hedge_share: float = field(default=0.25, metadata={
        "help": "Share of the training pairs (warm-up and GRPO) whose wrong answer is a hedge naming both values, "
                "so the judge learns that naming every value does not win (bench/hacking_audit.py measures it; "
                "0: none)."})
    hedge_wordings: str = field(default="wide", metadata={
        "help": "Which hedges the training pairs draw from (toy.world.HEDGE_WORDINGS): 'wide' (18 wordings, the "
                "whole wrong answer beside the whole right one among them) or 'six' (bare values and short "
                "asides only; its judge ties against a hedge worded otherwise: bench/RESULTS.md).",
        "choices": ["six", "wide"]})
    grpo_steps: int = field(default=30, metadata={"help": "GRPO steps (4 prompts x 4 completions each)."})
    grpo_learning_rate: float = field(default=1e-5, metadata={"help": "GRPO learning rate (constant)."})
    bf16: bool = field(default=False, metadata={
        "help": "bfloat16 where this CPU (or a GPU) has it: the warm-up's and GRPO's forward under bf16 autocast "
                "(float32 weights and optimizer), judging with bf16 weights. false: float32 throughout."})
    threads: int = field(default=0, metadata={
        "help": "torch threads (0: one per core). Two torch jobs on the same cores slow each other 10x: run one."})

    def __post_init__(self) -> None:
        if min(self.n_train, self.n_test, self.sft_steps, self.sft_batch, self.grpo_steps, self.n_eval) < 1:
            raise ValueError("n_train, n_test, sft_steps, sft_batch, grpo_steps and n_eval must be >= 1")
        if self.n_eval > self.n_test:
            raise ValueError(f"n_eval ({self.n_eval}) cannot exceed n_test ({self.n_test})")
        if not self.domains or set(self.domains) - set(DOMAINS):
            raise ValueError(f"domains must be a non-empty subset of {DOMAINS}, got {self.domains}")
        if not 0.0 < self.search_share <= 1.0:
            raise ValueError(f"search_share must be in (0, 1], got {self.search_share}")
        if not 0.0 <= self.hedge_share <= 1.0:
            raise ValueError(f"hedge_share must be in [0, 1], got {self.hedge_share}")
        if self.threads < 0:
            raise ValueError(f"threads must be >= 0, got {self.threads}")

    def warmup_plan(self) -> WarmupPlan:
        return WarmupPlan(steps=self.sft_steps, batch=self.sft_batch, learning_rate=self.sft_learning_rate,
                          random_tool=self.random_tool, search_share=self.search_share, hedge_share=self.hedge_share,
                          hedge_wordings=self.hedge_wordings, domains=tuple(self.domains), seed=self.seed,
                          bf16=self.bf16)


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


def grpo(model: Path, data: Path, indexes: dict[str, Path], out: Path, steps: int, *extra: str,
         config: Path = GRPO_CONFIG) -> Path:
    """GRPO from `model` with `config`; `extra` are more command-line overrides. A run folder made from another
    warm-up or other overrides is discarded; an interrupted one resumes from its last checkpoint."""
    from train import grpo_openrm

    if on_gpu():  # the CPU config pins use_cpu
        extra = (*extra, "--use_cpu", "false")
    start = {"model": str(model), "warmup": json.loads((model / "warmup.json").read_text()),
             "config": hashlib.sha256(config.read_bytes()).hexdigest(), "extra": list(extra)}
    return trained(out, start, steps, grpo_openrm.RUN_FILE, lambda resume: grpo_openrm.main(*grpo_openrm.parse([
        "--config", str(config), "--model_name_or_path", str(model), "--dataset", str(data / "dataset"),
        "--output_dir", str(out), "--max_steps", str(steps),
        "--retrievers", *[f"{name}={path}" for name, path in indexes.items()], *extra, *resume])),
        "GRPO of the judge with search")


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


def main(args: QuickstartArguments) -> dict:
    from openrm.models import resolve

    if args.threads:
        import torch

        torch.set_num_threads(args.threads)
    out = Path(args.out)
    world = ToyWorld(args.seed, WorldSize())
    stage(1, "toy world: %d documents; %d/%d short judge pairs (%s) in %s", len(world.documents), args.n_train,
          args.n_test, "+".join(args.domains), out / "data")
    data = write_dataset(world, out / "data", args.n_train, args.n_test, style="short", granularity="fact",
                         domains=args.domains, hedge_share=args.hedge_share,
                         hedge_wordings=args.hedge_wordings)
    stage(2, "bm25 indexes")
    indexes = toy_indexes(data / "corpora", out / "indexes")
    stage(3, "base model %s", args.model)
    base = Path(resolve(args.model))
    examples = world.examples(args.n_eval, "test", args.domains, style="short")
    stage(4, "judging %d held-out pairs in both orders zero-shot", len(examples))
    out.mkdir(parents=True, exist_ok=True)
    judged = out / "judged.json"  # every row's numbers, keyed by the weights: export rewrites the judge's folder
    judging = {"dtype": "bfloat16"} if args.bf16 else {}  # a float32 run's cached numbers keep their key
    table = {"zero-shot": measured(base, indexes, examples, cache=judged, **judging)}
    stage(5, "SFT warm-up")
    warm = warm_up(world, str(base), out / "judge-sft", args.warmup_plan())
    table["SFT warm-up"] = measured(warm, indexes, examples, cache=judged, **judging)
    stage(6, "GRPO")
    run = grpo(warm, data, indexes, out / "grpo", args.grpo_steps, "--seed", str(args.seed),
               "--learning_rate", str(args.grpo_learning_rate),
               "--trajectory_log", str(out / "grpo" / "trajectories.jsonl"),  # bench/tool_choice_log.py reads it
               *(["--bf16", "true"] if args.bf16 else []))
    from train import export_judge

    judge_dir = out / "judge"
    stage(7, "exporting the judge to %s", judge_dir)
    export_judge.main(*export_judge.parse(["--checkpoint", str(run), "--out", str(judge_dir), "--overwrite"]))
    stage(8, "judging the held-out pairs after GRPO, with and without search")
    table["after GRPO"] = measured(judge_dir, indexes, examples, cache=judged, **judging)
    table["after GRPO, no search"] = measured(judge_dir, None, examples, cache=judged, **judging)
    lines = results_table(table)
    (out / "results.md").write_text("\n".join(lines) + "\n\n" + summary(table) + "\n", encoding="utf-8")
    (out / "results.json").write_text(json.dumps(table, indent=2) + "\n", encoding="utf-8")
    plot = plot_curves(run, out / "training_curves.png")
    logger.info("%d held-out toy pairs (documents no training pair asks about), greedy judging:\n%s\n%s\n"
                "curves: %s; judge: %s", len(examples), "\n".join(lines), summary(table), plot, judge_dir)
    return table


if __name__ == "__main__":
    from trl import TrlParser

    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s", datefmt="%H:%M:%S")
    (parsed_args,) = TrlParser(QuickstartArguments).parse_args_and_config()
    main(parsed_args)
