"""Kinds that another package adds to the library without the library importing it: a match judge, a rubric scorer
or a synthesis oracle is named on the command line (`--judge toy-oracle`) and found through a Python entry point
(pyproject.toml's `[project.entry-points."openrm.match_judges"]`), or registered in process (tests).

    register(MATCH_JUDGES, "fake", build_fake)        # in process
    names(MATCH_JUDGES)                               # ["fake", "toy-oracle", ...]: registered + installed
    builder = load(MATCH_JUDGES, "toy-oracle")        # the callable the entry point names

The offline demo package `toy` registers its kinds this way, so a product run never falls back on it: a kind that no
installed package provides is a clear error naming the kinds there are.
"""

from __future__ import annotations

from collections.abc import Callable
from importlib.metadata import entry_points
from typing import Any

MATCH_JUDGES = "openrm.match_judges"  # build(spec: openrm.judge_spec.JudgeSpec, rows) -> pairwise judge
SCORERS = "openrm.scorers"  # build(spec: ScorerSpec) -> Scorer
SYNTHESIS_ORACLES = "openrm.synthesis_oracles"  # build(seed: int) -> an oracle (data_synthesis.build_dataset)

_registered: dict[str, dict[str, Callable[..., Any]]] = {}


def register(group: str, name: str, builder: Callable[..., Any]) -> None:
    """Add `name` to `group` in this process (it wins over an installed entry point of the same name)."""
    _registered.setdefault(group, {})[name] = builder


def unregister(group: str, name: str) -> None:
    _registered.get(group, {}).pop(name, None)


def names(group: str) -> list[str]:
    """Every kind of `group`: registered in process or installed as an entry point."""
    return sorted(set(_registered.get(group, {})) | {ep.name for ep in entry_points(group=group)})


def load(group: str, name: str) -> Callable[..., Any]:
    """The builder of kind `name` in `group`; ValueError naming the known kinds when there is none."""
    if name in _registered.get(group, {}):
        return _registered[group][name]
    found = [ep for ep in entry_points(group=group) if ep.name == name]
    if not found:
        raise ValueError(f"no {group} kind {name!r}: installed and registered kinds are {names(group) or 'none'}")
    try:
        return found[0].load()
    except ImportError as err:
        raise ValueError(f"{group} kind {name!r} is installed as {found[0].value!r}, which does not import: {err}") \
            from err
