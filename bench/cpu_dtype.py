"""SmolLM2-135M-Instruct on this CPU in float32, under bf16 autocast (float32 weights) and with bf16 weights:
forward+backward and greedy generation at the shapes the quickstart and the real-text recipe use, at 1 and 2 torch
threads, the modes interleaved in every repetition, medians and ratios against float32 in one run.

    .venv/bin/python -m bench.cpu_dtype --out runs/bench/cpu-dtype.json
    python -m bench.cpu_dtype --device cuda --threads 1 --big-threads 1 --out gpu-dtype.json   # the same on a GPU

Run it alone on the machine: a second torch job on the same cores changes every number. The loss of each mode is
printed beside its time, so a mode that is fast because it computes something else shows.
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import json
import statistics
import time
from pathlib import Path

# (name, batch, tokens): the GRPO update of the quickstart (16 completions of its short toy prompts), an SFT step of
# the real-text warm-up (8 trajectories of the retrieved trace)
TRAIN_SHAPES = (("train: toy GRPO update", 16, 256), ("train: real-text SFT step", 8, 1024))
# (name, rows, prompt tokens, new tokens): one judging batch of the quickstart's table
GENERATE_SHAPES = (("generate: toy judging batch", 32, 192, 48),)
MODES = ("float32", "bf16 autocast", "bf16 weights")


def timed(fn, mode: str, sync=lambda: None):
    start = time.perf_counter()
    value = fn(mode)
    sync()  # a GPU's kernels run after the call returns
    return time.perf_counter() - start, value


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="smollm2-135m-instruct", help="a packaged model's short name or a folder")
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--reps", type=int, default=3, help="interleaved repetitions (medians); one untimed run first")
    ap.add_argument("--big-threads", type=int, nargs="+", default=[2],
                    help="threads at which the real-text SFT shape runs (it takes minutes at one thread)")
    ap.add_argument("--out", type=Path, default=None, help="write the numbers here as JSON")
    ap.add_argument("--device", default="cpu", choices=("cpu", "cuda"), help="where the model runs (cuda: one GPU)")
    ap.add_argument("--random-weights", action="store_true",
                    help="the model's config with random weights (the same shapes, so the same times; --model may "
                         "then be a folder holding only config.json)")
    args = ap.parse_args()

    import torch
    from transformers import AutoModelForCausalLM

    from openrm.models import resolve

    if args.device == "cuda" and not torch.cuda.is_available():
        ap.error("--device cuda: no CUDA GPU is visible to this torch (torch.cuda.is_available() is False)")
    path = resolve(args.model)
    torch.manual_seed(0)
    if args.random_weights:
        from transformers import AutoConfig

        base = AutoModelForCausalLM.from_config(AutoConfig.from_pretrained(path), dtype=torch.float32)
        models = {"float32": base, "bf16 weights": copy.deepcopy(base).to(torch.bfloat16)}
    else:
        models = {"float32": AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32)}
        models["bf16 weights"] = AutoModelForCausalLM.from_pretrained(path, dtype=torch.bfloat16)
    models = {mode: model.to(args.device) for mode, model in models.items()}
    sync = torch.cuda.synchronize if args.device == "cuda" else (lambda: None)
    vocab = models["float32"].config.vocab_size
    gen = torch.Generator().manual_seed(0)

    def run_mode(mode: str):
        model = models["bf16 weights" if mode == "bf16 weights" else "float32"]
        return model, (torch.autocast(args.device, dtype=torch.bfloat16) if mode == "bf16 autocast"
                       else contextlib.nullcontext())

    def train_step(mode: str, ids):
        model, ctx = run_mode(mode)
        model.train()
        model.zero_grad(set_to_none=True)
        with ctx:
            loss = model(input_ids=ids, labels=ids).loss
        loss.backward()
        return float(loss.detach())

    def generate(mode: str, ids, new: int):
        model, ctx = run_mode(mode)
        model.eval()
        with torch.no_grad(), ctx:
            out = model.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=new, min_new_tokens=new,
                                 do_sample=False, pad_token_id=0)
        return out[:, ids.shape[1]:]

    results = []
    for threads in args.threads:
        torch.set_num_threads(threads)
        work = []
        for name, batch, tokens in TRAIN_SHAPES:
            if name.startswith("train: real") and threads not in args.big_threads:
                continue
            ids = torch.randint(0, vocab, (batch, tokens), generator=gen).to(args.device)  # [B, T]
            work.append((name, f"{batch} x {tokens}", lambda mode, ids=ids: train_step(mode, ids)))
        for name, rows, prompt, new in GENERATE_SHAPES:
            ids = torch.randint(0, vocab, (rows, prompt), generator=gen).to(args.device)  # [R, P]
            work.append((name, f"{rows} x ({prompt} + {new})", lambda mode, ids=ids, new=new: generate(mode, ids, new)))
        for name, shape, fn in work:
            values = {mode: fn(mode) for mode in MODES}  # untimed: allocator and oneDNN kernels warm
            times: dict[str, list[float]] = {mode: [] for mode in MODES}
            for _ in range(args.reps):
                for mode in MODES:
                    seconds, values[mode] = timed(fn, mode, sync)
                    times[mode].append(seconds)
            med = {mode: statistics.median(ts) for mode, ts in times.items()}
            row = {"workload": name, "shape": shape, "threads": threads,
                   **{f"{mode} s": round(med[mode], 3) for mode in MODES},
                   **{f"{mode} x": round(med["float32"] / med[mode], 2) for mode in MODES[1:]}}
            if name.startswith("train"):
                row.update({f"{mode} loss": round(values[mode], 4) for mode in MODES})
            else:  # greedy tokens that match float32's, position by position
                row.update({f"{mode} same tokens": round(float((values[mode] == values["float32"]).float().mean()), 3)
                            for mode in MODES[1:]})
            results.append(row)
            print(json.dumps(row), flush=True)
    header = ("| workload | shape | threads | float32 s | bf16 autocast s | bf16 weights s | autocast × | "
              "bf16 weights × | agreement |")
    print(header + "\n" + "|---" * 9 + "|")
    for r in results:
        agree = (f"loss {r['float32 loss']} / {r['bf16 autocast loss']} / {r['bf16 weights loss']}"
                 if "float32 loss" in r else
                 f"same greedy tokens {r['bf16 autocast same tokens']:.2f} / {r['bf16 weights same tokens']:.2f}")
        print(f"| {r['workload']} | {r['shape']} | {r['threads']} | {r['float32 s']:.2f} | "
              f"{r['bf16 autocast s']:.2f} | {r['bf16 weights s']:.2f} | {r['bf16 autocast x']:.2f} | "
              f"{r['bf16 weights x']:.2f} | {agree} |")
    if args.out:
        from plumbing import atomic

        atomic.write_json(args.out, {"torch": torch.__version__, "device": args.device,
                                     "random_weights": args.random_weights, "rows": results}, indent=2)


if __name__ == "__main__":
    main()
