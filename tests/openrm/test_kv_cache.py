"""The growing KV cache layer, the float32 cache a bf16 model decodes with on the CPU, the bf16 copy a CPU trainer
under bf16 generates with, and the stop-string criterion kept per tokenizer."""

from __future__ import annotations

import torch
from transformers import AutoModelForCausalLM
from transformers.cache_utils import DynamicLayer

from openrm import protocol
from openrm.generation import HFGenerator, SamplingParams, stop_criterion
from openrm.kv_cache import BLOCK, GrowingLayer
from openrm.kv_session import open_session
from openrm.rollout import Bf16Copy, prompt_token_ids
from toy.world import ToyWorld


def _kv(batch: int, tokens: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    generator = torch.Generator().manual_seed(seed)
    return (torch.randn(batch, 2, tokens, 4, generator=generator),
            torch.randn(batch, 2, tokens, 4, generator=generator))


def test_a_growing_layer_holds_what_a_dynamic_layer_holds():
    """Prefill, one-token steps past the spare block, a batch selection, a crop: the same keys/values as
    transformers' concatenating layer after every update, and a one-token step inside the block writes in place."""
    grow, plain = GrowingLayer(), DynamicLayer()
    updates = [_kv(3, 10, 0)] + [_kv(3, 1, s) for s in range(1, BLOCK + 5)]
    for i, (k, v) in enumerate(updates):
        got, want = grow.update(k, v), plain.update(k, v)
        torch.testing.assert_close(got, want, atol=0, rtol=0)
        if i == 1:
            buffer = grow._keys
        if 1 <= i < BLOCK:  # inside the first buffer's spare columns: no new allocation
            assert grow._keys is buffer and grow.keys.data_ptr() == buffer.data_ptr()
    assert grow._keys is not buffer  # the block ran out: rebuilt once
    index = torch.tensor([2, 0])
    grow.batch_select_indices(index)
    plain.batch_select_indices(index)
    grow.crop(-3)
    plain.crop(-3)
    for s in range(3):
        k, v = _kv(2, 2, 100 + s)
        torch.testing.assert_close(grow.update(k, v), plain.update(k, v), atol=0, rtol=0)
    assert grow.get_seq_length() == plain.get_seq_length() == 10 + BLOCK + 4 - 3 + 6


def test_a_growing_layer_keeps_its_store_dtype():
    layer = GrowingLayer(torch.float32)
    k, v = _kv(2, 5, 0)
    keys, values = layer.update(k.bfloat16(), v.bfloat16())
    assert keys.dtype == values.dtype == torch.float32
    torch.testing.assert_close(keys, k.bfloat16().float(), atol=0, rtol=0)


def test_a_bf16_model_decodes_against_a_float32_cache_on_the_cpu(tiny_dir, tokenizer):
    """A bf16 model's session on the CPU keeps float32 keys/values (grouped attention reads the bf16 query in
    float32) and writes the tokens a float32 model would score alike; with the growing cache off the keys stay
    bf16."""
    model = AutoModelForCausalLM.from_pretrained(tiny_dir)
    generator = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for p in model.parameters():
            if p.dim() == 2:
                p.copy_(torch.randn(p.shape, generator=generator) * 0.3)
    bf16 = AutoModelForCausalLM.from_pretrained(tiny_dir, dtype=torch.bfloat16)
    bf16.load_state_dict(model.state_dict())
    prompts = [prompt_token_ids(tokenizer, protocol.judge_messages(e)) for e in ToyWorld(0).examples(2, "test")]
    dtypes = []
    original = GrowingLayer.update

    def spy(self, *args, **kwargs):
        out = original(self, *args, **kwargs)
        dtypes.append(out[0].dtype)
        return out

    params = SamplingParams(max_new_tokens=8, temperature=0)
    GrowingLayer.update = spy
    try:
        gens = open_session(HFGenerator(bf16, tokenizer), prompts).generate([0, 1], params)
    finally:
        GrowingLayer.update = original
    assert dtypes and set(dtypes) == {torch.float32}
    with torch.no_grad():  # the float32 model's log-probs at the bf16 model's tokens
        for prompt, gen in zip(prompts, gens, strict=True):
            logits = model(input_ids=torch.tensor([prompt + gen.token_ids])).logits[0, len(prompt) - 1:-1]
            expected = torch.log_softmax(logits, -1).gather(-1, torch.tensor(gen.token_ids)[:, None]).squeeze(-1)
            # bf16 weights: measured <= 0.1 apart; a wrong position or a lost cache moves them by more than 1
            torch.testing.assert_close(torch.tensor(gen.logprobs), expected, atol=0.3, rtol=0)
    plain = HFGenerator(bf16, tokenizer, growing_cache=False)
    session = open_session(plain, prompts)
    session.generate([0], params)
    assert session.rows[0].keys[0].dtype == torch.bfloat16


def test_the_bf16_copy_follows_the_trained_weights(tiny_dir):
    """A bf16 copy of an accelerate-prepared model: no autocast wrapper, no gradients, every parameter the trained
    one rounded to bf16 (tied ones still tied), refreshed in place on each call; buffers keep their dtype."""
    from accelerate import Accelerator

    model = Accelerator(cpu=True, mixed_precision="bf16").prepare_model(AutoModelForCausalLM.from_pretrained(tiny_dir))
    copies = Bf16Copy()
    shadow = copies(model)
    assert "forward" not in shadow.__dict__ and "_original_forward" not in shadow.__dict__
    params = dict(shadow.named_parameters())
    assert all(p.dtype == torch.bfloat16 and not p.requires_grad for p in params.values())
    assert all(b.dtype == torch.float32 for b in shadow.buffers() if b.is_floating_point())
    with torch.no_grad():
        for p in model.parameters():
            p.add_(0.5)
    assert copies(model) is shadow
    for name, trained in model.named_parameters():
        torch.testing.assert_close(params[name], trained.detach().bfloat16(), atol=0, rtol=0)
    if model.config.tie_word_embeddings:
        assert shadow.get_output_embeddings().weight is shadow.get_input_embeddings().weight


def test_the_stop_criterion_is_built_once_per_tokenizer(tokenizer):
    first = stop_criterion(tokenizer, ["</search>", "</answer>"])
    assert stop_criterion(tokenizer, ("</search>", "</answer>")) is first
    assert stop_criterion(tokenizer, ["</answer>"]) is not first
    ids = torch.tensor([tokenizer.encode("x </answer>")])
    assert bool(first(ids, None)[0])


def test_a_cpu_trainer_under_bf16_generates_with_its_bf16_copy(tiny_dir, tokenizer, monkeypatch):
    """With `bf16_copy`, the GRPO rollout function hands the generator one bf16 copy, step after step, when the
    trainer runs under bf16 mixed precision on the CPU; the trained model itself in float32, or by default."""
    import contextlib
    from types import SimpleNamespace

    import trl.models.utils as trl_model_utils

    from openrm import rollout as rollout_module
    from openrm.rollout import RolloutConfig, make_trl_rollout_func

    model = AutoModelForCausalLM.from_pretrained(tiny_dir)
    seen = []
    monkeypatch.setattr(rollout_module, "rollout", lambda ids, generator, *a, **k: seen.append(generator.model) or [])
    monkeypatch.setattr(trl_model_utils, "unwrap_model_for_generation",
                        lambda wrapped, *a, **k: contextlib.nullcontext(wrapped))
    args = SimpleNamespace(temperature=1.0, top_p=1.0, top_k=0, max_completion_length=32,
                           ds3_gather_for_generation=True, gradient_checkpointing_kwargs=None)
    prompts = [protocol.judge_messages(ToyWorld(0).examples(1, "test")[0])]

    def trainer(precision):
        return SimpleNamespace(processing_class=tokenizer, args=args, use_vllm=False, model_wrapped=model,
                               accelerator=SimpleNamespace(mixed_precision=precision))

    func = make_trl_rollout_func(None, RolloutConfig(), bf16_copy=True)
    func(prompts, trainer("bf16"))
    func(prompts, trainer("bf16"))
    assert seen[0] is seen[1] and seen[0] is not model
    assert next(seen[0].parameters()).dtype == torch.bfloat16
    func(prompts, trainer("no"))
    make_trl_rollout_func(None, RolloutConfig())(prompts, trainer("bf16"))
    assert seen[2] is model and seen[3] is model
