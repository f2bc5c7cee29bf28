"""The GRPO update of SmolLM2-135M-Instruct on this CPU, part by part: TRL's fused LM head scoring every position
(its CPU default) or only the completion's, in float32 or under bf16 autocast, every weight trained or LoRA's, each
row's prompt read with it (TRL) or each distinct prompt read once (`train.shared_prompt`), and the optimizer step.

    .venv/bin/python -m bench.grpo_update --out runs/bench/grpo-update.json
    .venv/bin/python -m bench.grpo_update --dtypes float32     # a processor without native bf16

The model call is TRL's own (`add_fused_lm_head`, `fused_lm_head=True`, log-probs and entropy, the prompt's labels
-100), the loss the mean completion log-prob, as `GRPOTrainer._compute_loss` reads it; inputs are random tokens
at the toy GRPO step's shape (16 completions, 4 of each prompt; prompt and completion lengths by flag). The modes run
interleaved in every repetition after one untimed run; medians and ratios against the TRL default (float32, every
position) in one run. The per-token log-probs of each mode are compared with the default's, so a mode that is fast
because it computes something else shows. Run it alone on the machine.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import statistics
import time
from pathlib import Path

LORA = "LoRA r16, every linear layer"
MODES = (("float32", "every position", "full", "every row"), ("float32", "completion only", "full", "every row"),
         ("float32", "completion only", "full", "each once"),
         ("bf16 autocast", "every position", "full", "every row"),
         ("bf16 autocast", "completion only", "full", "every row"),
         ("bf16 autocast", "completion only", "full", "each once"),
         ("bf16 autocast", "completion only", LORA, "every row"))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="smollm2-135m-instruct", help="a packaged model's short name or a folder")
    ap.add_argument("--batch", type=int, default=16, help="completions in one update (the toy step: 4 x 4)")
    ap.add_argument("--prompt", type=int, default=192, help="prompt tokens (left-padded to the longest)")
    ap.add_argument("--completion", type=int, default=128, help="completion tokens (padded to the longest)")
    ap.add_argument("--generations", type=int, default=4, help="completions of each prompt (GRPO's group size)")
    ap.add_argument("--dtypes", nargs="+", default=["float32", "bf16 autocast"], choices=["float32", "bf16 autocast"],
                    help="which modes to time (bf16 is emulated, and slow, where the processor lacks it)")
    ap.add_argument("--scored", nargs="+", default=["every position", "completion only"],
                    choices=["every position", "completion only"],
                    help="which LM-head modes to time (every position needs the most memory at long prompts)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--reps", type=int, default=3, help="interleaved repetitions (medians); one untimed run first")
    ap.add_argument("--out", type=Path, default=None, help="write the numbers here as JSON")
    args = ap.parse_args()
    if args.batch % args.generations:
        ap.error(f"--batch {args.batch} is not a whole number of groups of --generations {args.generations}")
    modes = [m for m in MODES if m[0] in args.dtypes and m[1] in args.scored]

    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM
    from trl.trainer.utils import add_fused_lm_head

    from openrm.models import resolve
    from train import fused_head
    from train.shared_prompt import shared_prompt_logps

    torch.set_num_threads(args.threads)
    models = {}
    for weights in dict.fromkeys(m[2] for m in modes):
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
    ids[:, :args.prompt] = ids[::args.generations, :args.prompt].repeat_interleave(args.generations, dim=0)
    mask = torch.ones_like(ids)
    labels = ids.clone()
    labels[:, :args.prompt] = -100  # only the completion is scored, as TRL's labels[:, :-logits_to_keep] = -100

    def update(dtype: str, positions: str, weights: str, prompts: str):
        model = models[weights]
        model.zero_grad(set_to_none=True)
        bf16 = dtype == "bf16 autocast"
        scope = fused_head.completion_positions_only() if positions == "completion only" else contextlib.nullcontext()
        with scope:
            if prompts == "each once":
                logps, _ = shared_prompt_logps(model, ids, mask, args.completion, compute_entropy=True,
                                               autocast=lambda: torch.autocast("cpu", torch.bfloat16, enabled=bf16))
            else:
                with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
                    out = model(input_ids=ids, attention_mask=mask, labels=labels, fused_lm_head=True)
                logps = out.log_probs[:, -args.completion:]  # [B, C]
        (-logps.mean()).backward()
        return logps.detach()

    values = {mode: update(*mode) for mode in modes}  # untimed: allocator and oneDNN kernels warm
    times: dict[tuple, list[float]] = {mode: [] for mode in modes}
    for _ in range(args.reps):
        for mode in modes:
            start = time.perf_counter()
            values[mode] = update(*mode)
            times[mode].append(time.perf_counter() - start)
    optim_s = {}
    for weights, model in models.items():  # fused AdamW: transformers' default on torch >= 2.8
        optimizer = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-5, fused=True)
        update(modes[-1][0], "completion only", weights, "every row")
        optimizer.step()  # untimed: the state is allocated here
        steps = []
        for _ in range(args.reps):
            start = time.perf_counter()
            optimizer.step()
            steps.append(time.perf_counter() - start)
        optim_s[weights] = round(statistics.median(steps), 3)

    base = statistics.median(times[modes[0]])
    rows = []
    for mode in modes:
        med = statistics.median(times[mode])
        diff = float((values[mode] - values[modes[0]]).abs().max())
        rows.append({"dtype": mode[0], "scored": mode[1], "weights": mode[2], "prompts": mode[3],
                     "seconds": round(med, 3),
                     "x": round(base / med, 2), "max_logp_diff": round(diff, 5)})
        print(json.dumps(rows[-1]), flush=True)
    shape = f"{args.batch} x ({args.prompt} + {args.completion}), {args.generations} completions a prompt"
    print(f"\nforward+backward, {shape}, {args.threads} threads, medians of {args.reps}:\n")
    print("| dtype | LM head scores | trained weights | prompts read | seconds | × | largest log-prob difference |\n"
          "|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['dtype']} | {r['scored']} | {r['weights']} | {r['prompts']} | {r['seconds']:.2f} | {r['x']:.2f} | "
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
