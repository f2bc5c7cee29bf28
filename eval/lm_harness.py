"""Downstream evaluation of a DPO-trained policy against its base model (the paper's Table 5), wired onto
EleutherAI's lm-evaluation-harness (HF backend): the arguments of `python -m eval.downstream`, the harness run of both
checkpoints (`run`) and the comparison written side by side: table.md (Δ = model − baseline in points,
Δ % = 100·Δ / baseline), results.json and plot.png. All scoring is the harness's; this module only wires it.

Offline by default: our task configs (eval/lm_eval_tasks/, the harness's own with local files) read the JSONL under
--data_dir that `python -m eval.benchmark_files` writes.
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from plumbing.arguments import Collect

logger = logging.getLogger(__name__)

TASKS_DIR = Path(__file__).resolve().parent / "lm_eval_tasks"
# The harness's hub task names (lm-eval 0.4.13) and our local copies of them.
HUB_TASKS = ("truthfulqa_mc1", "truthfulqa_mc2", "mmlu_pro", "triviaqa")
LOCAL_TASKS = {name: f"{name}_local" for name in HUB_TASKS}
_NOT_SCORES = ("alias", "name", "sample_len", "sample_count")


@dataclass(frozen=True)
class Row:
    task: str  # the harness's hub name (truthfulqa_mc1, ..., mmlu_pro)
    metric: str  # as the harness keys it: "acc,none", "exact_match,custom-extract"
    baseline: float
    model: float
    delta: float  # model − baseline, in the harness's units (fractions)
    delta_pct: float | None  # 100·delta / baseline; None when the baseline scores 0
    n: int  # questions scored (summed over a group's subtasks)
    baseline_stderr: float | None
    model_stderr: float | None


@dataclass
class DownstreamArguments:
    model: str = field(metadata={"help": "the DPO-trained checkpoint (a folder; a LoRA adapter folder works too)"})
    baseline: str = field(metadata={"help": "the model it started from (folder or, with hub access, a hub id)"})
    tasks: list[str] = field(default_factory=lambda: list(HUB_TASKS), metadata={
        "help": f"harness task names; local configs exist for {list(HUB_TASKS)}", "action": Collect})
    data_dir: str = field(default="", metadata={
        "help": "folder of benchmark JSONL (python -m eval.benchmark_files writes it); unused with --hub_tasks"})
    out: str = field(default="runs/downstream", metadata={"help": "folder for table.md, results.json, plot.png"})
    hub_tasks: bool = field(default=False, metadata={
        "help": "run the harness's own hub tasks (they download their datasets) instead of the local configs"})
    limit: float | None = field(default=None, metadata={
        "help": "examples per task (per subtask of a group; < 1 is a fraction): smoke tests only"})
    num_fewshot: int | None = field(default=None, metadata={
        "help": "override the configs' shots (the harness keeps 0 where a config fixes 0, as TruthfulQA does)"})
    max_gen_toks: int | None = field(default=None, metadata={
        "help": "cap on generated tokens for generative tasks (configs: MMLU-Pro 2048, harness default 256)"})
    batch_size: str = field(default="", metadata={"help": "harness batch size or 'auto'; default auto on a GPU, "
                                                          "1 on CPU (auto probes at the model's full length)"})
    device: str = field(default="", metadata={"help": "torch device; default cuda if available, else cpu"})
    dtype: str = field(default="auto", metadata={"help": "weights dtype (auto, bfloat16, float32, ...)"})
    apply_chat_template: bool = field(default=False, metadata={
        "help": "format prompts with the tokenizer's chat template (the harness's --apply_chat_template)"})

    def __post_init__(self) -> None:
        if not self.tasks:
            raise ValueError("--tasks is empty")
        if not self.hub_tasks:
            unknown = [t for t in self.tasks if t not in LOCAL_TASKS]
            if unknown:
                raise ValueError(f"no local config for {unknown}: local tasks are {list(HUB_TASKS)} "
                                 "(any harness task runs with --hub_tasks)")
            if not self.data_dir:
                raise ValueError("--data_dir is required without --hub_tasks")


def task_manager(hub_tasks: bool, data_dir: str = ""):
    """The harness's TaskManager: only our local configs, with data_dir as the metadata their loader reads, or
    only the harness's own tasks."""
    from lm_eval.tasks import TaskManager

    if hub_tasks:
        return TaskManager()
    return TaskManager(include_path=str(TASKS_DIR), include_defaults=False,
                       metadata={"data_dir": str(Path(data_dir).resolve())})


def missing_files(tasks: Sequence[str], data_dir: str) -> list[str]:
    """The data files our local configs for `tasks` name that are not under data_dir (checked before any model
    loads)."""
    index = task_manager(False, data_dir).task_index
    wanted = {name for t in tasks for name in index[LOCAL_TASKS[t]].cfg["dataset_kwargs"]["data_files"].values()}
    return sorted(str(Path(data_dir) / n) for n in wanted if not (Path(data_dir) / n).is_file())


def model_args(path: str, dtype: str) -> dict[str, Any]:
    """HFLM's arguments for a checkpoint. A local folder is passed as an absolute path, so the harness's model-info
    lookup sees an invalid hub id and never asks the hub; a PEFT adapter folder loads its base with the adapter."""
    local = Path(path)
    if not local.exists():
        return {"pretrained": path, "dtype": dtype}
    local = local.resolve()
    adapter = local / "adapter_config.json"
    if not adapter.is_file():
        return {"pretrained": str(local), "dtype": dtype}
    base = json.loads(adapter.read_text(encoding="utf-8"))["base_model_name_or_path"]
    args = {**model_args(base, dtype), "peft": str(local)}
    if (local / "tokenizer_config.json").is_file():
        args["tokenizer"] = str(local)
    return args


def evaluate(path: str, args: DownstreamArguments) -> dict[str, Any]:
    """The harness's results for one checkpoint (simple_evaluate's dict, per-sample logs left out)."""
    import lm_eval
    import torch

    names = list(args.tasks) if args.hub_tasks else [LOCAL_TASKS[t] for t in args.tasks]
    gpu = torch.cuda.is_available()
    batch = args.batch_size or ("auto" if gpu else "1")
    return lm_eval.simple_evaluate(
        model="hf", model_args=model_args(path, args.dtype), tasks=names,
        task_manager=task_manager(args.hub_tasks, args.data_dir), limit=args.limit, num_fewshot=args.num_fewshot,
        gen_kwargs={"max_gen_toks": args.max_gen_toks} if args.max_gen_toks else None,
        batch_size=int(batch) if batch.isdigit() else batch, device=args.device or ("cuda" if gpu else "cpu"),
        apply_chat_template=args.apply_chat_template, log_samples=False)


def scores(results: Mapping[str, Any], task: str) -> dict[str, tuple[float, float | None]]:
    """{"metric,filter": (value, stderr)} the harness reported for `task` (a task or a group)."""
    entry = results["results"][task]
    out = {}
    for key, value in entry.items():
        if key in _NOT_SCORES or "_stderr," in key:
            continue
        metric, _, filt = key.partition(",")
        stderr = entry.get(f"{metric}_stderr,{filt}")
        out[key] = (float(value), float(stderr) if isinstance(stderr, int | float) else None)
    return out


def n_scored(results: Mapping[str, Any], task: str) -> int:
    """Questions the harness scored for a task, or for all of a group's subtasks."""
    subtasks = results.get("group_subtasks", {}).get(task)
    if not subtasks:
        return int(results["n-samples"][task]["effective"])
    return sum(n_scored(results, s) for s in subtasks)


def delta_pct(baseline: float, model: float) -> float | None:
    return None if baseline == 0 else 100.0 * (model - baseline) / baseline


def compare(baseline: Mapping[str, Any], model: Mapping[str, Any], tasks: Mapping[str, str]) -> list[Row]:
    """One row per task and metric: `tasks` maps the names to show (hub names) to the names the harness ran."""
    rows = []
    for shown, ran in tasks.items():
        base, mine = scores(baseline, ran), scores(model, ran)
        if base.keys() != mine.keys():
            raise ValueError(f"{ran}: baseline has metrics {sorted(base)}, model {sorted(mine)}")
        n = n_scored(model, ran)
        for metric, (b, b_se) in base.items():
            m, m_se = mine[metric]
            rows.append(Row(shown, metric, b, m, m - b, delta_pct(b, m), n, b_se, m_se))
    return rows


def _metric_name(metric: str, sep: str = " ") -> str:
    """"acc,none" as "acc"; "exact_match,custom-extract" as "exact_match (custom-extract)"."""
    name, _, filt = metric.partition(",")
    return name if filt in ("", "none") else f"{name}{sep}({filt})"


def markdown_table(rows: Sequence[Row], baseline: str, model: str) -> str:
    """Table 5's layout: scores in %, Δ in points, Δ % relative to the baseline."""
    lines = [f"baseline: `{baseline}`  \nmodel: `{model}`  \n"
             "scores in %, Δ in points (model − baseline), Δ % = 100·Δ / baseline", "",
             "| task | metric | n | baseline | model | Δ | Δ % |", "|---|---|---:|---:|---:|---:|---:|"]
    for r in rows:
        pct = "n/a" if r.delta_pct is None else f"{r.delta_pct:+.1f}"
        lines.append(f"| {r.task} | {_metric_name(r.metric)} | {r.n} | {100 * r.baseline:.2f} | "
                     f"{100 * r.model:.2f} | {100 * r.delta:+.2f} | {pct} |")
    return "\n".join(lines) + "\n"


def plot(rows: Sequence[Row], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    x = np.arange(len(rows))
    fig, ax = plt.subplots(figsize=(max(4.0, 2.0 * len(rows)), 4.0))
    ax.bar(x - 0.2, [100 * r.baseline for r in rows], 0.4, label="baseline")
    ax.bar(x + 0.2, [100 * r.model for r in rows], 0.4, label="model (DPO)")
    for i, r in enumerate(rows):
        ax.annotate(f"{100 * r.delta:+.1f}", (i + 0.2, 100 * r.model), ha="center", va="bottom", fontsize=8)
    ax.set_xticks(x, [r.task + "\n" + _metric_name(r.metric, sep="\n") for r in rows], fontsize=8)
    ax.set_ylabel("score (%)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def _finite(value: Any) -> Any:
    """NaN (a harness stderr on one example) as null, so results.json stays strict JSON."""
    return None if isinstance(value, float) and not math.isfinite(value) else value


def run(args: DownstreamArguments) -> list[Row]:
    """Score the baseline and the model, then write harness_*.json, results.json, table.md and plot.png under
    `args.out`; the rows of the table."""
    import lm_eval
    from lm_eval.utils import handle_non_serializable

    if not args.hub_tasks and (missing := missing_files(args.tasks, args.data_dir)):
        raise FileNotFoundError(f"missing benchmark files {missing}: write them with python -m eval.benchmark_files")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    harness = {}
    for role, path in (("baseline", args.baseline), ("model", args.model)):
        logger.info("%s: %s", role, path)
        harness[role] = evaluate(path, args)
        (out / f"harness_{role}.json").write_text(
            json.dumps(harness[role], indent=2, default=handle_non_serializable) + "\n", encoding="utf-8")
    names = {t: t if args.hub_tasks else LOCAL_TASKS[t] for t in args.tasks}
    rows = compare(harness["baseline"], harness["model"], names)
    record = {"settings": asdict(args), "lm_eval_version": lm_eval.__version__, "harness_tasks": names,
              "rows": [{k: _finite(v) for k, v in asdict(r).items()} for r in rows]}
    (out / "results.json").write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    (out / "table.md").write_text(markdown_table(rows, args.baseline, args.model), encoding="utf-8")
    plot(rows, out / "plot.png")
    return rows
