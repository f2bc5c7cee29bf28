"""The GRPO update of SmolLM2-135M-Instruct on this CPU, part by part: TRL's fused LM head scoring every position
(its CPU default) or only the completion's, in float32 or under bf16 autocast, every weight trained or LoRA's, and
the optimizer step.

    .venv/bin/python -m bench.grpo_update --out runs/bench/grpo-update.json

The model call is TRL's own (`add_fused_lm_head`, `fused_lm_head=True`, log-probs and entropy, the prompt's labels
-100), the loss the mean completion log-prob, as `GRPOTrainer._compute_loss` reads it; inputs are random tokens
at the toy GRPO step's shape (16 completions; prompt and completion lengths by flag). The modes run interleaved in
every repetition after one untimed run; medians and ratios against the TRL default (float32, every position) in
one run. The per-token log-probs of each mode are compared with the default's, so a mode that is fast because it
computes something else shows. Run it alone on the machine.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import statistics
import time
from pathlib import Path

MODES = (("float32", "every position", "full"), ("float32", "completion only", "full"),
         ("bf16 autocast", "every position", "full"), ("bf16 autocast", "completion only", "full"),
         ("bf16 autocast", "completion only", "LoRA r16, every linear layer"))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="smollm2-135m-instruct", help="a packaged model's short name or a folder")
    ap.add_argument("--batch", type=int, default=16, help="completions in one update (the toy step: 4 x 4)")
    ap.add_argument("--prompt", type=int, default=192, help="prompt tokens (left-padded to the longest)")
    ap.add_argument("--completion", type=int, default=128, help="completion tokens (padded to the longest)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--reps", type=int, default=3, help="interleaved repetitions (medians); one untimed run first")
    ap.add_argument("--out", type=Path, default=None, help="write the numbers here as JSON")
    args = ap.parse_args()

    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM
    from trl.trainer.utils import add_fused_lm_head

    from openrm.models import resolve
    from train import fused_head

    torch.set_num_threads(args.threads)
    models = {}
    for weights in ("full", MODES[-1][2]):
        model = AutoModelForCausalLM.from_pretrained(resolve(args.model), dtype=torch.float32)
        add_fused_lm_head(model, outputs=("log_probs", "entropy"))  # before PEFT, as TRL adds it
        if weights != "full":  # TRL's --use_peft --lora_r 16 --lora_target_modules all-linear
            model = get_peft_model(model, LoraConfig(r=16, lora_alpha=32, target_modules="all-linear",
                                                     task_type="CAUSAL_LM"))
        models[weights] = model.train()
    model = models["full"]
    gen = torch.Generator().manual_seed(0)
    length = args.prompt + args.completion
    ids = torch.randint(0, model.config.vocab_size, (args.batch, length), generator=gen)  # [B, P + C]
    mask = torch.ones_like(ids)
    labels = ids.clone()
    labels[:, :args.prompt] = -100  # only the completion is scored, as TRL's labels[:, :-logits_to_keep] = -100

    def update(dtype: str, positions: str, weights: str):
        model = models[weights]
        model.zero_grad(set_to_none=True)
        ctx = torch.autocast("cpu", dtype=torch.bfloat16) if dtype == "bf16 autocast" else contextlib.nullcontext()
        scope = fused_head.completion_positions_only() if positions == "completion only" else contextlib.nullcontext()
        with scope, ctx:
            out = model(input_ids=ids, attention_mask=mask, labels=labels, fused_lm_head=True)
        logps = out.log_probs[:, -args.completion:]  # [B, C]
        (-logps.mean()).backward()
        return logps.detach()

    values = {mode: update(*mode) for mode in MODES}  # untimed: allocator and oneDNN kernels warm
    times: dict[tuple, list[float]] = {mode: [] for mode in MODES}
    for _ in range(args.reps):
        for mode in MODES:
            start = time.perf_counter()
            values[mode] = update(*mode)
            times[mode].append(time.perf_counter() - start)
    optim_s = {}
    for weights, model in models.items():  # fused AdamW: transformers' default on torch >= 2.8
        optimizer = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-5, fused=True)
        update(MODES[-1][0], MODES[-1][1], weights)
        optimizer.step()  # untimed: the state is allocated here
        steps = []
        for _ in range(args.reps):
            start = time.perf_counter()
            optimizer.step()
            steps.append(time.perf_counter() - start)
        optim_s[weights] = round(statistics.median(steps), 3)

    base = statistics.median(times[MODES[0]])
    rows = []
    for mode in MODES:
        med = statistics.median(times[mode])
        diff = float((values[mode] - values[MODES[0]]).abs().max())
        rows.append({"dtype": mode[0], "scored": mode[1], "weights": mode[2], "seconds": round(med, 3),
                     "x": round(base / med, 2), "max_logp_diff": round(diff, 5)})
        print(json.dumps(rows[-1]), flush=True)
    shape = f"{args.batch} x ({args.prompt} + {args.completion})"
    print(f"\nforward+backward, {shape} tokens, {args.threads} threads, medians of {args.reps}:\n")
    print("| dtype | LM head scores | trained weights | seconds | × | largest log-prob difference |\n"
          "|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['dtype']} | {r['scored']} | {r['weights']} | {r['seconds']:.2f} | {r['x']:.2f} | "
              f"{r['max_logp_diff']:.1e} |")
    for weights, model in models.items():
        trained = sum(p.numel() for p in model.parameters() if p.requires_grad) / 1e6
        print(f"optimizer step (fused AdamW, {weights}, {trained:.1f} M float32 parameters): {optim_s[weights]:.2f} s")
    if args.out:
        from plumbing import atomic

        atomic.write_json(args.out, {"torch": torch.__version__, "shape": shape, "threads": args.threads,
                                     "rows": rows, "optimizer_s": optim_s}, indent=2)


if __name__ == "__main__":
    main()
