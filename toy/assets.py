"""Build the offline stand-ins that tests and the quickstart use: the toy world's data and the tiny judge.

    python -m toy.assets --world_out runs/toy --n_train 1000 --n_test 200
    python -m toy.assets --tiny_out runs/tiny-judge --hidden_size 128 --layers 4

The core modules (`toy/world.py`, `toy/tiny.py`) only build; this entry point reads the command line.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from toy.tiny import TOKENIZERS, TinyConfig

logger = logging.getLogger("openrm.toy_assets")
_TINY = TinyConfig()


@dataclass
class ToyAssetsArguments:
    world_out: str | None = field(default=None, metadata={"help": "Write the toy world here: corpora, JSONL splits "
                                                                  "and an HF DatasetDict of judge pairs."})
    world_seed: int = field(default=0, metadata={"help": "Toy world seed."})
    n_train: int = field(default=1000, metadata={"help": "Training pairs."})
    n_test: int = field(default=200, metadata={"help": "Test pairs (about documents no training pair uses)."})
    tiny_out: str | None = field(default=None, metadata={"help": "Write the tiny judge (model and tokenizer) here."})
    seed: int = field(default=_TINY.seed, metadata={"help": "Tiny judge weight initialisation seed."})
    hidden_size: int = field(default=_TINY.hidden_size, metadata={"help": "Tiny judge width."})
    layers: int = field(default=_TINY.num_layers, metadata={"help": "Tiny judge decoder layers."})
    tokenizer: str = field(default=_TINY.tokenizer, metadata={"help": f"Tiny judge tokenizer, one of "
                                                                      f"{TOKENIZERS}."})

    def __post_init__(self):
        if not (self.world_out or self.tiny_out):
            raise ValueError("give --world_out, --tiny_out or both")
        if self.n_train < 0 or self.n_test < 0:
            raise ValueError("--n_train and --n_test must be >= 0")
        self.tiny = TinyConfig(seed=self.seed, hidden_size=self.hidden_size, num_layers=self.layers,
                               tokenizer=self.tokenizer)


def main(args: ToyAssetsArguments) -> None:
    from toy.tiny import build
    from toy.world import ToyWorld, write_dataset

    if args.world_out:
        out = write_dataset(ToyWorld(args.world_seed), args.world_out, args.n_train, args.n_test)
        logger.info("wrote toy world (seed %d) to %s", args.world_seed, out)
    if args.tiny_out:
        build(args.tiny_out, args.tiny)


def parse(argv: list[str] | None = None) -> tuple[ToyAssetsArguments]:
    from transformers import HfArgumentParser

    return HfArgumentParser(ToyAssetsArguments).parse_args_into_dataclasses(args=argv)


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    main(*parse())
