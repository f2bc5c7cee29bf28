"""Each distinct prompt read once in GRPO's update, instead of once per completion.

A GRPO batch holds `num_generations` completions of every prompt, and TRL's update runs the policy over prompt +
completion row by row, so a prompt is read (forward and backward) as many times as it has completions. When the
prompt is most of a row (the judge's prompt holds the question and both answers) that is most of the update's work.
Here the distinct prompts, all but their last token, go through the model once with gradients; every row then
takes those keys and values from the pass (an index into the cache, so the gradients of all its rows add up there)
and runs its last prompt token and its completion on top. Positions (0..L-1, as TRL's forward numbers them), masks
and the scored positions are TRL's, so the log-probs and entropies are the same numbers; only the work shrinks.

When the loss is taken a few rows at a time (`steps_per_generation` chunks of one optimizer step), TRL's shuffle
would scatter a prompt's completions over the chunks; here each chunk holds whole prompts (`shuffle_whole_prompts`),
where that leaves the gradient as it was, and a chunk's columns of padding common to all its rows are not run.

`SharedPromptGRPOTrainer` is GRPOTrainer with this; the judge's, the policy's and the rubric generator's trainers
use it. It steps aside (TRL's own pass) where a second forward before the backward is not safe or not possible:
gradient checkpointing (no cache), DeepSpeed, FSDP and DDP, inputs with images, MoE aux losses, chunked passes,
and batches whose prompts are all distinct.
"""

from __future__ import annotations

import contextlib

import torch
from trl import GRPOTrainer


def shared_prompt_logps(model, input_ids: torch.Tensor, attention_mask: torch.Tensor, logits_to_keep: int,
                        compute_entropy: bool, autocast=contextlib.nullcontext, scored: torch.Tensor | None = None):
    """(log-probs [B, C], entropies [B, C] or None) of the last `logits_to_keep` tokens of each row, reading each
    distinct prompt once; None where no prompt repeats (or the model's cache is not a plain one), for TRL's pass.
    `scored` ([B, C], 1 = scored): completion positions left out of the LM head (0 there), e.g. the environment's
    `<information>` tokens, which the loss masks anyway.

    `model` carries TRL's fused LM head (`trl.trainer.utils.add_fused_lm_head`); rows are prompt + completion,
    prompts left-padded to one length, as GRPOTrainer builds them."""
    from transformers.cache_utils import DynamicLayer

    head = input_ids.size(1) - logits_to_keep - 1  # the prompt but its last token, whose output scores token 1
    if head < 1:
        return None
    key = torch.cat([input_ids[:, :head], attention_mask[:, :head]], dim=1)  # [B, 2 * head]
    distinct, inverse = torch.unique(key, dim=0, return_inverse=True)
    if distinct.size(0) == input_ids.size(0):
        return None
    first = torch.empty(distinct.size(0), dtype=torch.long, device=input_ids.device)
    first.scatter_(0, inverse, torch.arange(input_ids.size(0), device=input_ids.device))  # a row of each prompt
    # columns that are padding in every row (a chunk of a bigger batch keeps the batch's widths) are left out; the
    # positions stay TRL's (the column index), so the numbers do not move
    used = attention_mask.bool().any(0).nonzero().flatten()  # [L'] columns with a real token
    lo, hi = min(int(used[0]), head - 1), max(int(used[-1]) + 1, head + 2)
    positions = torch.arange(input_ids.size(1), device=input_ids.device)[None]  # [1, L]
    with autocast():
        cache = model(input_ids=input_ids[first, lo:head], attention_mask=attention_mask[first, lo:head],
                      position_ids=positions[:, lo:head], use_cache=True, logits_to_keep=1).past_key_values
    if cache is None or not all(type(layer) is DynamicLayer for layer in getattr(cache, "layers", [None])):
        return None  # sliding windows or other caches: not shown to hold whole prompts
    cache.batch_select_indices(inverse)  # [U, ...] -> [B, ...]; gradients flow back to the one pass
    labels = input_ids[:, head:hi].masked_fill(attention_mask[:, head:hi] == 0, -100)  # [B, 1 + C']
    labels[:, 0] = -100  # the prompt's last token is context, not scored
    if scored is not None:
        labels[:, 1:] = labels[:, 1:].masked_fill(scored[:, :hi - head - 1] == 0, -100)
    with autocast():
        out = model(input_ids=input_ids[:, head:hi], attention_mask=attention_mask[:, lo:hi],
                    position_ids=positions[:, head:hi], past_key_values=cache, labels=labels, fused_lm_head=True)
    cut = input_ids.size(1) - hi  # trailing columns left out: scored 0, as masked positions are

    def columns(values):  # the completion's C' scored columns, then the trailing ones: [B, C]
        return torch.nn.functional.pad(values[:, -(logits_to_keep - cut):], (0, cut))

    return columns(out.log_probs), columns(out.entropy) if compute_entropy else None


WHOLE_PROMPT_LOSSES = ("grpo", "dr_grpo", "dapo")  # per-sequence means, a fixed length, the whole batch's tokens


def shuffle_whole_prompts(batch: dict) -> dict:
    """TRL's `shuffle_sequence_dict` with each prompt's rows kept together: the distinct prompts (`prompt_ids` with
    `prompt_mask`) in a random order, each prompt's rows in the order they came. Values are permuted as TRL does
    (tensors of one dimension or more and lists along the first; None and 0-d tensors as they are)."""
    key = torch.cat([batch["prompt_ids"], batch["prompt_mask"]], dim=1)  # [B, 2P]
    _, group = torch.unique(key, dim=0, return_inverse=True)  # [B] each row's prompt
    rank = torch.empty_like(group)
    rank[torch.randperm(int(group.max()) + 1)] = torch.arange(int(group.max()) + 1)  # the prompts' random order
    permutation = torch.sort(rank[group], stable=True).indices  # [B]

    def permute(value):
        if value is None or (isinstance(value, torch.Tensor) and value.ndim == 0):
            return value
        if isinstance(value, torch.Tensor):
            return value[permutation]
        return [value[i] for i in permutation]

    return {name: permute(value) for name, value in batch.items()}


class SharedPromptGRPOTrainer(GRPOTrainer):
    """GRPOTrainer whose log-prob passes read each distinct prompt once (`shared_prompt_logps`).

    `share_prompts = False` (on the class or an instance) gives TRL's row-by-row pass (`bench.grpo_update` times
    both); `group_prompts = False` keeps TRL's shuffled chunks; `skip_environment = False` has the LM head score the
    environment's tokens (`tool_mask` 0), which the loss masks anyway."""

    share_prompts = True
    group_prompts = True  # False: TRL's shuffled chunks (bench.rollout --shuffled-chunks)
    skip_environment = True  # False: the head scores environment tokens too (bench.rollout --score-environment)

    def _groups_whole_prompts(self) -> bool:
        """Whether a generation batch may be cut into chunks of whole prompts rather than shuffled rows: when every
        optimizer step takes whole generation batches (one pass over the data a batch, its chunks accumulated), the
        chunks' make-up does not change the gradient for the loss types that normalise per sequence or over the
        whole batch (and no chunk-wide entropy quantile), and a chunk of one prompt's completions reads that prompt
        once."""
        args = self.args
        return (self.share_prompts and self.group_prompts and args.steps_per_generation > 1
                and self.num_iterations == 1
                and args.gradient_accumulation_steps % args.steps_per_generation == 0
                and args.loss_type in WHOLE_PROMPT_LOSSES and args.top_entropy_quantile == 1.0)

    def _prepare_inputs(self, generation_batch):
        # TRL shuffles a generation batch's rows before cutting it into `steps_per_generation` chunks, so a chunk of
        # 4 rows holds about 3 distinct prompts; with `_groups_whole_prompts` the shuffle keeps each prompt's rows
        # together (`shuffle_whole_prompts`)
        if not (self.model.training and self._groups_whole_prompts()):
            return super()._prepare_inputs(generation_batch)
        from unittest import mock

        import trl.trainer.grpo_trainer as grpo

        with mock.patch.object(grpo, "shuffle_sequence_dict", shuffle_whole_prompts):
            return super()._prepare_inputs(generation_batch)

    def _can_share(self, model, batch_size, compute_aux_loss, extra) -> bool:
        from torch.nn.parallel import DistributedDataParallel

        return (self.share_prompts and not compute_aux_loss and batch_size is None
                and not any(v is not None for v in extra.values())
                and not self.args.gradient_checkpointing
                and not self.is_deepspeed_enabled and not self.is_fsdp_enabled
                and not isinstance(model, DistributedDataParallel))

    _loss_mask = None  # the tool mask of the batch `_compute_loss` is scoring, when the head may skip its zeros

    def _compute_loss(self, model, inputs):
        # The loss masks the environment's tokens (`tool_mask` 0), so the LM head need not score them, unless log-probs
        # from another pass are compared with these position by position (old log-probs, or the sampling ones under
        # an off-policy mask): a 0 there against a real log-prob could overflow the ratio before the mask applies
        if (self.skip_environment and inputs.get("old_per_token_logps") is None
                and self.off_policy_mask_threshold is None):
            self._loss_mask = inputs.get("tool_mask")
        try:
            return super()._compute_loss(model, inputs)
        finally:
            self._loss_mask = None

    def _get_per_token_logps_and_entropies(self, model, input_ids, attention_mask, logits_to_keep, batch_size=None,
                                           compute_entropy=False, compute_aux_loss=False, **extra):
        if batch_size is not None and batch_size >= input_ids.size(0):
            batch_size = None  # one chunk: the same as none
        if self._can_share(model, batch_size, compute_aux_loss, extra):
            got = shared_prompt_logps(model, input_ids, attention_mask, logits_to_keep, compute_entropy,
                                      self.accelerator.autocast, self._loss_mask)
            if got is not None:
                return (*got, None)
        return super()._get_per_token_logps_and_entropies(
            model, input_ids, attention_mask, logits_to_keep, batch_size=batch_size,
            compute_entropy=compute_entropy, compute_aux_loss=compute_aux_loss, **extra)
