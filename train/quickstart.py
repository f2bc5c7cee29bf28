"""The main job on the embedded default: toy world → corpora + judge pairs → bm25 indexes → tiny judge → prompts.

Runs offline on a laptop CPU in seconds. Later stages (GRPO, evaluation) join here as they land.

    make quickstart                       # = python -m train.quickstart --out runs/quickstart
    python -m train.quickstart --config configs/quickstart/tiny.yaml
"""

from __future__ import annotations

import json
import logging
from dataclasses import asdict, dataclass, field
from pathlib import Path

from openrm import protocol
from openrm.parsing import parse_response
from openrm.reward import RewardConfig, score
from openrm.tiny import CARD_NAME, TinyConfig
from openrm.tiny import build as build_tiny
from openrm.toyworld import ToyWorld, WorldSize, write_dataset
from retrieval.build_index import build_index
from retrieval.manifest import ManifestError, file_sha256
from retrieval.retriever import Index, load_index

logger = logging.getLogger("openrm.quickstart")


@dataclass
class QuickstartArguments:
    out: str = field(default="runs/quickstart", metadata={"help": "Folder for every artefact of the run."})
    seed: int = field(default=0, metadata={"help": "Seed of the toy world and of the tiny model's weights."})
    n_train: int = field(default=1000, metadata={"help": "Training judge pairs to synthesise."})
    n_test: int = field(default=200, metadata={"help": "Test judge pairs (about documents no train pair uses)."})
    n_show: int = field(default=2, metadata={"help": "How many rendered prompts to print."})
    reward_variant: str = field(default="composite", metadata={"help": "Reward variant used to score the gold demo."})

    def __post_init__(self) -> None:
        if self.n_train < 1 or self.n_test < 1:
            raise ValueError(f"n_train and n_test must be >= 1, got {self.n_train}, {self.n_test}")
        if self.n_show < 0:
            raise ValueError(f"n_show must be >= 0, got {self.n_show}")
        RewardConfig(variant=self.reward_variant)  # fails early on an unknown variant


def tiny_model(out: Path, cfg: TinyConfig) -> Path:
    """Build the tiny judge, or reuse the one a previous run left with the same config."""
    card = out / CARD_NAME
    if card.exists() and json.loads(card.read_text())["config"] == asdict(cfg):
        logger.info("[3/4] reusing tiny judge at %s", out)
        return out
    logger.info("[3/4] building tiny judge at %s", out)
    return build_tiny(out, cfg)


def toy_indexes(corpora: Path, out: Path) -> dict[str, Index]:
    """A bm25 index per toy corpus, rebuilt only when its corpus changed. numpy scoring: no numba warm-up."""
    indexes = {}
    for tsv in sorted(corpora.glob("*.tsv")):
        path, sha = out / tsv.stem, file_sha256(tsv)
        try:
            indexes[tsv.stem] = load_index(path, expect_backend="bm25", expect_corpus_sha256=sha, numba=False)
            logger.info("[2/4] reusing %s index at %s", tsv.stem, path)
        except ManifestError:
            build_index(tsv, "bm25", path, overwrite=True, progress=False)
            indexes[tsv.stem] = load_index(path, numba=False)
            logger.info("[2/4] built bm25 index of %s (%d passages) at %s", tsv.name, len(indexes[tsv.stem]), path)
    return indexes


def main(args: QuickstartArguments) -> None:
    out = Path(args.out)
    world = ToyWorld(args.seed, WorldSize())
    logger.info("[1/4] toy world: %d documents; writing corpora and %d/%d judge pairs to %s",
                len(world.documents), args.n_train, args.n_test, out)
    write_dataset(world, out / "data", args.n_train, args.n_test)
    indexes = toy_indexes(out / "data" / "corpora", out / "indexes")

    model_dir = tiny_model(out / "tiny-judge", TinyConfig(seed=args.seed, world_seed=args.seed))

    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    examples = world.examples(max(args.n_show, 1), "test")
    logger.info("[4/4] rendered judge prompts (chat template of %s):", model_dir)
    for example in examples[: args.n_show]:
        messages = protocol.judge_messages(example)
        text = tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
        n_tokens = len(tokenizer(text, add_special_tokens=False)["input_ids"])
        logger.info("----- %s (label %s, gold tool %s, %d tokens) -----\n%s",
                    example["id"], example["label"], example["gold_tool"], n_tokens, text)

    gold = world.gold_trajectory(examples[0])
    parsed = parse_response(gold)
    reward = score(parsed, examples[0], RewardConfig(variant=args.reward_variant))
    logger.info("----- a gold judging trajectory for %s -----\n%s", examples[0]["id"], gold)
    logger.info("parsed: answer=%s well_formed=%s searches=%s; reward (%s): %s",
                parsed.answer, parsed.well_formed, [tuple(s[:2]) for s in parsed.searches], args.reward_variant,
                reward._asdict())
    corpus_of = {tool.name: tool.corpus for tool in protocol.DEFAULT_TOOLS}
    for call in parsed.searches:
        (hits,) = indexes[corpus_of[call.tool]].search([call.query], 3)
        found = [p.id for p in hits if p.id in examples[0]["meta"]["doc_ids"]]
        logger.info("search %s(%r) -> %s; source document in top 3: %s", call.tool, call.query,
                    [(p.id, round(p.score, 2)) for p in hits], found or "no")
    logger.info("done: data in %s, indexes in %s, tiny judge in %s", out / "data", out / "indexes", model_dir)


if __name__ == "__main__":
    from trl import TrlParser

    logging.basicConfig(level=logging.INFO, format="%(message)s")
    (parsed_args,) = TrlParser(QuickstartArguments).parse_args_and_config()
    main(parsed_args)
