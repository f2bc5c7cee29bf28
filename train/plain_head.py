"""An SFTTrainer whose loss projects only the trained positions through the LM head, in one matrix product.

TRL 1.16's SFTTrainer always computes its loss through a fused, tiled LM head (`trl.trainer.utils.add_fused_lm_head`,
`chunked_logprob.py`), which saves memory on a GPU with a large vocabulary. On a CPU with the tiny judge the tiles
cost more than the whole model: sampled with py-spy during the quickstart's warm-up, the fused head's forward and
backward took over half of every step. With SmolLM2 (vocabulary 49,152) on a CPU it spares projecting the
prompt positions, which carry no loss. The loss here is the same token-mean
negative log-likelihood over the positions whose label is not -100, and it logs the same `mean_token_accuracy`;
`train/sft_warmup.py --lm_head plain` selects it.

`verdict_ids` and `verdict_weight` weigh the verdict letters (a letter token right after `>` and right before `</`:
the `A` of `<think>A</think>` and of `<answer>A</answer>`) `verdict_weight` times in the sum, the divisor still the
count of trained tokens: in a gold trajectory of some 50 trained tokens the one token that decides is otherwise a
fiftieth of the loss (`--verdict_weight`).
"""

from __future__ import annotations

from typing import Any


def _sft_trainer():
    from trl import SFTTrainer

    class PlainHeadSFTTrainer(SFTTrainer):
        verdict_ids: tuple[int, int] | None = None  # the ids of ">" and "</"; None: no weighting
        verdict_letters: tuple[int, ...] = ()
        verdict_weight: float = 1.0

        def compute_loss(self, model: Any, inputs: dict, return_outputs: bool = False,
                         num_items_in_batch: Any = None):
            import torch.nn.functional as F

            unwrapped = self.accelerator.unwrap_model(model)
            base = unwrapped.get_base_model() if hasattr(unwrapped, "get_base_model") else unwrapped
            backbone = getattr(base, base.base_model_prefix)
            import torch

            # the backbone is called directly, past accelerate's autocast wrapper of model.forward: with --bf16 on a
            # CPU the same bf16 autocast is entered here (oneDNN's bf16 kernels; the loss stays float32)
            on_cpu = next(base.parameters()).device.type == "cpu"
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bool(self.args.bf16) and on_cpu):
                hidden = backbone(input_ids=inputs["input_ids"], attention_mask=inputs.get("attention_mask"),
                                  position_ids=inputs.get("position_ids")).last_hidden_state  # [B, T, H]
                labels = inputs["labels"][:, 1:]  # [B, T-1]: position t predicts token t+1
                keep = labels != -100
                logits = base.get_output_embeddings()(hidden[:, :-1][keep])  # [N, V], trained positions only
            losses = F.cross_entropy(logits.float(), labels[keep], reduction="none")  # [N]
            if self.verdict_ids is not None and self.verdict_weight != 1.0:
                weights = 1.0 + (self.verdict_weight - 1.0) * verdict_positions(
                    inputs["labels"], self.verdict_ids, self.verdict_letters)[:, 1:][keep].float()
                losses = losses * weights
            total = losses.sum()
            if self.model.training and len(logits):  # what SFTTrainer's own loss logs (the fused head's is_top1)
                hits = (logits.detach().argmax(-1) == labels[keep]).float().mean().item()
                self._metrics["train"]["mean_token_accuracy"].append(hits)
            count = keep.sum() if num_items_in_batch is None else num_items_in_batch
            loss = total / max(int(count), 1)
            if self.args.average_tokens_across_devices and num_items_in_batch is not None:
                loss = loss * self.accelerator.num_processes  # as SFTTrainer: DDP averages gradients over ranks
            return (loss, {"logits": logits}) if return_outputs else loss

    return PlainHeadSFTTrainer


def verdict_positions(labels: Any, marks: tuple[int, int], letters: tuple[int, ...]) -> Any:
    """[B, T] bool: the positions whose token is a letter of `letters` between an opening-tag end and a closing-tag
    start (`marks` = the ids of ">" and "</"), among trained positions (label not -100)."""
    import torch

    close, opening = marks
    letter = torch.isin(labels, torch.tensor(letters, device=labels.device))  # [B, T]
    before = torch.zeros_like(letter)
    before[:, 1:] = labels[:, :-1] == close
    after = torch.zeros_like(letter)
    after[:, :-1] = labels[:, 1:] == opening
    return letter & before & after


def plain_head_sft_trainer(verdict_weight: float = 1.0, **kwargs: Any):
    """`PlainHeadSFTTrainer(**kwargs)`; TRL is imported only when one is built. `verdict_weight` != 1 weighs the
    verdict letters (the tokenizer's single-token "A" and "B") that many times."""
    trainer = _sft_trainer()(**kwargs)
    if verdict_weight != 1.0:
        tokenizer = kwargs["processing_class"]
        ids = {t: tokenizer.encode(t, add_special_tokens=False) for t in (">", "</", "A", "B")}
        if any(len(v) != 1 for v in ids.values()):
            raise ValueError(f"verdict_weight needs '>', '</', 'A' and 'B' to be one token each; got {ids}")
        trainer.verdict_ids = (ids[">"][0], ids["</"][0])
        trainer.verdict_letters = (ids["A"][0], ids["B"][0])
        trainer.verdict_weight = verdict_weight
    return trainer
