"""GPU check of train/grpo_openrm.py: bf16 + LoRA GRPO steps of a random Qwen2 with Qwen2.5-0.5B's body
(24 layers, hidden 896, 14/2 heads, MLP 4864; the tiny tokenizer's vocabulary instead of 151,936) on toy data
with live bm25 search. Reports step time and peak GPU memory.

    python -m bench.grpo_gpu --out /tmp/grpo-gpu [--steps 4]
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--steps", type=int, default=4)
    args = ap.parse_args()
    import torch
    from transformers import AutoTokenizer, Qwen2Config, Qwen2ForCausalLM

    from retrieval.build_index import build_index
    from toy.tiny import build
    from toy.world import ToyWorld, write_dataset

    out = args.out
    tiny = build(out / "tiny")
    tok = AutoTokenizer.from_pretrained(tiny)
    cfg = Qwen2Config(vocab_size=len(tok), hidden_size=896, intermediate_size=4864, num_hidden_layers=24,
                      num_attention_heads=14, num_key_value_heads=2, max_position_embeddings=8192,
                      tie_word_embeddings=True, bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id,
                      pad_token_id=tok.pad_token_id)
    torch.manual_seed(0)
    model = Qwen2ForCausalLM(cfg).to(torch.bfloat16)
    n_params = sum(p.numel() for p in model.parameters())
    model.save_pretrained(out / "model")
    tok.save_pretrained(out / "model")
    data = write_dataset(ToyWorld(0), out / "data", 256, 16)
    for name in ("wiki", "arxiv"):
        build_index(data / "corpora" / f"{name}.tsv", "bm25", out / "indexes" / name, progress=False)

    from openrm.tools import ToolBox
    from train.judge_trainer import parse, train_judge

    # numpy bm25 scoring: the GPU machine has no numba, and the toy corpora are tiny
    from_locations = ToolBox.from_locations.__func__
    ToolBox.from_locations = classmethod(lambda cls, locations, tools=None, topk=3, **options: from_locations(
        cls, locations, tools, topk, numba=False))

    argv = ["--config", str(ROOT / "configs/grpo_openrm/tiny_cpu.yaml"), "--model_name_or_path", str(out / "model"),
            "--dataset", str(data / "dataset"), "--output_dir", str(out / "run"), "--max_steps", str(args.steps),
            "--retrievers", f"wiki={out / 'indexes' / 'wiki'}", f"arxiv={out / 'indexes' / 'arxiv'}",
            "--use_cpu", "false", "--bf16", "true", "--dtype", "bfloat16", "--use_peft", "true", "--lora_r", "16",
            "--lora_target_modules", "all-linear", "--learning_rate", "1e-4", "--save_strategy", "no",
            "--per_device_train_batch_size", "16", "--num_generations", "4", "--max_completion_length", "512",
            "--max_new_tokens", "256", "--gradient_checkpointing", "true", "--max_examples", "256"]
    torch.cuda.reset_peak_memory_stats()
    t = time.perf_counter()
    trainer = train_judge(*parse(argv))
    wall = time.perf_counter() - t
    steps = [h for h in trainer.state.log_history if "step_time" in h]
    print(json.dumps({"device": torch.cuda.get_device_name(), "params": n_params, "steps": len(steps),
                      "step_time_s": [round(h["step_time"], 2) for h in steps], "wall_s": round(wall, 1),
                      "peak_mem_gib": round(torch.cuda.max_memory_allocated() / 2**30, 2),
                      "mean_completion_length": [round(h["completions/mean_length"], 1) for h in steps],
                      "searches": [h["openrm/calls_per_trajectory"] for h in steps]}))


if __name__ == "__main__":
    main()
