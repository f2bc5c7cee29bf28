"""The command-line vocabulary every entry point shares: KEY=VALUE entries, the repeated-flag rule, and a trainer's
dataclasses set from a program (config values, no command-line words).

    corpus: list[str] = field(default_factory=list, metadata={"help": "NAME=PATH, repeatable", "action": Collect})
    parse_pairs(["wiki=indexes/wiki"], "--retrievers")  # {"wiki": "indexes/wiki"}
    script, training, model = from_values((JudgeArgs, GRPOConfig, ModelConfig), "configs/x.yaml", max_steps=30)

Lives below `retrieval/` and `openrm/` so that the retrieval server, the trainers, evaluation and data synthesis
read their flags alike without importing each other.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any


class Collect(argparse.Action):
    """A list flag that may be repeated (`--x a --x b`) or given several values (`--x a b`), or both: every value
    on the command line is kept, and together they replace the default or the YAML config's list.

    argparse's own "extend" appends to the default (a config's list would survive the command line), and a bare
    `nargs="+"` keeps only the last occurrence."""

    def __call__(self, parser, namespace, values, option_string=None):
        current = getattr(namespace, self.dest, None)
        fresh = current is None or current is self.default  # the first occurrence replaces the default
        setattr(namespace, self.dest, [*([] if fresh else current), *values])


def parse_pairs(items: Iterable[str], what: str) -> dict[str, str]:
    """`["KEY=VALUE", ...]` as a dict; an entry without `=`, an empty side or a key given twice is a ValueError
    naming `what` (the flag or config key)."""
    out: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key or not value:
            raise ValueError(f"{what} entries are KEY=VALUE, got {item!r}")
        if key in out:
            raise ValueError(f"{what}: {key!r} given twice")
        out[key] = value
    return out


def from_values(types: tuple[type, ...], config: str | os.PathLike | None = None, flags: Sequence[str] = (),
                **values: Any) -> tuple:
    """The dataclasses `types` as a program sets them: `config`'s YAML values, then `values` (typed: a list stays a
    list, a path a path until the field's own type), then `flags` (command-line words a person passed through, e.g.
    a quickstart's `--grpo_args`), each over the one before. The same parser and `__post_init__` checks as the
    command line (TrlParser, whose mechanism for a config's values this reuses); a config's `env` mapping is set
    in the environment as TrlParser does; a value no type has is a ValueError naming it."""
    import yaml
    from trl import TrlParser

    base: dict[str, Any] = {}
    if config is not None:
        base = yaml.safe_load(Path(config).read_text(encoding="utf-8")) or {}
        if not isinstance(base, dict):
            raise ValueError(f"config {config} must hold a YAML mapping")
        for key, value in (base.pop("env", None) or {}).items():
            os.environ[key] = str(value)
    given = {**base, **{k: _plain(v) for k, v in values.items()}}
    parser = TrlParser(types)
    unknown = parser.set_defaults_with_config(**given)
    if unknown:
        names = sorted({w[2:] for w in unknown[::2]})
        raise ValueError(f"no field of {[t.__name__ for t in types]} is called {names}")
    return tuple(parser.parse_args_into_dataclasses(args=list(flags)))


def _plain(value: Any) -> Any:
    """Paths as the strings every trainer field holds, inside lists too."""
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value
