"""Tiny model: builds offline, deterministic, uses TRL's Qwen2.5 chat template, generates."""

import json

import pytest

from openrm import protocol
from toy.tiny import CARD_NAME, IM_END, TinyConfig, build, build_model, build_tokenizer, qwen_chat_template
from toy.world import ToyWorld


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory):
    return build(tmp_path_factory.mktemp("tiny"))


def test_tokenizer_is_deterministic_and_qwen_shaped():
    first, second = build_tokenizer(), build_tokenizer()
    assert first.get_vocab() == second.get_vocab()
    assert first.eos_token == IM_END and first.pad_token == "<|endoftext|>"
    assert first.chat_template == qwen_chat_template()
    # Tags span several tokens, as with the real Qwen tokenizer: stop strings must work on text.
    assert len(first.tokenize("</search>")) > 1


def test_tokenizer_round_trips_any_text():
    tok = build_tokenizer()
    for text in ["Ünïcødé — 数据 ✓ 🙂", "\t<answer>A</answer>\n", "&lt;answer&gt;"]:
        assert tok.decode(tok.encode(text, add_special_tokens=False)) == text


def test_weights_are_deterministic_under_a_seed():
    tok = build_tokenizer()
    a, b, c = (build_model(tok, TinyConfig(seed=s)) for s in (1, 1, 2))
    sa, sb, sc = a.state_dict(), b.state_dict(), c.state_dict()
    assert all((sa[k] == sb[k]).all() for k in sa)
    assert any((sa[k] != sc[k]).any() for k in sa)


def test_saved_model_loads_offline_and_generates_with_the_chat_template(tiny_dir):
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    card = json.loads((tiny_dir / CARD_NAME).read_text())
    assert card["kind"] == "openrm-tiny" and card["parameters"] < 1_000_000
    tok = AutoTokenizer.from_pretrained(tiny_dir, local_files_only=True)
    model = AutoModelForCausalLM.from_pretrained(tiny_dir, local_files_only=True)
    assert model.config.model_type == "qwen2"
    example = ToyWorld(0).examples(1)[0]
    batch = tok.apply_chat_template(protocol.judge_messages(example), add_generation_prompt=True,
                                    return_tensors="pt", return_dict=True)
    prompt_text = tok.decode(batch["input_ids"][0])
    assert prompt_text.startswith("<|im_start|>system\n") and prompt_text.endswith("<|im_start|>assistant\n")
    assert example["question"] in prompt_text
    torch.manual_seed(0)
    out = model.generate(**batch, max_new_tokens=12, do_sample=True)
    new = out[0, batch["input_ids"].shape[1]:]
    assert 1 <= len(new) <= 12
    assert isinstance(tok.decode(new), str)


def test_words_tokenizer_keeps_names_and_values_whole_wherever_they_stand(tmp_path):
    from transformers import AutoTokenizer

    cfg = TinyConfig(tokenizer="words", vocab_size=512, n_training_examples=50)
    build(tmp_path / "w", cfg)
    tok = AutoTokenizer.from_pretrained(tmp_path / "w")  # as every trainer loads it (a Qwen2 tokenizer)
    world = ToyWorld(0)
    example = world.example(0, "train", style="short")
    name, value = example["meta"]["subject"].split()[0], example["meta"]["corrupted"][0]["true"]
    for word in (name, value, "1234"):
        ids = {tuple(tok.encode(f"{left}{word}{right}", add_special_tokens=False)[1:2])
               for left, right in ((" ", " "), ('("', '")'), ("(", ":"), ("\n", "."))}
        assert len(ids) == 1 and tok.convert_ids_to_tokens(list(ids.pop())) == [word]
    assert tok.tokenize("</search>") == ["</search>"]
    # an answer letter after a space is one token, so a value and the letter after it are two tokens
    ids = tok.encode(f"in {value} A\n", add_special_tokens=False)
    assert tok.convert_ids_to_tokens(ids)[-3] == value and tok.decode(ids[-2:-1]) == " A"
    assert tok.convert_ids_to_tokens(tok.encode("<answer>B</answer>", add_special_tokens=False))[1] == "B"
    assert " B" not in tok.convert_ids_to_tokens(tok.encode("in Brila", add_special_tokens=False))  # whole words only
    # a name that starts with a letter stays whole after a space (recipe 3 split " Brinieth" into "ĠB" "r" "in" "ieth")
    names = [w for w in set(world.vocabulary_text().split()) if w[0] in "AB" and len(w) > 1]
    assert names
    for name in names:
        assert tok.tokenize(f"Illness {name} fever") == ["Illness", "Ġ", name, "Ġ", "fever"]
    text = world.compact_trajectory(example)
    assert tok.decode(tok.encode(text, add_special_tokens=False)) == text
    assert tok.decode(tok.encode("Draiax's 数据", add_special_tokens=False)) == "Draiax's 数据"
    with pytest.raises(ValueError, match="tokenizer"):
        TinyConfig(tokenizer="chars")


def test_built_from_recognises_only_the_same_config(tiny_dir, tmp_path):
    from toy.tiny import built_from

    assert built_from(tiny_dir, TinyConfig())
    assert not built_from(tiny_dir, TinyConfig(seed=1))
    assert not built_from(tmp_path, TinyConfig())  # no card: nothing built there


def test_the_whole_word_recipe_derives_heads_from_the_width():
    cfg = TinyConfig.whole_word(3, 128, 4)
    assert (cfg.seed, cfg.world_seed, cfg.tokenizer, cfg.num_layers) == (3, 3, "words", 4)
    assert (cfg.num_heads, cfg.num_kv_heads, cfg.intermediate_size) == (8, 4, 256)
    assert (TinyConfig.whole_word(0, 16, 2).num_heads, TinyConfig.whole_word(0, 16, 2).num_kv_heads) == (2, 1)
    wide = TinyConfig.whole_word(0, 64, 4, head_dim=32)  # the judge's recipe: two 32-wide heads, no key sharing
    assert (wide.num_heads, wide.num_kv_heads, wide.hidden_size // wide.num_heads) == (2, 2, 32)
