"""Rollout overhead, judging throughput and the parts of a GRPO step, on the quickstart's SmolLM2 judge on CPU.

    make quickstart                                   # builds runs/quickstart (SmolLM2 after its SFT warm-up)
    .venv/bin/python -m bench.rollout --quickstart runs/quickstart [--part overhead|pairs|grpo] [--write-results]

1. Overhead: `openrm.rollout.rollout` (multi-turn, searches against the bm25 toy indexes, temperature 1, seed 0) on
   R prompts, in both session modes: "resend" (`HFGenerator(reuse_cache=False)`: every turn prefills each row's
   whole context again, the older rollout) and "kv" (`HFGenerator()`: each row keeps its KV cache and a
   turn prefills only its new tokens). Each mode's wall time is divided by two plain batched `model.generate`
   calls built from that mode's own trajectories (S sampled tokens in all, row i with information tokens I_i):
   - plain: the R prompts, every row forced to sample exactly S / R tokens (min = max new tokens);
   - plain + information: row i's prompt followed by its I_i, left-padded, so the same information
     tokens are prefilled once, every row forced to sample exactly S / R tokens;
   - plain + information, own lengths (the yardstick of the <= 1.10 goal): the same inputs, row i forced to sample
     exactly its own n_i sampled tokens (EOS suppressed, a stopping criterion per row). One batched `generate` then
     runs max n_i steps, as any batched generation of those rows must: the same sampled and prefilled tokens per
     row as the rollout, in one turn. The S / R yardsticks run mean n_i steps instead, so on a model whose step
     cost does not depend on the batch (this tiny one on CPU) no rollout can come near them when lengths differ.
   Workloads are interleaved over --reps repetitions and medians are reported; a forward hook counts model calls.
   A greedy pass of both modes checks that they give the same ids and log-probs on the trained judge.
2. Pairs: `Judge.compare_batch` (both orders, greedy, with search) on held-out pairs at batch 1, 8 and 32 rollouts:
   judged pairs per second.
3. GRPO step: `train/grpo_openrm.py` with configs/grpo_openrm/smollm2_cpu.yaml for a few steps, timing the
   generator, the ToolBox, the reward function and the rollout's own bookkeeping; the update is the rest of the step
   (the trainer's forward/backward and optimizer).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

SECTION = "## Training: GRPO step time, SmolLM2 judge"
KV_SECTION = "## Training: rollout overhead, SmolLM2 judge"
PAIRS_SECTION = "## Judging throughput, SmolLM2 judge"
MODEL = "judge-sft"
CONFIG = ROOT / "configs/grpo_openrm/smollm2_cpu.yaml"
MODES = ("resend", "kv")
KINDS = ("rollout", "plain", "plain_info", "plain_own")
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


class Calls:
    """Counts the model's forward calls and the token positions they are fed (a forward pre-hook)."""

    def __init__(self, model):
        self.calls = self.tokens = 0
        model.register_forward_pre_hook(self, with_kwargs=True)

    def __call__(self, module, args, kwargs):
        ids = kwargs.get("input_ids", args[0] if args else None)
        self.calls += 1
        self.tokens += 0 if ids is None else ids.numel()

    def take(self) -> tuple[int, int]:
        out = (self.calls, self.tokens)
        self.calls = self.tokens = 0
        return out


def overhead(qs: Path, rows: int, reps: int) -> dict:
    import statistics

    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from openrm import protocol
    from openrm.generation import HFGenerator, SamplingParams
    from openrm.rollout import RolloutConfig, prompt_token_ids, rollout
    from openrm.tools import ToolBox
    from toy.world import ToyWorld

    model_dir = qs / MODEL
    tok = AutoTokenizer.from_pretrained(model_dir)
    model = AutoModelForCausalLM.from_pretrained(model_dir).eval()
    calls = Calls(model)
    toolbox = ToolBox.from_locations({c: str(qs / "indexes" / c) for c in ("wiki", "arxiv")}, topk=1)
    examples = ToyWorld(0).examples(rows, "test", ("wiki", "science"), style="short")
    prompts = [prompt_token_ids(tok, protocol.judge_messages(e, style="compact")) for e in examples]
    cfg = RolloutConfig(max_completion_tokens=192, max_information_tokens=64,
                        sampling=SamplingParams(max_new_tokens=40, seed=0))

    def run_rollout(mode: str, run_cfg: RolloutConfig = cfg):
        return rollout(prompts, HFGenerator(model, tok, reuse_cache=mode == "kv"), toolbox, tok, run_cfg)

    def plain(inputs: list[list[int]], new: int) -> None:
        batch = tok.pad({"input_ids": inputs}, return_tensors="pt", padding_side="left")
        with torch.inference_mode():
            model.generate(**batch, do_sample=True, max_new_tokens=new, min_new_tokens=new,
                           pad_token_id=tok.pad_token_id)

    def plain_own(inputs: list[list[int]], counts: list[int]) -> None:
        from transformers import StoppingCriteria, StoppingCriteriaList

        batch = tok.pad({"input_ids": inputs}, return_tensors="pt", padding_side="left")
        width, wanted = batch["input_ids"].shape[1], torch.tensor(counts)

        class Exactly(StoppingCriteria):
            def __call__(self, input_ids, scores, **kwargs):
                return input_ids.shape[1] - width >= wanted  # [B]

        eos = model.generation_config.eos_token_id
        with torch.inference_mode():
            out = model.generate(**batch, do_sample=True, max_new_tokens=max(counts),
                                 stopping_criteria=StoppingCriteriaList([Exactly()]), pad_token_id=tok.pad_token_id,
                                 suppress_tokens=[eos] if isinstance(eos, int) else list(eos or []))
        assert out.shape[1] - width == max(counts)

    for mode in MODES:
        run_rollout(mode)  # warm-up; a seeded rollout gives the same trajectories every time
    shapes, workloads = {}, {}
    for mode in MODES:
        trajectories = run_rollout(mode)
        sampled = sum(sum(tr.env_mask) for tr in trajectories)
        information = [information_of(tr) for tr in trajectories]
        per_row = max(1, round(sampled / rows))
        shapes[mode] = {"sampled_tokens": sampled, "env_tokens": sum(len(tr.env_mask) for tr in trajectories) - sampled,
                        "information_tokens": sum(map(len, information)),
                        "searches": sum(tr.n_calls for tr in trajectories),
                        "turns": sum(tr.turns for tr in trajectories),
                        "longest_row_sampled": max(sum(tr.env_mask) for tr in trajectories)}
        with_info = [p + info for p, info in zip(prompts, information, strict=True)]
        workloads[f"rollout_{mode}"] = lambda mode=mode: run_rollout(mode)
        workloads[f"plain_{mode}"] = lambda per_row=per_row: plain(prompts, per_row)
        workloads[f"plain_info_{mode}"] = lambda with_info=with_info, per_row=per_row: plain(with_info, per_row)
        counts = [sum(tr.env_mask) for tr in trajectories]
        workloads[f"plain_own_{mode}"] = lambda with_info=with_info, counts=counts: plain_own(with_info, counts)
    times: dict[str, list[float]] = defaultdict(list)
    counted: dict[str, tuple[int, int]] = {}
    toolbox_s: dict[str, float] = {}
    calls.take()
    for _ in range(reps):
        for name, work in workloads.items():
            TIMERS.clear()
            t = time.perf_counter()
            work()
            times[name].append(time.perf_counter() - t)
            counted[name] = calls.take()
            toolbox_s[name] = TIMERS["toolbox"]
    med = {name: statistics.median(ts) for name, ts in times.items()}
    out: dict = {"rows": rows, "reps": reps}
    for mode in MODES:
        out[mode] = {**shapes[mode], "rollout_s": round(med[f"rollout_{mode}"], 3),
                     "plain_s": round(med[f"plain_{mode}"], 3), "plain_info_s": round(med[f"plain_info_{mode}"], 3),
                     "ratio_plain": round(med[f"rollout_{mode}"] / med[f"plain_{mode}"], 3),
                     "ratio_plain_info": round(med[f"rollout_{mode}"] / med[f"plain_info_{mode}"], 3),
                     "plain_own_s": round(med[f"plain_own_{mode}"], 3),
                     "ratio_plain_own": round(med[f"rollout_{mode}"] / med[f"plain_own_{mode}"], 3),
                     "plain_own_s_all": [round(x, 3) for x in times[f"plain_own_{mode}"]],
                     "toolbox_s": round(toolbox_s[f"rollout_{mode}"], 3),
                     "rollout_s_all": [round(x, 3) for x in times[f"rollout_{mode}"]],
                     "plain_info_s_all": [round(x, 3) for x in times[f"plain_info_{mode}"]],
                     "forward_calls": {k: counted[f"{k}_{mode}"][0] for k in KINDS},
                     "fed_positions": {k: counted[f"{k}_{mode}"][1] for k in KINDS}}
    out["greedy_identity"] = greedy_identity(run_rollout, cfg)
    return out


def information_of(trajectory) -> list[int]:
    """The environment's tokens of a trajectory in order, without the masked EOS that follows `</answer>`."""
    env = [t for t, m in zip(trajectory.completion_ids, trajectory.env_mask, strict=True) if m == 0]
    return env[:-1] if trajectory.finish_reason == "answer" and env else env


def greedy_identity(run_rollout, cfg) -> dict:
    """Both modes at temperature 0 on the trained judge: rows whose ids differ, and the largest log-prob gap."""
    from dataclasses import replace

    greedy = replace(cfg, sampling=replace(cfg.sampling, temperature=0.0))
    kv, resend = run_rollout("kv", greedy), run_rollout("resend", greedy)
    same = [a.completion_ids == b.completion_ids and a.env_mask == b.env_mask for a, b in zip(kv, resend, strict=True)]
    gap = max((abs(x - y) for a, b, ok in zip(kv, resend, same, strict=True) if ok
               for x, y in zip(a.logprobs, b.logprobs, strict=True)), default=0.0)
    return {"rows_identical": sum(same), "rows": len(same), "max_logprob_gap": gap,
            "searches": sum(t.n_calls for t in kv), "sampled_tokens": sum(sum(t.env_mask) for t in kv)}


def grpo_share(qs: Path, steps: int, bf16: bool = False) -> dict:
    from openrm import reward as reward_module
    from train import judge_trainer

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

    judge_trainer.make_openrm_reward = timed_reward
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
    trainer = judge_trainer.train_judge(*judge_trainer.parse([
        "--config", str(CONFIG), "--model_name_or_path",
        str(qs / MODEL), "--dataset", str(qs / "data" / "dataset"), "--output_dir", str(out),
        "--max_steps", str(steps), "--save_strategy", "no", "--retrievers", f"wiki={qs / 'indexes' / 'wiki'}",
        f"arxiv={qs / 'indexes' / 'arxiv'}", "--bf16", str(bf16).lower()]))
    wall = time.perf_counter() - t
    step_time = sum(h["step_time"] for h in trainer.state.log_history if "step_time" in h)
    bookkeeping = TIMERS["rollout"] - TIMERS["generate"] - TIMERS["toolbox"]
    outside = TIMERS["toolbox"] + bookkeeping + TIMERS["reward"]
    return {"steps": steps, "bf16": bf16, "step_time_s": round(step_time, 2), "wall_s": round(wall, 2),
            "generate_s": round(TIMERS["generate"], 2), "toolbox_s": round(TIMERS["toolbox"], 3),
            "bookkeeping_s": round(bookkeeping, 3), "reward_s": round(TIMERS["reward"], 3),
            "outside_share": round(outside / step_time, 4)}


def pairs_per_second(qs: Path, n: int, batches: tuple[int, ...] = (1, 8, 32), bf16: bool = False) -> dict:
    """Judged pairs per second (both orders, greedy, with search) at each rollout batch size; `bf16`: bf16 weights."""
    from openrm.judge import Judge
    from toy.judge_stages import judging_settings
    from toy.world import ToyWorld

    examples = ToyWorld(0).examples(n, "test", ("wiki", "science"), style="short")
    pairs = [(e["question"], e["answer_a"], e["answer_b"]) for e in examples]
    retrievers = {c: str(qs / "indexes" / c) for c in ("wiki", "arxiv")}
    out = {"pairs": n, "bf16": bf16}
    for batch in batches:
        with Judge.from_pretrained(qs / MODEL, retrievers=retrievers, batch_size=batch,
                                   dtype="bfloat16" if bf16 else None, **judging_settings(CONFIG)) as judge:
            judge.compare_batch(pairs[:2])  # warm-up
            t = time.perf_counter()
            verdicts = judge.compare_batch(pairs)
            seconds = time.perf_counter() - t
        out[str(batch)] = {"seconds": round(seconds, 2), "pairs_per_s": round(n / seconds, 3),
                           "answered_orders": sum(r.answer is not None for v in verdicts for r in v.orders)}
    return out


def render_pairs(p: dict, qs: Path) -> str:
    rows = [f"| {b} | {v['seconds']} | **{v['pairs_per_s']}** | {v['answered_orders']} / {2 * p['pairs']} |"
            for b, v in p.items() if b not in ("pairs", "bf16")]
    return "\n".join([
        PAIRS_SECTION, "",
        f"`.venv/bin/python -m bench.rollout --quickstart {qs} --part pairs` ({p['pairs']} held-out toy pairs, both "
        "orders, greedy, with search over the bm25 toy indexes, the judge after the quickstart's SFT warm-up; "
        "torch 2.13.0 CPU, 2 cores, alone on the machine).", "",
        "| rollouts per batch | seconds | pairs / s | orders answered |", "|---|---|---|---|", *rows, ""])


def render(g: dict, qs: Path) -> str:
    import yaml

    update = g["step_time_s"] - g["generate_s"] - g["toolbox_s"] - g["bookkeeping_s"] - g["reward_s"]
    cfg = yaml.safe_load((ROOT / "configs/grpo_openrm/smollm2_cpu.yaml").read_text(encoding="utf-8"))
    per_step = cfg["per_device_train_batch_size"] * cfg.get("gradient_accumulation_steps", 1)
    shape = f"{per_step // cfg['num_generations']} prompts x {cfg['num_generations']} completions a step"
    return "\n".join([
        SECTION, "",
        f"`.venv/bin/python -m bench.rollout --quickstart {qs} --part grpo --steps {g['steps']}` (SmolLM2 after the "
        f"quickstart's SFT warm-up, configs/grpo_openrm/smollm2_cpu.yaml: {shape}; torch "
        "2.13.0 CPU, 2 cores, bm25 toy indexes in process). Seconds summed over the steps.", "",
        "| part of the step | seconds | share |", "|---|---|---|",
        *(f"| {name} | {value:.2f} | {100 * value / g['step_time_s']:.1f} % |" for name, value in (
            ("generation (model)", g["generate_s"]), ("retrieval (ToolBox)", g["toolbox_s"]),
            ("rollout bookkeeping", g["bookkeeping_s"]), ("scoring (reward)", g["reward_s"]),
            ("the update (forward/backward, optimizer, TRL's own work)", update))),
        f"| **one step** | **{g['step_time_s'] / g['steps']:.2f}** | |", ""])


def render_kv(o: dict, qs: Path) -> str:
    r, k = o["resend"], o["kv"]

    def row(label: str, key: str, fmt=str) -> str:
        return f"| {label} | {fmt(r[key])} | {fmt(k[key])} |"

    def calls(x: dict, name: str) -> str:
        return f"{x['forward_calls'][name]} / {x['fed_positions'][name]:,}"

    g = o["greedy_identity"]
    return "\n".join([
        KV_SECTION, "",
        f"`.venv/bin/python -m bench.rollout --quickstart {qs} --part overhead --reps {o['reps']}` (the "
        f"quickstart's SmolLM2 judge after its SFT warm-up, {o['rows']} short toy test pairs, compact prompt, "
        "temperature 1, seed 0, max_completion_tokens 192, 40 per turn; torch 2.13.0 CPU, bm25 toy indexes in "
        "process). Medians of "
        f"{o['reps']} interleaved runs of every workload; the bench's docstring defines the yardsticks.", "",
        "| measured | resend (every turn re-prefills) | kv (cache kept, the default) |", "|---|---|---|",
        row("rollout wall time, s", "rollout_s"),
        row("sampled tokens", "sampled_tokens"), row("information tokens", "information_tokens"),
        f"| turns / searches | {r['turns']} / {r['searches']} | {k['turns']} / {k['searches']} |",
        row("longest row's sampled tokens", "longest_row_sampled"),
        f"| model calls / positions fed: rollout | {calls(r, 'rollout')} | {calls(k, 'rollout')} |",
        f"| model calls / positions fed: plain + information | {calls(r, 'plain_info')} | {calls(k, 'plain_info')} |",
        f"| model calls / positions fed: plain + information, own lengths | {calls(r, 'plain_own')} | "
        f"{calls(k, 'plain_own')} |",
        row("plain (prompts, S / R tokens each), s", "plain_s"),
        row("plain + information (prompt + its information tokens, S / R each), s", "plain_info_s"),
        row("plain + information, own lengths (row i samples its n_i), s", "plain_own_s"),
        row("rollout / plain", "ratio_plain"),
        row("rollout / (plain + information)", "ratio_plain_info"),
        row("**rollout / (plain + information, own lengths)** (goal ≤ 1.10)", "ratio_plain_own", lambda v: f"**{v}**"),
        "",
        f"Greedy identity on the trained judge (temperature 0, both modes): {g['rows_identical']} of {g['rows']} "
        f"rows have identical ids and masks ({g['sampled_tokens']} sampled tokens, {g['searches']} searches); "
        f"largest log-prob difference {g['max_logprob_gap']:.1e}.", ""])


def write_section(results: Path, section: str, text: str, after: str | None = None) -> None:
    """Replace `section` in RESULTS.md with `text`; a new one goes right after section `after` (else at the end)."""
    old = results.read_text(encoding="utf-8")
    anchor = section if section in old else after if after and after in old else None
    if anchor is None:
        results.write_text(old.rstrip() + "\n\n" + text, encoding="utf-8")
        return
    head, _, rest = old.partition(anchor)
    cut = rest.find("\n## ")
    body, tail = (rest, "") if cut < 0 else (rest[:cut], rest[cut:].lstrip("\n"))
    head = head.rstrip() if anchor == section else (head + anchor + body).rstrip()
    results.write_text(head + "\n\n" + text.rstrip() + "\n" + ("\n" + tail if tail else ""), encoding="utf-8")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quickstart", type=Path, default=ROOT / "runs/quickstart")
    ap.add_argument("--rows", type=int, default=32)
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--reps", type=int, default=5, help="interleaved runs of every overhead workload (medians)")
    ap.add_argument("--part", choices=("all", "overhead", "pairs", "grpo"), default="all")
    ap.add_argument("--pairs", type=int, default=32, help="held-out pairs judged at each batch size")
    ap.add_argument("--batches", type=int, nargs="+", default=[1, 8, 32], help="rollouts per batch (--part pairs)")
    ap.add_argument("--bf16", action="store_true",
                    help="GRPO under bf16 autocast (float32 weights), judging with bf16 weights; default float32")
    ap.add_argument("--write-results", action="store_true")
    args = ap.parse_args()
    if not (args.quickstart / MODEL).is_dir():
        sys.exit(f"{args.quickstart}/{MODEL} missing: run `make quickstart` first")
    from openrm.generation import HFGenerator
    from openrm.kv_session import KVSession
    from openrm.tools import ToolBox

    timed(HFGenerator, "generate", "generate")  # the resend mode's generation
    timed(KVSession, "generate", "generate")  # the kv mode's (it never calls HFGenerator.generate)
    timed(ToolBox, "run", "toolbox")
    results = ROOT / "bench" / "RESULTS.md"
    o = g = None
    if args.part in ("all", "overhead"):
        o = overhead(args.quickstart, args.rows, args.reps)
        print(json.dumps(o), flush=True)
        text = render_kv(o, args.quickstart)
        print(text)
        if args.write_results:
            write_section(results, KV_SECTION, text, after=SECTION)
    if args.part in ("all", "pairs"):
        p = pairs_per_second(args.quickstart, args.pairs, tuple(args.batches), args.bf16)
        print(json.dumps(p), flush=True)
        text = render_pairs(p, args.quickstart)
        print(text)
        if args.write_results:
            write_section(results, PAIRS_SECTION, text, after=KV_SECTION)
    if args.part in ("all", "grpo"):
        g = grpo_share(args.quickstart, args.steps, args.bf16)
        print(json.dumps(g), flush=True)
    if g is not None:
        text = render(g, args.quickstart)
        print(text)
        if args.write_results:
            write_section(results, SECTION, text)


if __name__ == "__main__":
    main()
