"""A tiny Qwen2-architecture judge built offline in seconds: random weights, a locally trained tokenizer.

There is no model hub here, so tests and the quickstart build their model instead of downloading one.
The tokenizer is a byte-level BPE trained on toy-world text and our prompts, with Qwen's special tokens
and TRL's own `qwen2_5.jinja` chat template, so chat formatting, stop strings and multi-token tags behave
as they do with the real Qwen2.5 (our tags are deliberately *not* single tokens).

    build("runs/tiny-judge", TinyConfig(hidden_size=128))  # CLI: python -m toy.assets --tiny_out DIR
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from openrm import protocol
from toy.world import ToyWorld

logger = logging.getLogger(__name__)

PAD_TOKEN = "<|endoftext|>"
IM_START = "<|im_start|>"
IM_END = "<|im_end|>"
SPECIAL_TOKENS = (PAD_TOKEN, IM_START, IM_END)
CARD_NAME = "tiny_card.json"
TOKENIZERS = ("bpe", "words")
_WORD = re.compile(r"[A-Za-z0-9]+")
# Bumped whenever the tokenizer or model recipe changes for the same TinyConfig, so `built_from` rebuilds.
# 2: the whole-word tokenizer's " A" / " B" letter tokens; 3: only as whole words (2 split " Brila" into " B" "rila");
# 4: the letters from the BPE, not added tokens (3 split every name starting with A or B after a space).
RECIPE = 4
LETTERS = ("A", "B")


@dataclass(frozen=True)
class TinyConfig:
    seed: int = 0
    vocab_size: int = 4096
    hidden_size: int = 64
    intermediate_size: int = 128
    num_layers: int = 2
    num_heads: int = 4
    num_kv_heads: int = 2
    max_positions: int = 8192
    world_seed: int = 0
    n_training_examples: int = 400  # judge pairs whose text trains the tokenizer
    # "bpe": byte-level BPE as GPT-2/Qwen split text (a name's tokens depend on what precedes it). "words": every
    # space and punctuation mark is its own piece, so a word is the same token(s) wherever it stands and the toy
    # world's words and numbers are single tokens: what lets a tiny judge learn to copy a name or a value.
    tokenizer: str = "bpe"

    def __post_init__(self) -> None:
        if self.tokenizer not in TOKENIZERS:
            raise ValueError(f"tokenizer must be one of {TOKENIZERS}, got {self.tokenizer!r}")

    @classmethod
    def whole_word(cls, seed: int, hidden_size: int, num_layers: int, head_dim: int = 16) -> TinyConfig:
        """The quickstarts' recipe: the whole-word tokenizer, a head per `head_dim` dimensions (at least 2), an
        MLP twice the width; with 16-wide heads grouped query attention with half as many key/value heads, with
        wider heads one key/value head per head (the judge's recipe: bench/RESULTS.md, "Learning proof")."""
        heads = max(hidden_size // head_dim, 2)
        return cls(seed=seed, world_seed=seed, tokenizer="words", vocab_size=1024, hidden_size=hidden_size,
                   intermediate_size=2 * hidden_size, num_layers=num_layers, num_heads=heads,
                   num_kv_heads=heads // 2 if head_dim <= 16 else heads)


def qwen_chat_template() -> str:
    """TRL's copy of the Qwen2.5 chat template, read from the installed package."""
    from importlib.resources import files

    return files("trl").joinpath("chat_templates/qwen2_5.jinja").read_text(encoding="utf-8")


def _training_text(cfg: TinyConfig) -> Iterator[str]:
    world = ToyWorld(cfg.world_seed)
    for doc in world.documents:
        yield f"{doc.title}\n{doc.text}"
    yield protocol.system_prompt()
    yield protocol.system_prompt(tools=())
    for example in world.examples(cfg.n_training_examples):
        yield protocol.user_prompt(example["question"], example["answer_a"], example["answer_b"])
        yield world.gold_trajectory(example)
    if cfg.tokenizer == "words":
        yield protocol.system_prompt(style="compact")
        yield protocol.system_prompt(tools=(), style="compact")
        for split in ("train", "test"):  # every name, value and wrong value a short pair can hold
            for example in world.examples(cfg.n_training_examples, split, style="short"):
                yield protocol.user_prompt(example["question"], example["answer_a"], example["answer_b"],
                                           style="compact")
                yield world.compact_trajectory(example)
        yield world.vocabulary_text()
        yield " ".join(str(n) for n in range(900, 2100))  # every year a short pair can hold, wrong ones included


def build_tokenizer(cfg: TinyConfig = TinyConfig()):
    """A byte-level BPE tokenizer (any string encodes) wrapped as a transformers fast tokenizer."""
    from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=cfg.vocab_size,
        min_frequency=2,
        special_tokens=list(SPECIAL_TOKENS),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(_training_text(cfg), trainer=trainer)
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=tok,
        eos_token=IM_END,
        pad_token=PAD_TOKEN,
        chat_template=qwen_chat_template(),
        model_max_length=cfg.max_positions,
    )
    if cfg.tokenizer == "words":
        # Every word and number of the toy world, and our tags, as a token of its own. Added tokens are matched before
        # the (Qwen) pre-tokenizer runs, so a name is the same token after a space, a quote or a bracket; the BPE
        # below them only spells spaces, punctuation and unseen text. (The "bpe" tokenizer splits tags, as Qwen's
        # does, so that stop strings spanning tokens stay tested.)
        # The answer letters stay with the BPE, which spells " A" and " B" (space included) as one token each: in the
        # compact prompt an answer's value is followed by its letter, so "2022 A" is two tokens, value then letter,
        # and the judge's deciding step ("<think>2022 A</think>") is the plain induction copy (find the value, copy
        # the token after it) rather than a copy that must skip a space token (bench/RESULTS.md, "Learning proof").
        # They are not added tokens: an added " B" overlaps " Brinieth" and, when the tokenizers library drops it
        # for not being a whole word, the name's own match goes with it ("ĠB" "r" "in" "ieth"; recipe 3).
        words = sorted({w for text in _training_text(cfg) for w in _WORD.findall(text)} - set(LETTERS))
        tags = [t for name in protocol.TAGS for t in (protocol.open_tag(name), protocol.close_tag(name))]
        tokenizer.add_tokens([AddedToken(t, normalized=False) for t in tags]
                             + [AddedToken(w, single_word=True, normalized=False) for w in words])
        for letter in LETTERS:
            if len(tokenizer.tokenize(f" {letter}")) != 1:
                raise ValueError(f"the tiny tokenizer spells ' {letter}' in more than one token; the deciding copy "
                                 "needs it whole (train it on more text holding the letter)")
    tokenizer.padding_side = "left"
    return tokenizer


def build_model(tokenizer, cfg: TinyConfig = TinyConfig()):
    """A randomly initialised Qwen2ForCausalLM sized by `cfg`, deterministic under `cfg.seed`."""
    import torch
    from transformers import GenerationConfig, Qwen2Config, Qwen2ForCausalLM

    eos_ids = [tokenizer.convert_tokens_to_ids(IM_END), tokenizer.convert_tokens_to_ids(PAD_TOKEN)]
    config = Qwen2Config(
        vocab_size=len(tokenizer),
        hidden_size=cfg.hidden_size,
        intermediate_size=cfg.intermediate_size,
        num_hidden_layers=cfg.num_layers,
        num_attention_heads=cfg.num_heads,
        num_key_value_heads=cfg.num_kv_heads,
        max_position_embeddings=cfg.max_positions,
        tie_word_embeddings=True,
        bos_token_id=None,
        eos_token_id=eos_ids[0],
        pad_token_id=eos_ids[1],
    )
    torch.manual_seed(cfg.seed)
    model = Qwen2ForCausalLM(config)
    model.generation_config = GenerationConfig(eos_token_id=eos_ids, pad_token_id=eos_ids[1], do_sample=True)
    return model


def built_from(out_dir: str | Path, cfg: TinyConfig) -> bool:
    """Whether `out_dir` already holds a tiny model built from exactly `cfg` by this version of the recipe (its card
    says so)."""
    card = Path(out_dir) / CARD_NAME
    if not card.exists():
        return False
    written = json.loads(card.read_text(encoding="utf-8"))
    return written["config"] == asdict(cfg) and written.get("recipe") == RECIPE


def build(out_dir: str | Path, cfg: TinyConfig = TinyConfig()) -> Path:
    """Write model, tokenizer and a card saying what this is to `out_dir`; returns the folder."""
    out = Path(out_dir)
    tokenizer = build_tokenizer(cfg)
    model = build_model(tokenizer, cfg)
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    card: dict[str, Any] = {"kind": "openrm-tiny", "random_init": True, "config": asdict(cfg), "recipe": RECIPE,
                            "parameters": sum(p.numel() for p in model.parameters())}
    (out / CARD_NAME).write_text(json.dumps(card, indent=2) + "\n", encoding="utf-8")
    logger.info("tiny judge (%d parameters, vocab %d) written to %s", card["parameters"], len(tokenizer), out)
    return out

