"""The fused LM head on a CPU: with `score_labelled_positions_only` it projects only the labelled rows and gives the
same log-probs and gradients as TRL's every-position path."""

import pytest
import torch

trl_utils = pytest.importorskip("trl.trainer.utils")
HEAD = trl_utils._ChunkedLogProbFunction


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    from transformers import AutoModelForCausalLM

    from toy.tiny import build

    model = AutoModelForCausalLM.from_pretrained(build(tmp_path_factory.mktemp("tiny")), dtype=torch.float32)
    trl_utils.add_fused_lm_head(model, outputs=("log_probs", "entropy"))
    return model


def _run(model, monkeypatch, compact: bool, bf16: bool = False):
    from train import fused_head

    rows = []

    class Counting:
        @staticmethod
        def apply(hidden, *rest):
            rows.append(hidden.shape[0])
            return HEAD.apply(hidden, *rest)

    monkeypatch.setattr(trl_utils, "_ChunkedLogProbFunction", Counting)
    gen = torch.Generator().manual_seed(0)
    ids = torch.randint(0, model.config.vocab_size, (3, 12), generator=gen)
    mask = torch.ones_like(ids)
    mask[0, :4] = 0  # a left-padded row
    labels = ids.masked_fill(mask == 0, -100)
    labels[:, :7] = -100  # 5 completion tokens a row
    model.zero_grad(set_to_none=True)
    with (fused_head.completion_positions_only() if compact else torch.enable_grad(),
          torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16)):
        out = model(input_ids=ids, attention_mask=mask, labels=labels, fused_lm_head=True)
    out.log_probs.sum().backward()
    grad = model.get_output_embeddings().weight.grad.clone()
    return rows, out.log_probs.detach(), out.entropy.detach(), grad


def test_compact_path_scores_only_the_completion_with_the_same_numbers(model, monkeypatch):
    every_rows, logps, entropy, grad = _run(model, monkeypatch, compact=False)
    rows, logps_c, entropy_c, grad_c = _run(model, monkeypatch, compact=True)
    assert every_rows == [3 * 11]  # every shifted position of the batch
    assert rows == [3 * 5]  # the labelled ones: each row's 5 completion tokens
    assert torch.allclose(logps, logps_c, atol=1e-5)
    assert torch.allclose(entropy, entropy_c, atol=1e-5)
    assert torch.allclose(grad, grad_c, atol=1e-5)
    assert (logps[:, :6] == 0).all() and (logps_c[:, 6:] != 0).all()


def test_the_block_restores_trls_choice():
    from train import fused_head

    before = trl_utils._use_triton
    with fused_head.completion_positions_only():
        assert trl_utils._use_triton(torch.device("cpu"))
    assert trl_utils._use_triton is before


def test_under_bf16_autocast_the_compact_path_agrees_and_stays_near_float32(model, monkeypatch):
    """What the quickstart trains with on a processor with native bf16: autocast around TRL's fused head."""
    _, logps, _, _ = _run(model, monkeypatch, compact=False)
    every_rows, logps_bf16, _, grad = _run(model, monkeypatch, compact=False, bf16=True)
    rows, logps_c, _, grad_c = _run(model, monkeypatch, compact=True, bf16=True)
    assert every_rows == [33] and rows == [15]
    assert logps_bf16.dtype == torch.float32 and torch.isfinite(grad_c).all()
    assert torch.allclose(logps_bf16, logps_c, atol=1e-2) and torch.allclose(grad, grad_c, atol=1e-2)
    assert (logps_bf16 - logps).abs().max() < 0.1  # bf16's rounding, not another computation
    assert (logps_bf16 - logps).abs().max() > 0  # autocast did run in bf16
