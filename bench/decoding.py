"""One-token decoding steps of a GRPO rollout under bf16 mixed precision on this CPU, four ways: the model as
accelerate prepares it for a trainer (float32 weights, its forward in bf16 autocast) prefilled under autocast, then
decoding with that forward (`autocast`) or with the unwrapped float32 forward (`float32`, the default); or a bf16
copy of its weights (`openrm.rollout.Bf16Copy`, what `make_trl_rollout_func(bf16_copy=True)` generates with)
prefilling and decoding with the cache in float32 (`bf16 copy`) or in bf16 (`bf16 copy, bf16 cache`:
`HFGenerator(growing_cache=False)`, the attention then in bf16). Greedy, with no stop, so every mode runs the
same number of steps over the same shapes; the modes interleaved in every repetition after one untimed run, medians.

    .venv/bin/python -m bench.decoding --out runs/bench/decoding.json

Run it alone on the machine: a second torch job on the same cores changes every number.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

MODES = ("autocast", "float32", "bf16 copy", "bf16 copy, bf16 cache")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="smollm2-135m-instruct", help="a packaged model's short name or a folder")
    ap.add_argument("--rows", type=int, default=16, help="rows decoding together (a GRPO step's 4 x 4)")
    ap.add_argument("--prompt", type=int, default=160, help="prompt tokens a row")
    ap.add_argument("--new", type=int, default=48, help="tokens decoded a row")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()

    import torch
    from accelerate import Accelerator
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from openrm.generation import HFGenerator, SamplingParams
    from openrm.kv_session import open_session
    from openrm.models import resolve
    from openrm.rollout import Bf16Copy

    torch.set_num_threads(args.threads)
    path = resolve(args.model)
    tokenizer = AutoTokenizer.from_pretrained(path)
    model = Accelerator(cpu=True, mixed_precision="bf16").prepare_model(
        AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32))
    generator = torch.Generator().manual_seed(0)
    prompts = [torch.randint(100, tokenizer.vocab_size, (args.prompt,), generator=generator).tolist()
               for _ in range(args.rows // 4)]
    rows = [p for p in prompts for _ in range(4)]  # 4 completions of each prompt, as GRPO repeats them
    params = SamplingParams(max_new_tokens=args.new, temperature=0)
    never = tokenizer.vocab_size + 10  # no stop: every row decodes `--new` tokens
    calls: list[float] = []

    copies = Bf16Copy()

    def run(mode: str):
        source = copies(model) if mode.startswith("bf16") else model
        gen = HFGenerator(source, tokenizer, float32_decoding=mode != "autocast",
                          growing_cache=mode != "bf16 copy, bf16 cache")
        gen.eos_ids = [never]
        decode = gen.decoder

        def timed_decoder(device):
            forward = decode(device)

            def step(*a, **k):
                start = time.perf_counter()
                out = forward(*a, **k)
                calls.append(time.perf_counter() - start)
                return out
            return step

        gen.decoder = timed_decoder
        calls.clear()
        start = time.perf_counter()
        out = open_session(gen, rows).generate(list(range(len(rows))), params)
        return time.perf_counter() - start, statistics.median(calls), out

    run("float32")  # untimed
    times = {m: [] for m in MODES}
    steps = {m: [] for m in MODES}
    outs = {}
    for _ in range(args.reps):
        for mode in MODES:
            wall, step, outs[mode] = run(mode)
            times[mode].append(wall)
            steps[mode].append(step)
    same = {m: sum(a.token_ids == b.token_ids for a, b in zip(outs[m], outs["float32"], strict=True))
            for m in MODES if m != "float32"}
    result = {"rows": args.rows, "prompt": args.prompt, "new": args.new, "threads": args.threads, "reps": args.reps,
              "torch": torch.__version__,
              **{f"{m} rollout s": round(statistics.median(times[m]), 3) for m in MODES},
              **{f"{m} decoding step ms": round(1000 * statistics.median(steps[m]), 1) for m in MODES},
              **{f"{m}: rows with float32's greedy tokens": f"{n} of {len(rows)}" for m, n in same.items()}}
    for m in MODES:  # against float32 decoding, the default before the bf16 copy
        if m != "float32":
            result[f"{m} rollout x"] = round(result["float32 rollout s"] / result[f"{m} rollout s"], 2)
            result[f"{m} decoding step x"] = round(result["float32 decoding step ms"]
                                                   / result[f"{m} decoding step ms"], 2)
    print(json.dumps(result, indent=1))
    if args.out:
        from plumbing import atomic

        atomic.write_json(args.out, result, indent=1)


if __name__ == "__main__":
    main()
