"""The main job on the embedded default, end to end on a laptop CPU in minutes, offline:
toy world → bm25 indexes → tiny judge → induction stages → SFT warm-up on gold trajectories → GRPO with search →
export → judge held-out toy pairs (before and after GRPO, with and without search) → a table and the training curves.

    make quickstart                       # = python -m train.quickstart --out runs/quickstart
    python -m train.quickstart --config configs/quickstart/tiny.yaml

It runs the recipe that bench/learning_proof.py measured to learn on CPU (bench/RESULTS.md): short single-fact
pairs, one fact per passage, the compact prompt, a whole-word tokenizer, and a warm-up that mixes pairs whose fact
is drawn afresh (only their own passage holds it), so that copying the evidence pays and memorising cannot. Before the
warm-up, induction stages train the content-matching copy (`induction_stages`) that the deciding step is: a tiny
judge does not discover it from judge records alone (bench/RESULTS.md, "Learning proof", session 24), and copies the
letter after a value in the prompt only once value-letter recall drills laid out as text is have trained it (session
29). The judge's
run settings (prompt style, top-k, budgets) come from configs/grpo_openrm/tiny_cpu.yaml, for training and judging
alike. A rerun reuses every finished stage and resumes an interrupted GRPO run.
"""

from __future__ import annotations

import json
import logging
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from openrm.tiny import TinyConfig, built_from
from openrm.tiny import build as build_tiny
from openrm.toyworld import ToyWorld, WorldSize, write_dataset
from retrieval.build_index import build_index
from retrieval.manifest import ManifestError, file_sha256
from retrieval.retriever import load_index
from train.curriculum import INDUCTION_LENGTHS, INDUCTION_LENGTHS_FIRST, RECALL_SHARE, induction_stages, stage, warm_up

logger = logging.getLogger("openrm.quickstart")
ROOT = Path(__file__).resolve().parents[1]
GRPO_CONFIG = ROOT / "configs/grpo_openrm/tiny_cpu.yaml"


@dataclass
class QuickstartArguments:
    out: str = field(default="runs/quickstart", metadata={"help": "Folder for every artefact of the run."})
    seed: int = field(default=0, metadata={"help": "Seed of the toy world and of the tiny model's weights."})
    n_train: int = field(default=4000, metadata={"help": "Training judge pairs (short style) to synthesise."})
    n_test: int = field(default=200, metadata={"help": "Test judge pairs (about documents no train pair uses)."})
    hidden_size: int = field(default=64, metadata={"help": "Width of the tiny judge."})
    num_layers: int = field(default=4, metadata={"help": "Depth of the tiny judge."})
    head_dim: int = field(default=32, metadata={"help": "Width of each attention head (heads = width / head_dim)."})
    sft_steps: int = field(default=1500, metadata={"help": "SFT warm-up steps (batch 32, every record drawn afresh)."})
    sft_learning_rate: float = field(default=3e-3, metadata={"help": "Peak SFT learning rate."})
    sft_decay_steps: int = field(default=500, metadata={
        "help": "The warm-up's learning rate stays at its peak, then falls over its last this many steps "
                "(warmup_stable_decay; at most sft_steps); 0 = cosine over the whole warm-up. Measured on seed 0: "
                "1,500 steps with 500 of decay judge as well as 2,000 cosine steps; 1,200 cosine steps do not "
                "(bench/RESULTS.md)."})
    recombined_share: float = field(default=0.5, metadata={
        "help": "Share of warm-up records whose fact is drawn afresh (ToyWorld style 'recombined')."})
    copy_share: float = field(default=0.15, metadata={
        "help": "Share of warm-up records that are 'repeat these words' drills (they grow the copying circuit)."})
    decision_share: float = field(default=0.2, metadata={
        "help": "Share of warm-up records that drill the deciding step alone (curriculum.decision_drill)."})
    induction_steps: int = field(default=1500, metadata={
        "help": "Most steps of each induction stage before the warm-up (batch 64 of drills; each stops at its copy "
                "accuracy: 0.95, and 0.98 for the last stage of the fast path; 0 = none). The fast path stopped at "
                "450-750 and 100-1,500 steps on seeds 0-1 (bench/RESULTS.md, session 29); the measured constant-rate "
                "path needs up to 6000."})
    induction_vocab: int = field(default=0, metadata={
        "help": "How many toy words the first induction stage draws from; 0 = every word (the fast path; with "
                "--fast_induction false, 128 words first, as session 27 measured)."})
    fast_induction: bool = field(default=True, metadata={
        "help": "The induction of session 29 (curriculum.induction_stages): every word from the start with a rate "
                "ramp, then long runs mixed with value-letter recall drills (the deciding copy laid out as the "
                "prompt lays it out), and those drills in the warm-up too. false: session 27's constant-rate stages "
                "(--induction_vocab 128 --induction_steps 6000; 39 min on a fresh clone)."})
    induction_share: float = field(default=0.2, metadata={
        "help": "Share of warm-up records that are induction drills (so the warm-up keeps the circuit)."})
    grpo_steps: int = field(default=20, metadata={"help": "GRPO steps (configs/grpo_openrm/tiny_cpu.yaml)."})
    n_eval: int = field(default=100, metadata={"help": "Test pairs judged in both orders for the table."})

    def __post_init__(self) -> None:
        if min(self.n_train, self.n_test, self.sft_steps, self.grpo_steps, self.n_eval) < 1:
            raise ValueError("n_train, n_test, sft_steps, grpo_steps and n_eval must be >= 1")
        if self.sft_decay_steps < 0:
            raise ValueError(f"sft_decay_steps must be >= 0, got {self.sft_decay_steps}")
        if self.n_eval > self.n_test:
            raise ValueError(f"n_eval ({self.n_eval}) cannot exceed n_test ({self.n_test})")
        if not 0.0 <= self.recombined_share <= 1.0:
            raise ValueError(f"recombined_share must be in [0, 1], got {self.recombined_share}")
        shares = (self.copy_share, self.decision_share, self.induction_share)
        if min(shares) < 0 or sum(shares) > 1:
            raise ValueError("copy_share, decision_share and induction_share must be >= 0 and add up to at most 1")
        least = (INDUCTION_LENGTHS_FIRST if self.fast_induction else INDUCTION_LENGTHS)[1]
        if self.induction_steps < 0 or self.induction_vocab < 0 or 0 < self.induction_vocab < least:
            raise ValueError(f"induction_steps must be >= 0 and induction_vocab 0 or >= {least}")
        if self.induction_vocab == 0 and not self.fast_induction:
            raise ValueError("induction_vocab 0 (every word from the start) needs fast_induction; session 27's "
                             "constant-rate path: --fast_induction false --induction_vocab 128 --induction_steps 6000")

    def tiny_config(self) -> TinyConfig:
        return TinyConfig.whole_word(self.seed, self.hidden_size, self.num_layers, self.head_dim)



def toy_indexes(corpora: Path, out: Path) -> dict[str, Path]:
    """A bm25 index per toy corpus, rebuilt only when its corpus changed."""
    for tsv in sorted(corpora.glob("*.tsv")):
        path, sha = out / tsv.stem, file_sha256(tsv)
        try:
            load_index(path, expect_backend="bm25", expect_corpus_sha256=sha, numba=False)
            stage(2, "reusing %s index at %s", tsv.stem, path)
        except ManifestError:
            build_index(tsv, "bm25", path, overwrite=True, progress=False)
            stage(2, "built bm25 index of %s at %s", tsv.name, path)
    return {tsv.stem: out / tsv.stem for tsv in sorted(corpora.glob("*.tsv"))}


def tiny_model(out: Path, cfg: TinyConfig) -> Path:
    if built_from(out, cfg):
        stage(3, "reusing tiny judge at %s", out)
        return out
    stage(3, "building tiny judge at %s", out)
    return build_tiny(out, cfg)



def grpo(model: Path, data: Path, indexes: dict[str, Path], out: Path, steps: int, *extra: str) -> Path:
    """GRPO from `model` with configs/grpo_openrm/tiny_cpu.yaml; `extra` are more command-line overrides."""
    from transformers.trainer_utils import get_last_checkpoint

    from train import grpo_openrm

    run, origin = out / grpo_openrm.RUN_FILE, out / "quickstart_origin.json"
    start = {"model": str(model), "warmup": json.loads((model / "warmup.json").read_text()), "extra": list(extra)}
    if out.is_dir() and (not origin.exists() or json.loads(origin.read_text()) != start):
        stage(5, "discarding %s: it started from another warm-up or settings", out)
        shutil.rmtree(out)
    if run.exists() and json.loads(run.read_text())["global_step"] >= steps:
        stage(5, "reusing GRPO run at %s", out)
        return out
    out.mkdir(parents=True, exist_ok=True)
    origin.write_text(json.dumps(start) + "\n")
    last = get_last_checkpoint(str(out)) if out.is_dir() else None
    stage(5, "GRPO of the judge with search, %d steps%s", steps, f" (resuming {last})" if last else "")
    grpo_openrm.main(*grpo_openrm.parse([
        "--config", str(GRPO_CONFIG), "--model_name_or_path", str(model),
        "--dataset", str(data / "dataset"), "--output_dir", str(out), "--max_steps", str(steps),
        "--retrievers", *[f"{name}={path}" for name, path in indexes.items()], *extra,
        *(["--resume_from_checkpoint", last] if last else [])]))
    return out


def judging_settings() -> dict:
    """The judge's run settings as tiny_cpu.yaml trains it, so a warm-up and an exported judge are judged alike."""
    import yaml

    from openrm.card import RunSettings
    from plumbing.arguments import parse_pairs

    config = yaml.safe_load(GRPO_CONFIG.read_text(encoding="utf-8"))
    names = {f for f in RunSettings.__dataclass_fields__ if f in config and f != "tools"}
    return {**{k: config[k] for k in names}, "tools": parse_pairs(config["tools"], "tools"),
            "max_completion_tokens": config["max_completion_length"], "temperature": 0.0}


def evaluate(judge_dir: Path, indexes: dict[str, Path] | None, examples: list[dict], **overrides) -> dict:
    """Judge `examples` in both orders (greedy; `overrides` of the run settings, e.g. temperature) with search, or
    without it when `indexes` is None (the no-tool prompt)."""
    from openrm.judge import Judge

    retrievers = {k: str(v) for k, v in indexes.items()} if indexes else None
    with Judge.from_pretrained(judge_dir, retrievers=retrievers, **{**judging_settings(), **overrides}) as judge:
        verdicts = judge.compare_batch([(e["question"], e["answer_a"], e["answer_b"]) for e in examples])
    n = len(verdicts)
    runs = [(r, e) for v, e in zip(verdicts, examples, strict=True) for r in v.orders]
    calls = [(call.tool, e["gold_tool"]) for r, e in runs for call in r.searches]
    subject = [e["meta"]["subject"].split()[0] in call.query for r, e in runs for call in r.searches]
    return {"accuracy": sum(v.winner == e["label"] for v, e in zip(verdicts, examples, strict=True)) / n,
            "consistency": sum(v.consistent for v in verdicts) / n,
            "ties": sum(v.winner == "tie" for v in verdicts) / n,
            "parse_failures": sum(r.answer is None for r, _ in runs) / len(runs),
            "malformed": sum(not r.well_formed for r, _ in runs) / len(runs),
            "correct_tool_share": sum(tool == gold for tool, gold in calls) / len(calls) if calls else None,
            "searches_per_judgment": len(calls) / n,  # both orders, as eval.run counts
            "queries_with_subject": sum(subject) / len(subject) if subject else None,  # the copy a judge must learn
            "model_tokens_per_order": sum(sum(r.trajectory.env_mask) for r, _ in runs) / len(runs)}


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
        ax.plot([h["step"] for h in logs], [h[key] for h in logs], marker="o")
        ax.set_title(title)
        ax.set_xlabel("step")
    fig.tight_layout()
    fig.savefig(out)
    plt.close(fig)
    return out


def results_table(table: dict) -> list[str]:
    """The before/after table as markdown lines ("name in query": searches whose query holds the pair's subject)."""
    lines = ["| judge | accuracy | consistency | ties | parse failures | right corpus | name in query | "
             "searches / judgment |", "|---|---|---|---|---|---|---|---|"]
    for name, m in table.items():
        tool, named = (("-" if m[k] is None else f"{m[k]:.3f}") for k in ("correct_tool_share", "queries_with_subject"))
        lines.append(f"| {name} | {m['accuracy']:.3f} | {m['consistency']:.3f} | {m['ties']:.3f} | "
                     f"{m['parse_failures']:.3f} | {tool} | {named} | {m['searches_per_judgment']:.2f} |")
    return lines


def summary(table: dict) -> str:
    """What the table shows, in words that follow from its numbers."""
    after, before, blind = table["after GRPO"], table["SFT warm-up"], table["after GRPO, no search"]
    tool, failures = after["correct_tool_share"], after["parse_failures"]
    named = after["queries_with_subject"]
    searched = ("it never searched." if tool is None else f"{tool:.0%} of its searches use the right corpus "
                f"(goal >= 90%: {'met' if tool >= 0.9 else 'NOT met'}) and {named:.0%} name the pair's subject "
                f"(copied from the question).")
    lines = [f"Protocol: {failures:.1%} of orders end without a parseable answer (goal <= 2%: "
             f"{'met' if failures <= 0.02 else 'NOT met'}); {searched}"]
    gap = after["accuracy"] - blind["accuracy"]
    verdict = ("it uses the evidence" if gap >= 0.1 else "it does not use the evidence yet (with and without "
               "search it scores alike)")
    lines.append(f"Task: accuracy {after['accuracy']:.2f} with search against {blind['accuracy']:.2f} without (a pair "
                 f"counts only when both orders pick the right answer: a coin-flipping judge scores 0.25), so "
                 f"{verdict}; GRPO moved accuracy {after['accuracy'] - before['accuracy']:+.2f} from the warm-up.")
    return "\n".join(lines)


def main(args: QuickstartArguments) -> dict:
    out = Path(args.out)
    world = ToyWorld(args.seed, WorldSize())
    stage(1, "toy world: %d documents; %d/%d short judge pairs in %s", len(world.documents), args.n_train,
          args.n_test, out / "data")
    data = write_dataset(world, out / "data", args.n_train, args.n_test, style="short", granularity="fact")
    indexes = toy_indexes(data / "corpora", out / "indexes")
    tiny = tiny_model(out / "tiny-judge", args.tiny_config())
    if args.induction_steps:
        tiny = induction_stages(world, tiny, out / "tiny-judge-induction", args.induction_steps, args.induction_vocab,
                                args.seed, fast=args.fast_induction)
    warm = warm_up(world, tiny, out / "tiny-judge-sft", args.sft_steps, args.sft_learning_rate,
                   args.recombined_share, args.seed, copy_share=args.copy_share, decision_share=args.decision_share,
                   induction_share=args.induction_share, decay_steps=min(args.sft_decay_steps, args.sft_steps),
                   recall=RECALL_SHARE if args.fast_induction else 0.0)
    run = grpo(warm, data, indexes, out / "grpo", args.grpo_steps)
    from train import export_judge

    judge_dir = out / "judge"
    stage(6, "exporting the judge to %s", judge_dir)
    export_judge.main(*export_judge.parse(["--checkpoint", str(run), "--out", str(judge_dir), "--overwrite"]))
    examples = world.examples(args.n_eval, "test", style="short")
    stage(7, "judging %d held-out pairs in both orders: before and after GRPO, and without search", len(examples))
    table = {"SFT warm-up": evaluate(warm, indexes, examples), "after GRPO": evaluate(judge_dir, indexes, examples),
             "after GRPO, no search": evaluate(judge_dir, None, examples)}
    lines = results_table(table)
    (out / "results.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    (out / "results.json").write_text(json.dumps(table, indent=2) + "\n", encoding="utf-8")
    plot = plot_curves(run, out / "training_curves.png")
    logger.info("%d held-out toy pairs (documents no training pair asks about), greedy judging:\n%s\n%s\n"
                "curves: %s; judge: %s", len(examples), "\n".join(lines), summary(table), plot, judge_dir)
    return table


if __name__ == "__main__":
    from trl import TrlParser

    logging.basicConfig(level=logging.INFO, format="%(message)s")
    (parsed_args,) = TrlParser(QuickstartArguments).parse_args_and_config()
    main(parsed_args)
