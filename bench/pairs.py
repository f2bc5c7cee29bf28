"""Judging throughput on the quickstart's SmolLM2 judge (bench.rollout --part pairs): `Judge.compare_batch`, both
orders, greedy, with search, at each rollout batch size, optionally interleaved with the generator's work-sharing off
and with a float32 judge that has neither lever. Imported by bench.rollout.
"""

from __future__ import annotations

import contextlib
import time
from pathlib import Path
from statistics import median

ROOT = Path(__file__).resolve().parents[1]
SECTION = "## Judging throughput, SmolLM2 judge"
MODEL = "judge-sft"
CONFIG = ROOT / "configs/grpo_openrm/smollm2_cpu.yaml"


def pairs_per_second(qs: Path, n: int, batches: tuple[int, ...] = (1, 8, 32), bf16: bool = False,
                     reps: int = 1, plain: bool = False, float32_plain: bool = False) -> dict:
    """Judged pairs per second (both orders, greedy, with search) at each rollout batch size; `bf16`: bf16 weights.
    `plain`: each repetition also judges with the generator's work-sharing off (`share_prefill`,
    `grouped_attention`), the two interleaved; seconds are medians over `reps`, and `same_verdicts` says whether
    both ways gave every order the same letter. `float32_plain`: each repetition also judges with a second judge in
    float32 weights with the work-sharing off (neither lever), interleaved: `float32_plain_ratio` is its seconds over
    the default's, both on this processor."""
    from toy.judge_stages import judging_settings
    from toy.world import ToyWorld

    examples = ToyWorld(0).examples(n, "test", ("wiki", "science"), style="short")
    pairs = [(e["question"], e["answer_a"], e["answer_b"]) for e in examples]
    retrievers = {c: str(qs / "indexes" / c) for c in ("wiki", "arxiv")}
    out = {"pairs": n, "bf16": bf16, "reps": reps}
    settings = judging_settings(CONFIG)
    for batch in batches:
        seconds, letters = _timed(qs, pairs, retrievers, settings, batch, reps,
                                  {"shared": bf16, **({"plain": bf16} if plain else {}),
                                   **({"float32 plain": False} if float32_plain else {})})
        row = out[str(batch)] = {"seconds": round(median(seconds["shared"]), 2),
                                 "pairs_per_s": round(n / median(seconds["shared"]), 3),
                                 "answered_orders": _answered(letters["shared"])}
        if plain:
            row.update(_against(seconds, letters, "plain", n, "plain_", "same_verdicts"))
            row["ratio"] = row.pop("plain_ratio")
        if float32_plain:
            row.update(_against(seconds, letters, "float32 plain", n, "float32_plain_", "same_verdicts_as_float32"))
    return out


def _timed(qs: Path, pairs: list, retrievers: dict, settings: dict, batch: int, reps: int,
           ways: dict[str, bool]) -> tuple[dict[str, list[float]], dict[str, set[str]]]:
    """Each way (name: bf16 weights?) judges `pairs` once a repetition, interleaved; only "shared" keeps the
    generator's work-sharing on. Ways of one dtype share a judge. Returns seconds and the letters each way gave."""
    from openrm.judge import Judge

    with contextlib.ExitStack() as stack:
        judges = {}
        for bf16 in dict.fromkeys(ways.values()):
            judges[bf16] = stack.enter_context(Judge.from_pretrained(
                qs / MODEL, retrievers=retrievers, batch_size=batch, dtype="bfloat16" if bf16 else None, **settings))
            judges[bf16].compare_batch(pairs[:2])  # warm-up
        seconds: dict[str, list[float]] = {w: [] for w in ways}
        letters: dict[str, set[str]] = {w: set() for w in ways}
        for _ in range(reps):
            for way, bf16 in ways.items():
                judge = judges[bf16]
                generator = judge.generator
                generator.share_prefill = generator.grouped_attention = generator.growing_cache = way == "shared"
                t = time.perf_counter()
                verdicts = judge.compare_batch(pairs)
                seconds[way].append(time.perf_counter() - t)
                letters[way].add("".join(r.answer or "-" for v in verdicts for r in v.orders))
    return seconds, letters


def _answered(letters: set[str]) -> int:
    return sum(c != "-" for c in min(letters))


def _against(seconds: dict, letters: dict, way: str, n: int, prefix: str, same: str) -> dict:
    """A way's seconds, pairs/s, orders answered and its ratio over the default's (median of the repetitions')."""
    base = seconds[way]
    return {f"{prefix}seconds": round(median(base), 2), f"{prefix}pairs_per_s": round(n / median(base), 3),
            f"{prefix}ratio": round(median(b / s for b, s in zip(base, seconds["shared"], strict=True)), 2),
            f"{prefix}answered_orders": _answered(letters[way]), same: len(letters["shared"] | letters[way]) == 1}


def render_pairs(p: dict, qs: Path) -> str:
    weights = "bf16" if p["bf16"] else "float32"
    rows = []
    for b, v in p.items():
        if not isinstance(v, dict):
            continue
        answered = f"{v['answered_orders']} / {2 * p['pairs']}"
        if "plain_seconds" in v:
            rows.append(f"| {b} | {weights} | plain | {v['plain_seconds']} | {v['plain_pairs_per_s']} | "
                        f"{v.get('plain_answered_orders', '-')} / {2 * p['pairs']} |")
        if "float32_plain_seconds" in v:
            rows.append(f"| {b} | float32 | plain | {v['float32_plain_seconds']} | {v['float32_plain_pairs_per_s']} | "
                        f"{v['float32_plain_answered_orders']} / {2 * p['pairs']} |")
        rows.append(f"| {b} | {weights} | shared prefill, grouped attention | {v['seconds']} | "
                    f"**{v['pairs_per_s']}** | {answered} |")
        ratios = [f"{v['ratio']}× over {weights} plain (same verdicts: {v['same_verdicts']})"] if "ratio" in v else []
        if "float32_plain_ratio" in v:
            ratios.append(f"{v['float32_plain_ratio']}× over float32 plain (same verdicts: "
                          f"{v['same_verdicts_as_float32']})")
        if ratios:
            rows.append(f"| {b} | | the default: {'; '.join(ratios)} | | | |")
    return "\n".join([
        SECTION, "",
        f"`.venv/bin/python -m bench.rollout --quickstart {qs} --part pairs` ({p['pairs']} held-out toy pairs, both "
        f"orders, greedy, with search over the bm25 toy indexes, the judge in {qs / MODEL}; medians of {p['reps']}; "
        "torch 2.13.0 CPU, 2 cores, alone on the machine).", "",
        "| rollouts per batch | weights | generator | seconds | pairs / s | orders answered |",
        "|---|---|---|---|---|---|", *rows, ""])
