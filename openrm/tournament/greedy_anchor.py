"""ArenaRL's quality anchor: a TRL `rollout_func` for policy GRPO that decodes the first completion of every group
greedily (T = 0) and samples the rest with the trainer's settings, marking the greedy one in an `anchor` column
that `TournamentReward(anchor_position=0)` checks.

    GRPOTrainer(..., rollout_func=make_greedy_anchor_rollout(group_size=8), reward_funcs=[reward])

Layout: TRL's RepeatSampler lays each prompt's `num_generations` copies out consecutively and every process receives
an equal, contiguous slice of the generation batch, so row i of process r is row r * len(slice) + i of the batch
and is a group's first row when that index is a multiple of the group size. One turn per completion (a policy
answer, not a tool loop); generation uses the trainer's model (unwrapped from DDP / DeepSpeed) or its colocated
vLLM engine.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from openrm.generation import SamplingParams


def anchor_rows(n_local: int, rank: int, group_size: int) -> list[bool]:
    """Which of this process's `n_local` rows are their group's first (the greedy anchor)."""
    return [(rank * n_local + i) % group_size == 0 for i in range(n_local)]


def make_greedy_anchor_rollout(group_size: int):
    if group_size < 2:
        raise ValueError(f"a greedy anchor needs groups of at least 2, got {group_size}")

    def rollout_func(prompts: list[Any], trainer: Any) -> dict[str, list]:
        from openrm.generation import HFGenerator, VLLMGenerator
        from openrm.rollout import prompt_token_ids

        tokenizer, args = trainer.processing_class, trainer.args
        ids = [prompt_token_ids(tokenizer, p) for p in prompts]
        anchors = anchor_rows(len(ids), trainer.accelerator.process_index, group_size)
        sampled = SamplingParams(max_new_tokens=args.max_completion_length, temperature=args.temperature,
                                 top_p=args.top_p, top_k=args.top_k or 0)
        greedy = replace(sampled, temperature=0.0)

        def run(generator) -> list:
            out: list = [None] * len(ids)
            for params, flag in ((greedy, True), (sampled, False)):
                rows = [i for i, a in enumerate(anchors) if a == flag]
                if rows:
                    for i, gen in zip(rows, generator.generate([ids[i] for i in rows], params), strict=True):
                        out[i] = gen
            return out

        if trainer.use_vllm:
            if args.vllm_mode != "colocate":
                raise ValueError("the greedy-anchor rollout drives vLLM itself: use vllm_mode=colocate")
            gens = run(VLLMGenerator(trainer.vllm_generation.llm))
        else:
            from trl.models.utils import unwrap_model_for_generation

            with unwrap_model_for_generation(trainer.model_wrapped, trainer.accelerator,
                                             gather_deepspeed3_params=args.ds3_gather_for_generation,
                                             gradient_checkpointing_kwargs=args.gradient_checkpointing_kwargs) as model:
                gens = run(HFGenerator(model, tokenizer))
        return {"prompt_ids": ids, "completion_ids": [g.token_ids for g in gens],
                "logprobs": [g.logprobs for g in gens], "anchor": anchors}

    return rollout_func
