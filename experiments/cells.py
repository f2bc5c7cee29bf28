"""What the experiments' tables are made of: a cell over seeds (mean ± sd), a share, the hostile kinds a policy's
training samples showed, and the tournament statistics a policy GRPO run logged. Imported by the scripts in
experiments/ (agent_policy_proof, policy_learning_proof, learning_proof, rubric_learning_proof); it runs nothing
itself. Results files are written with plumbing.atomic."""

from __future__ import annotations

import json
import statistics
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path


def mean_sd(values: Iterable[float | None], digits: int = 2) -> str:
    """Mean ± sample sd over seeds to `digits` decimals; the mean alone for one value; "-" for none. A None (a run
    that did not report the metric) is left out."""
    kept = [v for v in values if v is not None]
    if not kept:
        return "-"
    mean = statistics.fmean(kept)
    return f"{mean:.{digits}f} ± {statistics.stdev(kept):.{digits}f}" if len(kept) > 1 else f"{mean:.{digits}f}"


GRPO_CURVE_KEYS = ("reward", "openrm/em", "openrm/tool", "openrm/calls_per_trajectory", "completions/mean_length")


def grpo_curve(run: Path, keys: Sequence[str] = GRPO_CURVE_KEYS) -> list[dict[str, float]]:
    """The logged steps of a judge GRPO run (`train/grpo_openrm.py`): the step and each of `keys` it logged."""
    history = json.loads((run / "trainer_state.json").read_text())["log_history"]
    return [{"step": h["step"], **{k: h[k] for k in keys if k in h}} for h in history if "reward" in h]


def tournament_logs(run: Path) -> list[dict]:
    """The logged steps of a policy GRPO run (`train/grpo_policy.py`) that carry its tournament's statistics."""
    history = json.loads((run / "trainer_state.json").read_text())["log_history"]
    return [h for h in history if "tournament/judge_calls" in h]


def tournament_stats(run: Path) -> dict[str, float]:
    """Judge calls and tie rate per step (mean over the logged steps), wall seconds per step, steps."""
    state = json.loads((run / "trainer_state.json").read_text())
    logs = tournament_logs(run)
    runtime = next(h["train_runtime"] for h in state["log_history"] if "train_runtime" in h)
    return {"judge_calls_per_step": statistics.fmean(h["tournament/judge_calls"] for h in logs),
            "tie_rate": statistics.fmean(h["tournament/tie_rate"] for h in logs),
            "seconds_per_step": runtime / state["global_step"], "steps": state["global_step"]}


def hostile_quarters(run: Path) -> dict[str, list[float]]:
    """Per hostile kind a policy GRPO run logged (`hostile/<kind>`, `eval.hostile.traits` of its samples): the mean
    share over the first and over the last quarter of the logged steps."""
    logs = tournament_logs(run)
    quarter = max(len(logs) // 4, 1)
    kinds = sorted({k for h in logs for k in h if k.startswith("hostile/")})
    return {k.removeprefix("hostile/"): [statistics.fmean(h.get(k, 0.0) for h in part)
                                         for part in (logs[:quarter], logs[-quarter:])] for k in kinds}


def share(value: float) -> str:
    """Two decimals, three for a share above 0 that two would print as 0.00 (one answer in a few hundred)."""
    return f"{value:.3f}" if 0 < value < 0.005 else f"{value:.2f}"


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


def plot_over_steps(curves: Mapping[str, Sequence[Sequence[Mapping[str, float]]]],
                    panels: Sequence[tuple[str, str]], out: Path, window: int = 1) -> Path | None:
    """A PNG with one panel per `(key, title)` of `panels` over training steps. `curves[name]` holds one curve per
    seed, each a list of logged steps (`{"step": s, key: value, ...}`); each name gets its mean over seeds (at the
    steps every seed logged) drawn bold and each seed's line faint, every line the mean of its last `window` logged
    steps (a step of a few prompts is noisy). None, and no file, when no name has a curve."""
    curves = {name: seeds for name, seeds in curves.items() if seeds}
    if not curves:
        return None
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    def trailing(values: list[float]) -> list[float]:
        return [statistics.fmean(values[max(0, i - window + 1):i + 1]) for i in range(len(values))]

    fig, axes = plt.subplots(1, len(panels), figsize=(4.5 * len(panels), 3.4), squeeze=False)
    for (key, title), ax in zip(panels, axes[0], strict=True):
        for n, (name, seeds) in enumerate(curves.items()):
            per_seed = [{h["step"]: h[key] for h in seed if key in h} for seed in seeds]
            for points in per_seed:
                ax.plot(list(points), trailing(list(points.values())), color=f"C{n}", alpha=0.25, linewidth=0.8)
            steps = sorted(set.intersection(*(set(points) for points in per_seed)))
            ax.plot(steps, trailing([statistics.fmean(points[s] for points in per_seed) for s in steps]), color=f"C{n}",
                    linewidth=2, label=f"{name} ({len(seeds)} seed{'s' if len(seeds) > 1 else ''})")
        ax.set_title(title + (f" (mean of {window} steps)" if window > 1 else ""))
        ax.set_xlabel("step")
    axes[0][0].legend(fontsize=7)
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out


def seeds_table(per_seed: Mapping[int, Mapping]) -> str:
    """Markdown over seeds that judged the same test pairs (experiments/real_text_judge.py's `results.json` by seed):
    a line per judge row with each seed's both-order accuracy (95 % CI), their mean ± sd, the same-letter and
    unparsed rates (mean over seeds) and the accuracy by kind and by length (mean over seeds); then the rule rows and
    the evidence coverage, which the seeds share. Seeds that judged other pairs (their rule rows differ) are
    refused."""
    from eval.judge_table import LENGTHS

    seeds = sorted(per_seed)
    first = per_seed[seeds[0]]
    for s in seeds[1:]:
        if per_seed[s]["references"] != first["references"]:
            raise ValueError(f"seed {s} judged other test pairs than seed {seeds[0]} (its rule rows differ)")
    names = list(dict.fromkeys(n for s in seeds for n in per_seed[s]["rows"]))
    rows = [r for s in seeds for r in per_seed[s]["rows"].values()] + list(first["references"].values())
    kinds = sorted({k for r in rows for k in r["by_kind"]})
    lengths = [x for x in LENGTHS if any(x in r["by_length"] for r in rows)]
    head = ["judge", "seeds", *[f"seed {s}" for s in seeds], "mean ± sd", "same letter", "unparsed orders", *kinds,
            *lengths]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]

    def mean_of(values):
        kept = [v for v in values if v is not None]
        return f"{statistics.fmean(kept):.2f}" if kept else "-"

    for name in names:
        got = {s: per_seed[s]["rows"][name] for s in seeds if name in per_seed[s]["rows"]}
        cells = [name, str(len(got))]
        cells += [f"{got[s]['accuracy']:.2f} ({got[s]['ci95'][0]:.2f}-{got[s]['ci95'][1]:.2f})" if s in got else "-"
                  for s in seeds]
        cells += [mean_sd(r["accuracy"] for r in got.values()), mean_of(r.get("same_letter") for r in got.values()),
                  mean_of(r.get("unparsed_orders") for r in got.values())]
        cells += [mean_of(r["by_kind"].get(k, {}).get("accuracy") for r in got.values()) for k in kinds]
        cells += [mean_of(r["by_length"].get(x, {}).get("accuracy") for r in got.values()) for x in lengths]
        lines.append("| " + " | ".join(cells) + " |")
    for name, r in first["references"].items():
        cells = [name, "-", *["-"] * len(seeds), f"{r['accuracy']:.2f} ({r['ci95'][0]:.2f}-{r['ci95'][1]:.2f})",
                 "-", "-"]
        cells += [f"{r['by_kind'][k]['accuracy']:.2f}" if k in r["by_kind"] else "-" for k in kinds]
        cells += [f"{r['by_length'][x]['accuracy']:.2f}" if x in r["by_length"] else "-" for x in lengths]
        lines.append("| " + " | ".join(cells) + " |")
    cov = first["coverage"]
    lines += ["", f"Evidence coverage (the search shows words that separate the answers): {cov['all']:.2f}; by length "
              + ", ".join(f"{k} {v:.2f}" for k, v in cov["by_length"].items()) + "."]
    return "\n".join(lines) + "\n"
