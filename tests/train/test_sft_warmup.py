"""The SFT warm-up tokenizes gold trajectories as a rollout holds them: `<information>` blocks encoded on their own
and masked out of the loss, the rest of the completion trained on, the prompt masked."""

from __future__ import annotations

import json

import pytest

from openrm import protocol
from openrm.rollout import information_ids, prompt_token_ids, split_information, tokenize_record
from openrm.tools import ToolResult
from toy.world import ToyWorld
from train.warmup_trainer import parse, train_warmup


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    from transformers import AutoTokenizer

    from toy.tiny import build

    path = build(tmp_path_factory.mktemp("tiny"))
    return path, AutoTokenizer.from_pretrained(path)


@pytest.fixture(scope="module")
def gold():
    world = ToyWorld(0)
    return [(protocol.judge_messages(ex), world.gold_trajectory(ex)) for ex in world.examples(6, "train")]


def test_split_information_keeps_every_character_and_finds_each_block(gold):
    for _, completion in gold:
        pieces = split_information(completion)
        assert "".join(text for text, _ in pieces) == completion
        blocks = [text for text, env in pieces if env]
        assert len(blocks) == completion.count("<information>") == 1
        assert blocks[0].startswith("\n<information>\n") and blocks[0].endswith("\n</information>\n")
    assert split_information("<think>x</think>\n<answer>A</answer>") == [("<think>x</think>\n<answer>A</answer>",
                                                                          False)]


def test_tokenized_record_masks_the_prompt_and_the_information_exactly(tiny, gold):
    _, tok = tiny
    messages, completion = gold[0]
    rec = tokenize_record(tok, messages, completion)
    ids, mask = rec["input_ids"], rec["completion_mask"]
    assert len(ids) == len(mask)
    prompt = prompt_token_ids(tok, messages)
    assert ids[:len(prompt)] == prompt and not any(mask[:len(prompt)])
    # the masked span after the prompt is exactly the environment's block, as the rollout would append it
    block = next(text for text, env in split_information(completion) if env)
    env_ids = information_ids(tok, ToolResult(None, rendered=block), 10_000)
    rest = list(zip(ids[len(prompt):], mask[len(prompt):], strict=True))
    zeros = [i for i, (_, m) in enumerate(rest) if m == 0]
    assert [rest[i][0] for i in zeros] == env_ids and zeros == list(range(zeros[0], zeros[0] + len(env_ids)))
    # what is trained on decodes to the judge's own text, then the end of turn
    own = tok.decode([t for t, m in rest if m], skip_special_tokens=False)
    assert own == completion.replace(block, "") + tok.eos_token
    assert ids[-1] == tok.eos_token_id and mask[-1] == 1


def test_warmup_trains_on_masked_records_and_rejects_bad_completions(tiny, gold, tmp_path):
    path, _ = tiny
    data = tmp_path / "gold.jsonl"
    data.write_text("".join(json.dumps({"prompt": m, "completion": [{"role": "assistant", "content": c}]}) + "\n"
                            for m, c in gold))
    common = ["--model_name_or_path", str(path), "--max_steps", "2", "--per_device_train_batch_size", "2",
              "--save_strategy", "no", "--report_to", "none", "--use_cpu", "true", "--dtype", "float32",
              "--disable_tqdm", "true"]
    train_warmup(*parse(["--dataset", str(data), "--output_dir", str(tmp_path / "out"), *common]))
    assert (tmp_path / "out" / "model.safetensors").is_file()
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"prompt": gold[0][0], "completion": [{"role": "user", "content": "x"}]}) + "\n")
    with pytest.raises(ValueError, match="bad.jsonl: each completion must be one assistant message"):
        train_warmup(*parse(["--dataset", str(bad), "--output_dir", str(tmp_path / "bad"), *common]))


def test_tokenized_records_mix_with_chat_records_and_bad_ones_are_refused(tiny, gold, tmp_path):
    """Pre-tokenized drills (input_ids + completion_mask, no chat template) train beside chat records, with the loss
    on exactly their masked-in positions; a record whose mask does not fit its ids is a clear error."""
    from transformers import AutoTokenizer

    path, _ = tiny
    tok = AutoTokenizer.from_pretrained(path)
    words = tok.encode("alpha beta gamma delta", add_special_tokens=False)
    drill = {"input_ids": words + words, "completion_mask": [0] * (len(words) + 1) + [1] * (len(words) - 1)}
    data = tmp_path / "mixed.jsonl"
    data.write_text("".join(json.dumps({"prompt": m, "completion": [{"role": "assistant", "content": c}]}) + "\n"
                            for m, c in gold) + json.dumps(drill) + "\n")
    common = ["--model_name_or_path", str(path), "--max_steps", "2", "--per_device_train_batch_size", "2",
              "--save_strategy", "no", "--report_to", "none", "--use_cpu", "true", "--dtype", "float32",
              "--disable_tqdm", "true"]
    train_warmup(*parse(["--dataset", str(data), "--output_dir", str(tmp_path / "out"), *common]))
    assert (tmp_path / "out" / "model.safetensors").is_file()
    for bad_drill in ({**drill, "completion_mask": drill["completion_mask"][:-1]},
                      {**drill, "input_ids": [len(tok) + 5] * len(words * 2)}):
        bad = tmp_path / "bad.jsonl"
        bad.write_text(json.dumps(bad_drill) + "\n")
        with pytest.raises(ValueError, match="bad.jsonl: a tokenized record needs input_ids"):
            train_warmup(*parse(["--dataset", str(bad), "--output_dir", str(tmp_path / "bad"), *common]))


def test_plain_lm_head_gives_the_fused_heads_loss_and_trains(tiny, gold, tmp_path):
    import torch
    from datasets import Dataset
    from transformers import AutoModelForCausalLM
    from trl import SFTConfig
    from trl.trainer.utils import add_fused_lm_head

    from train.plain_head import plain_head_sft_trainer

    path, tokenizer = tiny
    records = [tokenize_record(tokenizer, m, c) for m, c in gold[:3]]
    width = max(len(r["input_ids"]) for r in records)
    ids = torch.tensor([[tokenizer.pad_token_id] * (width - len(r["input_ids"])) + r["input_ids"] for r in records])
    attention = (torch.arange(width) >= torch.tensor([[width - len(r["input_ids"])] for r in records])).long()
    labels = ids.clone()
    for row, r in enumerate(records):
        mask = [0] * (width - len(r["input_ids"])) + r["completion_mask"]
        labels[row][torch.tensor(mask) == 0] = -100
    args = SFTConfig(output_dir=str(tmp_path / "p"), use_cpu=True, report_to="none", max_steps=1, bf16=False)
    trainer = plain_head_sft_trainer(model=str(path), args=args, processing_class=tokenizer,
                                     train_dataset=Dataset.from_list([{"input_ids": r["input_ids"]} for r in records]))
    batch = {"input_ids": ids, "attention_mask": attention, "labels": labels}
    plain = trainer.compute_loss(trainer.model, batch)
    # --bf16 on a CPU: the same loss under bf16 autocast (float32 weights), close but not bit-equal
    trainer.args.bf16 = True
    low = trainer.compute_loss(trainer.model, batch)
    trainer.args.bf16 = False
    assert low.dtype == torch.float32 and not torch.equal(low, plain)
    assert torch.allclose(low, plain, rtol=0.02), (low, plain)
    assert next(trainer.model.parameters()).dtype == torch.float32
    reference = AutoModelForCausalLM.from_pretrained(path)
    add_fused_lm_head(reference)
    fused = reference(**batch, fused_lm_head=True)
    expected = -fused.log_probs.sum() / fused.label_mask.sum()
    assert torch.allclose(plain, expected, atol=1e-5), (plain, expected)
    data = tmp_path / "gold.jsonl"
    data.write_text("".join(json.dumps({"prompt": m, "completion": [{"role": "assistant", "content": c}]}) + "\n"
                            for m, c in gold))
    before = AutoModelForCausalLM.from_pretrained(path).state_dict()
    train_warmup(*parse(["--dataset", str(data), "--output_dir", str(tmp_path / "out"), "--lm_head", "plain",
                         "--model_name_or_path", str(path), "--max_steps", "2", "--per_device_train_batch_size", "2",
                         "--save_strategy", "no", "--report_to", "none", "--use_cpu", "true", "--dtype", "float32",
                         "--disable_tqdm", "true"]))
    after = AutoModelForCausalLM.from_pretrained(tmp_path / "out").state_dict()
    assert any(not torch.equal(before[k], after[k]) for k in before)


def test_sorted_within_steps_keeps_each_steps_records_and_sorts_them():
    from datasets import Dataset

    from train.warmup_trainer import sorted_within_steps

    lengths = [5, 2, 9, 1, 7, 3, 8, 4, 6]
    data = Dataset.from_dict({"completion_mask": [[1] * n for n in lengths], "tag": list(range(len(lengths)))})
    out = sorted_within_steps(data, 4)
    assert [len(m) for m in out["completion_mask"]] == [1, 2, 5, 9, 3, 4, 7, 8, 6]
    tags = out["tag"]
    assert [sorted(tags[i:i + 4]) for i in (0, 4, 8)] == [[0, 1, 2, 3], [4, 5, 6, 7], [8]]


def test_sorted_micro_batches_take_the_same_step_as_one_batch(tiny, gold, tmp_path):
    """Two length-sorted micro-batches with gradient accumulation move the weights exactly as one batch of the same
    records does (the loss is a token mean over the whole step either way)."""
    import torch
    from safetensors.torch import load_file

    path, tok = tiny
    data = tmp_path / "gold.jsonl"
    # two long chat records and two short tokenized ones: a micro-batch normalised on its own tokens would weigh
    # the short records' tokens several times more than one batch does
    short = [{"input_ids": tok.encode(text), "completion_mask": [0, 1, 1, 1][:len(tok.encode(text))]}
             for text in ("A B C D", "E F G H")]
    assert all(len(r["input_ids"]) == len(r["completion_mask"]) for r in short)
    records = [*({"prompt": m, "completion": [{"role": "assistant", "content": c}]} for m, c in gold[:2]), *short]
    data.write_text("".join(json.dumps(r) + "\n" for r in records))
    common = ["--dataset", str(data), "--model_name_or_path", str(path), "--max_steps", "1", "--optim", "sgd",
              "--learning_rate", "0.5", "--lr_scheduler_type", "constant", "--lm_head", "plain",
              "--save_strategy", "no", "--report_to", "none", "--use_cpu", "true", "--dtype", "float32",
              "--bf16", "false", "--disable_tqdm", "true"]  # float32 throughout: the two steps must agree exactly
    train_warmup(*parse([*common, "--output_dir", str(tmp_path / "one"), "--per_device_train_batch_size", "4",
                         "--train_sampling_strategy", "sequential"]))
    train_warmup(*parse([*common, "--output_dir", str(tmp_path / "two"), "--per_device_train_batch_size", "2",
                         "--gradient_accumulation_steps", "2", "--sort_within_steps", "true"]))
    start, one, two = (load_file(p / "model.safetensors") for p in (path, tmp_path / "one", tmp_path / "two"))
    assert any(not torch.equal(start[k], one[k]) for k in start)  # the step moved the weights
    for k in one:
        torch.testing.assert_close(one[k], two[k], rtol=1e-4, atol=1e-6)


def test_sorted_within_steps_refuses_more_than_one_process(tiny, gold, tmp_path, monkeypatch):
    from transformers import TrainingArguments

    path, _ = tiny
    data = tmp_path / "gold.jsonl"
    data.write_text("".join(json.dumps({"prompt": m, "completion": [{"role": "assistant", "content": c}]}) + "\n"
                            for m, c in gold))
    monkeypatch.setattr(TrainingArguments, "world_size", property(lambda self: 2))  # as under accelerate launch
    with pytest.raises(ValueError, match="sort_within_steps runs in one process"):
        train_warmup(*parse(["--dataset", str(data), "--output_dir", str(tmp_path / "out"),
                             "--model_name_or_path", str(path), "--max_steps", "1", "--per_device_train_batch_size",
                             "2", "--sort_within_steps", "true", "--report_to", "none", "--use_cpu", "true",
                             "--dtype", "float32"]))
    assert not (tmp_path / "out" / "model.safetensors").exists()


def test_verdict_positions_are_letters_between_a_tag_end_and_a_closing_tag():
    import torch

    from train.plain_head import verdict_positions

    gt, close_open, a, b, word = 1, 2, 3, 4, 5  # ">", "</", "A", "B", any other token
    labels = torch.tensor([
        [gt, a, close_open, word, gt, a, close_open],  # <think>A</think> ... <answer>A</answer>
        [gt, a, word, close_open, -100, gt, b],  # "A Tale ..." is no verdict; a letter with nothing after neither
        [-100, b, close_open, gt, b, close_open, word],  # no ">" before the first B
    ])
    assert verdict_positions(labels, (gt, close_open), (a, b)).tolist() == [
        [False, True, False, False, False, True, False],
        [False, False, False, False, False, False, False],
        [False, False, False, False, True, False, False]]


def test_verdict_weight_is_checked(tmp_path):
    from train.warmup_trainer import WarmupArguments

    data = tmp_path / "d.jsonl"
    data.write_text("{}\n")
    with pytest.raises(ValueError, match="verdict_weight"):
        WarmupArguments(dataset=str(data), lm_head="fused", verdict_weight=4.0)
    with pytest.raises(ValueError, match="verdict_weight"):
        WarmupArguments(dataset=str(data), lm_head="plain", verdict_weight=0.0)
    assert WarmupArguments(dataset=str(data), lm_head="plain", verdict_weight=4.0).verdict_weight == 4.0
