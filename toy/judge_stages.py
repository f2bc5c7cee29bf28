"""The judge quickstart's stages (toy/quickstart.py): bm25 indexes of the toy corpora, GRPO of the judge with live
search, judging held-out pairs in both orders (cached under a hash of the weights), and the table, summary and
training curves of a run. experiments/learning_proof.py and the other judge benches run the same stages.
"""

from __future__ import annotations

import hashlib
import json
import logging
from pathlib import Path

from plumbing import atomic
from retrieval.build_index import build_index
from retrieval.manifest import ManifestError, file_sha256
from retrieval.retriever import load_index
from toy.stages import on_gpu, trained

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


def grpo(model: Path, data: Path, indexes: dict[str, Path], out: Path, steps: int, *extra: str,
         config: Path = GRPO_CONFIG) -> Path:
    """GRPO from `model` with `config`; `extra` are more command-line overrides. A run folder made from another
    warm-up or other overrides is discarded; an interrupted one resumes from its last checkpoint."""
    from train.judge_trainer import RUN_FILE, parse, train_judge

    if on_gpu():  # the CPU config pins use_cpu
        extra = (*extra, "--use_cpu", "false")
    start = {"model": str(model), "warmup": json.loads((model / "warmup.json").read_text()),
             "config": config_key(config), "extra": list(extra)}
    return trained(out, start, steps, RUN_FILE, lambda resume: train_judge(*parse([
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
