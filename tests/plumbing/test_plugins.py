"""Kinds added from outside the library: the toy package's entry points, in-process registration, clear errors, and
the layout rule that the library never imports the toy package."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from plumbing import plugins

ROOT = Path(__file__).resolve().parents[2]
LIBRARY = ("openrm", "retrieval", "data_synthesis", "eval", "train", "plumbing")


def test_the_toy_package_installs_its_kinds():
    assert "toy-oracle" in plugins.names(plugins.MATCH_JUDGES)
    assert "toy" in plugins.names(plugins.SCORERS)
    assert "toyworld" in plugins.names(plugins.SYNTHESIS_ORACLES)
    from toy.oracle import match_judge

    assert plugins.load(plugins.MATCH_JUDGES, "toy-oracle") is match_judge


def test_registered_kinds_win_and_unknown_kinds_name_the_known_ones():
    def fake(spec, rows=()):
        return "fake judge"

    plugins.register(plugins.MATCH_JUDGES, "toy-oracle", fake)
    try:
        assert plugins.load(plugins.MATCH_JUDGES, "toy-oracle") is fake
    finally:
        plugins.unregister(plugins.MATCH_JUDGES, "toy-oracle")
    assert plugins.load(plugins.MATCH_JUDGES, "toy-oracle") is not fake
    with pytest.raises(ValueError, match=r"no openrm.match_judges kind 'nope'.*toy-oracle"):
        plugins.load(plugins.MATCH_JUDGES, "nope")


def test_specs_accept_plugin_kinds_and_refuse_unknown_ones():
    from openrm.judge_spec import JudgeSpec, judge_kinds
    from openrm.rubrics.scorer_spec import ScorerSpec, build_scorer

    assert {"none", "toy-oracle"} <= set(judge_kinds())
    with pytest.raises(ValueError, match="no judge folder there.*toy-oracle"):  # not a kind, so a folder: none there
        JudgeSpec(judge="oracle", no_tools=True).open_match()
    with pytest.raises(ValueError, match="scorer must be one of"):
        ScorerSpec(kind="toy-oracle")
    assert type(build_scorer(ScorerSpec(kind="toy"))).__name__ == "ToyScorer"
    from toy.oracle import toy_prompts
    from toy.world import ToyWorld

    rows = toy_prompts(ToyWorld(0), 3)
    judge, close = JudgeSpec(judge="toy-oracle", world_seed=0).open_match(rows)
    assert judge.agreements(rows[0]["question"], "") == 0 and close is None
    with pytest.raises(ValueError, match="not toy questions of world 0"):
        JudgeSpec(judge="toy-oracle", world_seed=0).open_match([{"question": "Who wrote Hamlet?"}])


def test_no_library_module_imports_the_toy_package():
    offenders = []
    for folder in LIBRARY:
        for path in sorted((ROOT / folder).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                         else [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level else [])
                offenders += [f"{path.relative_to(ROOT)}: {n}" for n in names if n == "toy" or n.startswith("toy.")]
    assert not offenders


def test_product_entry_points_have_no_toy_defaults():
    from eval.win_rate import HeadToHeadArguments
    from train.judge_trainer import OpenRMArguments

    with pytest.raises(ValueError, match="--retrievers"):
        OpenRMArguments(dataset="x")
    with pytest.raises(ValueError, match="--judge is required"):
        HeadToHeadArguments(policy="a", baseline="b", prompts="p.jsonl")
