"""GRPO's update reading each distinct prompt once: the same log-probs, entropies and gradients as TRL's row-by-row
pass, with fewer positions through the model."""

import contextlib
from types import SimpleNamespace

import pytest
import torch

trl_utils = pytest.importorskip("trl.trainer.utils")


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    from transformers import AutoModelForCausalLM

    from toy.tiny import build

    model = AutoModelForCausalLM.from_pretrained(build(tmp_path_factory.mktemp("tiny")), dtype=torch.float32)
    trl_utils.add_fused_lm_head(model, outputs=("log_probs", "entropy"))
    return model


def _batch(vocab: int, prompts: int = 3, per_prompt: int = 4, prompt_len: int = 9, completion_len: int = 6):
    """GRPOTrainer's layout: left-padded prompts, each repeated per completion, right-padded completions, rows
    shuffled (as its `shuffle_sequence_dict` leaves them)."""
    gen = torch.Generator().manual_seed(0)
    prompt_ids = torch.randint(3, vocab, (prompts, prompt_len), generator=gen)
    prompt_mask = torch.ones_like(prompt_ids)
    prompt_mask[0, :3] = 0  # a shorter, left-padded prompt
    prompt_ids[0, :3] = 0
    prompt_ids, prompt_mask = (t.repeat_interleave(per_prompt, dim=0) for t in (prompt_ids, prompt_mask))
    rows = prompts * per_prompt
    completion_ids = torch.randint(3, vocab, (rows, completion_len), generator=gen)
    completion_mask = torch.ones_like(completion_ids)
    completion_mask[1, 2:] = 0  # a short completion, right-padded
    completion_mask[-1, 4:] = 0
    completion_ids = completion_ids.masked_fill(completion_mask == 0, 0)
    order = torch.randperm(rows, generator=gen)
    ids = torch.cat([prompt_ids, completion_ids], dim=1)[order]
    mask = torch.cat([prompt_mask, completion_mask], dim=1)[order]
    return ids, mask, completion_len


def _run(model, share: bool, ids, mask, keep, autocast=contextlib.nullcontext):
    from trl import GRPOTrainer

    from train.shared_prompt import shared_prompt_logps

    positions = []
    hook = model.get_input_embeddings().register_forward_hook(lambda m, i, o: positions.append(o.shape[0] * o.shape[1]))
    model.zero_grad(set_to_none=True)
    try:
        if share:
            logps, entropy = shared_prompt_logps(model, ids, mask, keep, compute_entropy=True, autocast=autocast)
        else:
            fake = SimpleNamespace(accelerator=SimpleNamespace(autocast=autocast, is_main_process=True))
            logps, entropy, _ = GRPOTrainer._get_per_token_logps_and_entropies(fake, model, ids, mask, keep,
                                                                               compute_entropy=True)
    finally:
        hook.remove()
    weights = torch.linspace(-1, 1, logps.numel()).view_as(logps)
    (logps * weights).sum().backward()
    grads = {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}
    return logps.detach(), entropy.detach(), grads, positions


def test_each_prompt_read_once_gives_trls_numbers(model):
    ids, mask, keep = _batch(model.config.vocab_size)
    logps, entropy, grads, positions = _run(model, False, ids, mask, keep)
    logps_s, entropy_s, grads_s, positions_s = _run(model, True, ids, mask, keep)
    assert positions == [12 * 15]  # every row, prompt and completion
    assert positions_s == [3 * 8, 12 * 7]  # the 3 prompts but their last token once, then each row's rest
    assert logps_s.shape == logps.shape == (12, keep)
    assert torch.allclose(logps, logps_s, atol=1e-5) and torch.allclose(entropy, entropy_s, atol=1e-5)
    assert (logps_s[mask[:, -keep:] == 1] != 0).all()  # every completion token scored
    assert grads.keys() == grads_s.keys() and len(grads) == len(list(model.parameters()))
    for name, grad in grads.items():
        assert torch.allclose(grad, grads_s[name], atol=1e-5), name
    assert grads["model.embed_tokens.weight"].abs().sum() > 0  # the prompt's tokens get gradient through the cache


def test_under_bf16_autocast_each_prompt_read_once_stays_near_trls_pass(model):
    """As GRPO runs on a processor with native bf16: both passes under the trainer's bf16 autocast (float32 weights).
    bf16 rounds the two orders of work differently, so they agree to bf16's precision, not to float32's."""
    ids, mask, keep = _batch(model.config.vocab_size)
    bf16 = lambda: torch.autocast("cpu", dtype=torch.bfloat16)  # noqa: E731
    logps, _, grads, _ = _run(model, False, ids, mask, keep, bf16)
    logps_s, _, grads_s, positions_s = _run(model, True, ids, mask, keep, bf16)
    logps_32, *_ = _run(model, True, ids, mask, keep)
    assert positions_s == [3 * 8, 12 * 7]
    assert logps_s.dtype == logps.dtype == torch.float32
    assert not torch.equal(logps_s, logps_32)  # the autocast was in force
    scored = mask[:, -keep:] == 1
    assert (logps - logps_32)[scored].abs().max() < 0.01 and (logps_s - logps_32)[scored].abs().max() < 0.01
    assert grads.keys() == grads_s.keys()
    for name, grad in grads.items():
        assert torch.nn.functional.cosine_similarity(grad.flatten(), grads_s[name].flatten(), dim=0) > 0.999, name
    assert all(g.dtype == torch.float32 for g in grads_s.values())  # the float32 weights' gradients


def test_distinct_prompts_fall_back_to_trls_pass(model):
    from train.shared_prompt import shared_prompt_logps

    ids, mask, keep = _batch(model.config.vocab_size, prompts=4, per_prompt=1)
    assert shared_prompt_logps(model, ids, mask, keep, compute_entropy=False) is None
    assert shared_prompt_logps(model, ids[:, -keep - 1:], mask[:, -keep - 1:], keep, compute_entropy=False) is None


def test_the_trainers_share_unless_told_not_to():
    from train.order_groups import OrderGroupsTrainer
    from train.shared_prompt import SharedPromptGRPOTrainer
    from train.tool_balance import ToolBalancedTrainer

    assert issubclass(OrderGroupsTrainer, SharedPromptGRPOTrainer)
    assert issubclass(ToolBalancedTrainer, SharedPromptGRPOTrainer)
    args = SimpleNamespace(gradient_checkpointing=False)
    trainer = SimpleNamespace(share_prompts=True, args=args, is_deepspeed_enabled=False, is_fsdp_enabled=False)
    can = SharedPromptGRPOTrainer._can_share
    assert can(trainer, torch.nn.Linear(1, 1), None, False, {"pixel_values": None})
    assert not can(trainer, None, None, False, {"pixel_values": torch.zeros(1)})
    assert not can(trainer, None, 4, False, {})
    assert not can(trainer, None, None, True, {})
    assert not can(SimpleNamespace(**{**vars(trainer), "args": SimpleNamespace(gradient_checkpointing=True)}),
                   None, None, False, {})
    assert not can(SimpleNamespace(**{**vars(trainer), "share_prompts": False}), None, None, False, {})


def test_a_chunks_common_padding_is_left_out_with_trls_positions(model):
    """A chunk cut from a bigger batch keeps the batch's widths: columns of padding in all its rows, before the
    prompts and after the completions. They are not run, the positions stay the column index, and the numbers are
    TRL's; the columns left out at the end are scored 0, as a masked position."""
    ids, mask, keep = _batch(model.config.vocab_size, prompts=1, per_prompt=4, prompt_len=9, completion_len=6)
    ids, mask = ids.clone(), mask.clone()
    assert (mask[:, :3] == 0).all() and (mask[:, 3:9] == 1).all()  # the one prompt is left-padded by 3
    ids[:, -2:], mask[:, -2:] = 0, 0  # and two after every completion
    logps, entropy, grads, positions = _run(model, False, ids, mask, keep)
    logps_s, entropy_s, grads_s, positions_s = _run(model, True, ids, mask, keep)
    assert positions == [4 * 15]
    assert positions_s == [1 * 5, 4 * 5]  # 9 - 3 - 1 prompt columns once, then 1 + 6 - 2 a row
    assert logps_s.shape == logps.shape == (4, keep)
    scored = mask[:, -keep:] == 1
    assert torch.allclose(logps[scored], logps_s[scored], atol=1e-5)
    assert torch.allclose(entropy[scored], entropy_s[scored], atol=1e-5)
    assert (logps_s[:, -2:] == 0).all() and (logps_s[scored] != 0).all()
    for name, grad in grads.items():
        assert torch.allclose(grad, grads_s[name], atol=1e-5), name


def test_whole_prompts_stay_together_when_the_chunks_make_one_step():
    from train.shared_prompt import SharedPromptGRPOTrainer, shuffle_whole_prompts

    prompts = torch.tensor([[5, 6], [7, 8], [0, 9]]).repeat_interleave(4, dim=0)[torch.randperm(12)]  # [12, 2]
    batch = {"prompt_ids": prompts, "prompt_mask": (prompts != 0).long(), "advantages": torch.arange(12.0),
             "ids": list(range(12)), "old_per_token_logps": None, "num_items_in_batch": torch.tensor(30)}
    torch.manual_seed(0)
    out = shuffle_whole_prompts(batch)
    chunks = out["prompt_ids"].view(3, 4, 2)
    assert all((chunk == chunk[0]).all() for chunk in chunks)  # cut in 3, each chunk is one prompt's 4 rows
    assert sorted(out["ids"]) == list(range(12)) and out["old_per_token_logps"] is None
    assert torch.equal(out["advantages"], torch.tensor(out["ids"], dtype=torch.float))  # every value moved alike
    assert out["num_items_in_batch"] == 30
    rows = [(sorted(map(tuple, shuffle_whole_prompts(batch)["prompt_ids"].view(3, 4, 2)[:, 0].tolist())))
            for _ in range(8)]
    assert all(r == sorted({(5, 6), (7, 8), (0, 9)}) for r in rows)
    orders = {tuple(shuffle_whole_prompts(batch)["prompt_ids"][::4, 0].tolist()) for _ in range(20)}
    assert len(orders) > 1  # the prompts' order is random

    def trainer(**args):
        base = dict(steps_per_generation=4, gradient_accumulation_steps=4, loss_type="grpo", top_entropy_quantile=1.0)
        return SimpleNamespace(share_prompts=True, group_prompts=True, num_iterations=1,
                               args=SimpleNamespace(**{**base, **args}))

    groups = SharedPromptGRPOTrainer._groups_whole_prompts
    assert groups(trainer())
    assert not groups(trainer(steps_per_generation=1))  # one chunk: nothing to group
    assert not groups(trainer(gradient_accumulation_steps=2))  # two optimizer steps a batch: the mix matters
    assert not groups(trainer(loss_type="bnpo"))  # normalised over a chunk's tokens
    assert not groups(trainer(top_entropy_quantile=0.2))
    assert not groups(SimpleNamespace(**{**vars(trainer()), "num_iterations": 2}))
    assert not groups(SimpleNamespace(**{**vars(trainer()), "group_prompts": False}))


def test_positions_the_loss_masks_are_left_out_of_the_head(model):
    """With `scored` (the batch's tool mask), the environment's positions are not scored (0) and the rest keep TRL's
    numbers; a loss masked to the scored positions has the same gradients as the full pass's."""
    from train.shared_prompt import shared_prompt_logps

    ids, mask, keep = _batch(model.config.vocab_size)
    scored = torch.ones(ids.size(0), keep, dtype=torch.long)
    scored[:, 1:3] = 0  # an <information> block in every row
    scored[5, 4] = 0
    full, _, _, _ = _run(model, False, ids, mask, keep)
    weights = torch.linspace(-1, 1, full.numel()).view_as(full) * scored
    grads = {}
    for name, kwargs in (("trl", None), ("scored", scored)):
        model.zero_grad(set_to_none=True)
        if kwargs is None:
            from types import SimpleNamespace

            from trl import GRPOTrainer
            fake = SimpleNamespace(accelerator=SimpleNamespace(autocast=contextlib.nullcontext, is_main_process=True))
            logps = GRPOTrainer._get_per_token_logps_and_entropies(fake, model, ids, mask, keep)[0]
        else:
            logps = shared_prompt_logps(model, ids, mask, keep, compute_entropy=False, scored=kwargs)[0]
            real = (mask[:, -keep:] == 1) & (scored == 1)
            assert (logps[scored == 0] == 0).all() and (logps[real] != 0).all()
            assert torch.allclose(logps[real], full[real], atol=1e-5)
        (logps * weights).sum().backward()
        grads[name] = {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}
    for name, grad in grads["trl"].items():
        assert torch.allclose(grad, grads["scored"][name], atol=1e-5), name
