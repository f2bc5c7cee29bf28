"""Rollout overhead and the non-model share of a GRPO step, on the tiny judge on CPU.

    make quickstart                                   # builds runs/quickstart (tiny judge after SFT warm-up)
    .venv/bin/python bench/rollout.py --quickstart runs/quickstart [--write-results]

1. Overhead: `openrm.rollout.rollout` (multi-turn, searches against the bm25 toy indexes) on R prompts, against
   one plain batched `model.generate` of the same prompts forced to sample the same number of tokens in total
   (min_new_tokens = max_new_tokens = sampled tokens / R). Ratio = rollout wall time / plain wall time.
2. GRPO step: `train/grpo_openrm.py` with the tiny CPU config for a few steps, timing the generator, the ToolBox,
   the reward function and the rollout's own bookkeeping; outside-model share = (ToolBox + bookkeeping + reward) /
   step wall time (model compute = generation + the trainer's forward/backward).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

SECTION = "## Training: rollout overhead and GRPO step time (issue 4)"
TIMERS: dict[str, float] = defaultdict(float)


def timed(cls, name: str, key: str) -> None:
    original = getattr(cls, name)

    def wrapper(*args, **kwargs):
        t = time.perf_counter()
        try:
            return original(*args, **kwargs)
        finally:
            TIMERS[key] += time.perf_counter() - t

    setattr(cls, name, wrapper)


def overhead(qs: Path, rows: int) -> dict:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from openrm import protocol
    from openrm.generation import HFGenerator, SamplingParams
    from openrm.rollout import RolloutConfig, prompt_token_ids, rollout
    from openrm.tools import ToolBox
    from openrm.toyworld import ToyWorld

    model_dir = qs / "tiny-judge-sft"
    tok = AutoTokenizer.from_pretrained(model_dir)
    model = AutoModelForCausalLM.from_pretrained(model_dir).eval()
    toolbox = ToolBox.from_locations({c: str(qs / "indexes" / c) for c in ("wiki", "arxiv")})
    examples = ToyWorld(0).examples(rows, "test")
    prompts = [prompt_token_ids(tok, protocol.judge_messages(e)) for e in examples]
    cfg = RolloutConfig(max_completion_tokens=384, sampling=SamplingParams(max_new_tokens=128, seed=0))
    generator = HFGenerator(model, tok)
    rollout(prompts[:4], generator, toolbox, tok, cfg)  # warm-up
    TIMERS.clear()
    t = time.perf_counter()
    trajectories = rollout(prompts, generator, toolbox, tok, cfg)
    multi = time.perf_counter() - t
    sampled = sum(sum(tr.env_mask) for tr in trajectories)
    per_row = max(1, round(sampled / rows))
    batch = tok.pad({"input_ids": prompts}, return_tensors="pt", padding_side="left")
    t = time.perf_counter()
    with torch.inference_mode():
        model.generate(**batch, do_sample=True, max_new_tokens=per_row, min_new_tokens=per_row,
                       pad_token_id=tok.pad_token_id)
    plain = time.perf_counter() - t
    calls = sum(tr.n_calls for tr in trajectories)
    turns = sum(tr.turns for tr in trajectories)
    return {"rows": rows, "sampled_tokens": sampled, "env_tokens": sum(len(tr.env_mask) for tr in trajectories)
            - sampled, "searches": calls, "turns": turns, "rollout_s": round(multi, 2), "plain_s": round(plain, 2),
            "ratio": round(multi / plain, 3), "generate_s": round(TIMERS["generate"], 2),
            "toolbox_s": round(TIMERS["toolbox"], 3)}


def grpo_share(qs: Path, steps: int) -> dict:
    from openrm import reward as reward_module
    from train import grpo_openrm

    original = reward_module.make_openrm_reward

    def timed_reward(*args, **kwargs):
        fn = original(*args, **kwargs)

        def wrapper(*a, **k):
            t = time.perf_counter()
            try:
                return fn(*a, **k)
            finally:
                TIMERS["reward"] += time.perf_counter() - t

        wrapper.__name__ = fn.__name__
        return wrapper

    grpo_openrm.make_openrm_reward = timed_reward
    import openrm.rollout as rollout_module

    original_rollout = rollout_module.rollout

    def timed_rollout(*a, **k):
        t = time.perf_counter()
        try:
            return original_rollout(*a, **k)
        finally:
            TIMERS["rollout"] += time.perf_counter() - t

    rollout_module.rollout = timed_rollout
    TIMERS.clear()
    out = qs / "bench-grpo"
    t = time.perf_counter()
    trainer = grpo_openrm.main(*grpo_openrm.parse([
        "--config", str(ROOT / "configs/grpo_openrm/tiny_cpu.yaml"), "--model_name_or_path",
        str(qs / "tiny-judge-sft"), "--dataset", str(qs / "data" / "dataset"), "--output_dir", str(out),
        "--max_steps", str(steps), "--save_strategy", "no", "--retrievers", f"wiki={qs / 'indexes' / 'wiki'}",
        f"arxiv={qs / 'indexes' / 'arxiv'}"]))
    wall = time.perf_counter() - t
    step_time = sum(h["step_time"] for h in trainer.state.log_history if "step_time" in h)
    bookkeeping = TIMERS["rollout"] - TIMERS["generate"] - TIMERS["toolbox"]
    outside = TIMERS["toolbox"] + bookkeeping + TIMERS["reward"]
    return {"steps": steps, "step_time_s": round(step_time, 2), "wall_s": round(wall, 2),
            "generate_s": round(TIMERS["generate"], 2), "toolbox_s": round(TIMERS["toolbox"], 3),
            "bookkeeping_s": round(bookkeeping, 3), "reward_s": round(TIMERS["reward"], 3),
            "outside_share": round(outside / step_time, 4)}


def render(o: dict, g: dict, qs: Path) -> str:
    return "\n".join([
        SECTION, "",
        f"`.venv/bin/python bench/rollout.py --quickstart {qs}` (tiny judge after the quickstart's SFT warm-up, "
        "torch 2.13.0 CPU, 2 cores, bm25 toy indexes in process).", "",
        "| measured | value |", "|---|---|",
        f"| rollout, {o['rows']} prompts | {o['rollout_s']} s: {o['sampled_tokens']} sampled + {o['env_tokens']} "
        f"information tokens, {o['turns']} turns, {o['searches']} searches (ToolBox {o['toolbox_s']} s) |",
        f"| plain batched generate, same prompts, same sampled-token total | {o['plain_s']} s |",
        f"| **rollout / plain** | **{o['ratio']}** (goal ≤ 1.10) |",
        f"| GRPO, {g['steps']} steps (tiny_cpu.yaml) | step time {g['step_time_s']} s = generation "
        f"{g['generate_s']} s + ToolBox {g['toolbox_s']} s + rollout bookkeeping {g['bookkeeping_s']} s + reward "
        f"{g['reward_s']} s + the trainer's forward/backward |",
        f"| **outside-model share of step time** | **{100 * g['outside_share']:.2f} %** (goal ≤ 5 %) |", ""])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quickstart", type=Path, default=ROOT / "runs/quickstart")
    ap.add_argument("--rows", type=int, default=32)
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--write-results", action="store_true")
    args = ap.parse_args()
    if not (args.quickstart / "tiny-judge-sft").is_dir():
        sys.exit(f"{args.quickstart}/tiny-judge-sft missing: run `make quickstart` first")
    from openrm.generation import HFGenerator
    from openrm.tools import ToolBox

    timed(HFGenerator, "generate", "generate")
    timed(ToolBox, "run", "toolbox")
    o = overhead(args.quickstart, args.rows)
    print(json.dumps(o), flush=True)
    g = grpo_share(args.quickstart, args.steps)
    print(json.dumps(g), flush=True)
    text = render(o, g, args.quickstart)
    print(text)
    if args.write_results:
        results = ROOT / "bench" / "RESULTS.md"
        old = results.read_text(encoding="utf-8")
        if SECTION in old:
            head, _, rest = old.partition(SECTION)
            old = head.rstrip() + "\n\n" + (rest[rest.find("\n## "):].lstrip("\n") if "\n## " in rest else "")
        results.write_text(old.rstrip() + "\n\n" + text, encoding="utf-8")


if __name__ == "__main__":
    main()
