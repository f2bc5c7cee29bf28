"""The agent proof's stages (experiments/agent_policy_proof.py): the toy agent task's files, GRPO of the search agent
on judge tournaments, its sampled answers (cached beside the model) and the head-to-head of a trained agent against
its step-0 self by the toy oracle, with the measure's null distribution. Each stage is cached under the run folder.
"""

from __future__ import annotations

import json
import logging
import random
import statistics
from collections.abc import Sequence
from pathlib import Path

from plumbing import atomic
from toy.agent_task import PARTS, ToyAgentTask
from toy.stages import trained, write_task_files

logger = logging.getLogger(__name__)
ROOT = Path(__file__).resolve().parents[1]
CONFIG = ROOT / "configs/grpo_policy/smollm2_agent_cpu.yaml"
REFUSALS = ("do not know", "don't know", "unknown", "cannot", "not sure")


def write_data(task: ToyAgentTask, out: Path, sft_records: int, search_share: float, seed: int) -> Path:
    """Every part's prompt rows and `sft_records` warm-up trajectories (a `search_share` of them searching)."""
    sft = task.sft_records(sft_records, search_share, random.Random(f"agent:sft:{seed}"))
    return write_task_files(out, {**{part: task.rows(part) for part in PARTS}, "sft": sft})


def grpo(warm: Path, data: Path, out: Path, steps: int, seed: int, values: dict, what: str,
         flags: Sequence[str] = ()) -> Path:
    """GRPO of the agent from the warm-up `warm`: `values` set train/policy_trainer.py's fields by name, `flags` are
    command-line words a person passed through; a run folder made from another warm-up, seed, values or flags is
    discarded, an interrupted one resumes from its last checkpoint."""
    from train.policy_trainer import RUN_FILE, configs, train_policy

    return trained(out, {"model": str(warm), "seed": seed, "values": values, "flags": list(flags)}, steps, RUN_FILE,
                   lambda resume: train_policy(*configs(
                       CONFIG, flags, model_name_or_path=warm, dataset=data / "grpo.jsonl", output_dir=out,
                       max_steps=steps, seed=seed, resume_from_checkpoint=resume, **values)), what)


def answer_stats(oracle, rows: list[dict], samples: list[list[dict]]) -> dict[str, float]:
    """Shares over every sampled answer: truth (the oracle's agreement), refusal, hedge (more than one value of
    the asked attribute named), searches and the agent's own tokens per answer."""
    flat = [(r["question"], s) for r, group in zip(rows, samples, strict=True) for s in group]
    n = len(flat)
    named = [oracle.named(q, s["answer"]) for q, s in flat]
    return {"truth": sum(oracle.agreements(q, s["answer"]) == 1 for q, s in flat) / n,
            "refusal": sum(not v and any(w in s["answer"].lower() for w in REFUSALS)
                           for v, (_, s) in zip(named, flat, strict=True)) / n,
            "hedge": sum(len(v) > 1 for v in named) / n,
            "searches": sum(s["searches"] for _, s in flat) / n,
            "tokens": sum(s["tokens"] for _, s in flat) / n}


def samples_of(model: Path, rows: list[dict], samples: int, locations: dict, cache: Path,
               seed: int) -> list[list[dict]]:
    """`samples` answers of the agent `model` per row at T = 1, searching `locations`; read from `cache` when there."""
    from openrm.agent import sample_agent_answers

    if cache.exists():
        return json.loads(cache.read_text())
    out = sample_agent_answers(model, [r["prompt"] for r in rows], samples, 1.0, locations, seed=seed)
    atomic.write_json(cache, out, indent=None)
    return out


def baseline_samples(warm: Path, rows: list[dict], samples: int, locations: dict, part: str,
                     seed: int) -> list[list[dict]]:
    """The step-0 policy's answers that every run of `seed` is measured against (sampled once, with seed 1000 + seed,
    and cached in the warm-up folder)."""
    return samples_of(warm, rows, samples, locations, warm / f"samples-{part}-{samples}-s{seed}.json", 1000 + seed)


def evaluate(task: ToyAgentTask, warm: Path, run: Path, locations: dict, seed: int, prompts: int,
             samples: int) -> dict:
    """On the first `prompts` held-out and GRPO prompts: the toy oracle's win rate of the trained agent `run` against
    its step-0 self `warm` (`samples` answers each, ties half, 95 % bootstrap over prompts), and `answer_stats` of
    both."""
    from eval.win_rate import head_to_head
    from toy.oracle import ToyOracle

    table = {}
    for part in ("heldout", "grpo"):
        rows = task.rows(part)[:prompts]
        before = baseline_samples(warm, rows, samples, locations, part, seed)
        after = samples_of(run, rows, samples, locations, run / f"samples-{part}-{samples}.json", 2000 + seed)
        oracle = ToyOracle.from_rows(task.world, rows)
        h2h = head_to_head(oracle, [r["question"] for r in rows], [[s["answer"] for s in g] for g in after],
                           [[s["answer"] for s in g] for g in before], seed=seed)
        table[part] = {"win_rate": h2h.win_rate, "ci": [h2h.ci_low, h2h.ci_high], "prompts": len(rows),
                       "before": answer_stats(oracle, rows, before), "after": answer_stats(oracle, rows, after)}
    return table


def null_draws(task: ToyAgentTask, warm: Path, locations: dict, draws: int, seed: int, prompts: int, samples: int,
               out: Path) -> dict:
    """The measure's null distribution for one seed: the step-0 policy, sampled with `draws` other seeds, against
    that seed's own baseline sample (the "before" of every run of that seed), on the first `prompts` held-out prompts
    (each draw's win rate, its 95 % interval, and whether that interval holds 0.5), written to
    `out/null-PROMPTSxSAMPLES-sSEED.json`. The draws are shared by every seed."""
    from eval.win_rate import head_to_head
    from toy.oracle import ToyOracle

    rows = task.rows("heldout")[:prompts]
    oracle = ToyOracle.from_rows(task.world, rows)
    base = baseline_samples(warm, rows, samples, locations, "heldout", seed)
    results = []
    for k in range(draws):
        other = samples_of(warm, rows, samples, locations, warm / f"samples-heldout-{samples}-null{k}.json", 3000 + k)
        h2h = head_to_head(oracle, [r["question"] for r in rows], [[x["answer"] for x in g] for g in other],
                           [[x["answer"] for x in g] for g in base], seed=k)
        results.append({"seed": 3000 + k, "win_rate": h2h.win_rate, "ci": [h2h.ci_low, h2h.ci_high],
                        "covers_half": h2h.ci_low <= 0.5 <= h2h.ci_high,
                        "truth": answer_stats(oracle, rows, other)["truth"]})
    rates = [r["win_rate"] for r in results]
    summary = {"seed": seed, "prompts": len(rows), "samples": samples, "draws": results,
               "win_rate_mean": statistics.fmean(rates), "win_rate_sd": statistics.stdev(rates) if draws > 1 else None,
               "ci_half_width_mean": statistics.fmean((r["ci"][1] - r["ci"][0]) / 2 for r in results),
               "intervals_holding_half": sum(r["covers_half"] for r in results),
               "truth_base": answer_stats(oracle, rows, base)["truth"]}
    atomic.write_json(out / f"null-{prompts}x{samples}-s{seed}.json", summary, indent=1)
    return summary
