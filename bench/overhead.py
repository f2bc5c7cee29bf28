"""Rollout overhead on the quickstart's SmolLM2 judge (bench.rollout --part overhead, whose docstring defines the
yardsticks): `openrm.rollout.rollout` in both session modes ("resend" re-prefills every turn, "kv" keeps each row's
cache) against plain batched `model.generate` calls built from its own trajectories, model calls counted by a
forward hook, and a greedy pass that checks both modes give the same ids. Imported by bench.rollout.
"""

from __future__ import annotations

import time
from collections import defaultdict
from pathlib import Path

from bench.stopwatch import Stopwatch

SECTION = "## Training: rollout overhead, SmolLM2 judge"
MODES = ("resend", "kv")
KINDS = ("rollout", "plain", "plain_info", "plain_own")


class ForwardCalls:
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


def measure(model_dir: Path, indexes: Path, rows: int, reps: int, watch: Stopwatch) -> dict:
    """The rollout against its three yardsticks in both session modes on `rows` short toy test pairs: medians of
    `reps` interleaved runs of every workload, the trajectories' shapes, model calls and positions fed, the ToolBox's
    seconds (`watch` must time `ToolBox.run` under "toolbox"), and the greedy identity of the two modes."""
    import statistics

    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from openrm import protocol
    from openrm.generation import HFGenerator, SamplingParams
    from openrm.rollout import RolloutConfig, prompt_token_ids, rollout
    from openrm.tools import ToolBox
    from toy.world import ToyWorld

    tok = AutoTokenizer.from_pretrained(model_dir)
    model = AutoModelForCausalLM.from_pretrained(model_dir).eval()
    calls = ForwardCalls(model)
    toolbox = ToolBox.from_locations({c: str(indexes / c) for c in ("wiki", "arxiv")}, topk=1)
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
            watch.clear()
            t = time.perf_counter()
            work()
            times[name].append(time.perf_counter() - t)
            counted[name] = calls.take()
            toolbox_s[name] = watch["toolbox"]
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


def render(o: dict, qs: Path) -> str:
    """The overhead section of bench/RESULTS.md; `qs` is the quickstart folder the command was given."""
    r, k = o["resend"], o["kv"]

    def row(label: str, key: str, fmt=str) -> str:
        return f"| {label} | {fmt(r[key])} | {fmt(k[key])} |"

    def calls(x: dict, name: str) -> str:
        return f"{x['forward_calls'][name]} / {x['fed_positions'][name]:,}"

    g = o["greedy_identity"]
    return "\n".join([
        SECTION, "",
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
