"""plumbing/arguments.py: a trainer's dataclasses set by a program equal those the same settings give on the command
line, without the settings becoming words first."""

import dataclasses
from pathlib import Path

import pytest

from plumbing.arguments import from_values

ROOT = Path(__file__).resolve().parents[2]
CONFIG = ROOT / "configs/grpo_openrm/smollm2_cpu.yaml"


def test_values_give_the_dataclasses_the_command_line_gives():
    from train.judge_trainer import configs, parse

    words = parse(["--config", str(CONFIG), "--model_name_or_path", "/m", "--dataset", "/d", "--output_dir", "/o",
                   "--max_steps", "30", "--retrievers", "wiki=/a", "arxiv=/b", "--seed", "1", "--learning_rate",
                   "1e-5", "--bf16", "true", "--tool_balance", "true", "--rival_kinds", "hedge", "evasion"])
    values = configs(CONFIG, model_name_or_path=Path("/m"), dataset=Path("/d"), output_dir=Path("/o"), max_steps=30,
                     retrievers=["wiki=/a", "arxiv=/b"], seed=1, learning_rate=1e-5, bf16=True, tool_balance=True,
                     rival_kinds=("hedge", "evasion"))
    for by_words, by_values in zip(words, values, strict=True):
        assert dataclasses.asdict(by_words) == dataclasses.asdict(by_values), type(by_words).__name__
    script, training, model = values
    assert (training.max_steps, training.bf16, script.retrievers, model.model_name_or_path) == (
        30, True, ["wiki=/a", "arxiv=/b"], "/m")


def test_a_warm_up_set_by_values_equals_its_command_line(tmp_path):
    from train.warmup_trainer import configs, parse

    data = tmp_path / "d.jsonl"
    data.write_text("{}\n")
    words = parse(["--dataset", str(data), "--model_name_or_path", "m", "--output_dir", "o", "--max_steps", "50",
                   "--lr_scheduler_type", "constant_with_warmup", "--report_to", "none", "--use_cpu", "true",
                   "--sort_within_steps", "true", "--verdict_weight", "10", "--lm_head", "plain"])
    values = configs(dataset=data, model_name_or_path="m", output_dir="o", max_steps=50,
                     lr_scheduler_type="constant_with_warmup", report_to="none", use_cpu=True, sort_within_steps=True,
                     verdict_weight=10.0, lm_head="plain")
    for by_words, by_values in zip(words, values, strict=True):
        assert dataclasses.asdict(by_words) == dataclasses.asdict(by_values), type(by_words).__name__


def test_flags_a_person_passed_override_values_which_override_the_config():
    from train.judge_trainer import configs

    _, training, _ = configs(CONFIG, ["--learning_rate", "3e-5"], output_dir="/o", learning_rate=2e-5, max_steps=7)
    assert training.learning_rate == 3e-5 and training.max_steps == 7
    _, training, _ = configs(CONFIG, output_dir="/o", learning_rate=2e-5)
    assert training.learning_rate == 2e-5


def test_a_value_no_dataclass_has_is_refused_by_name():
    from train.judge_trainer import configs

    with pytest.raises(ValueError, match="max_stepz"):
        configs(CONFIG, output_dir="/o", max_stepz=3)


def test_a_configs_env_mapping_is_set(tmp_path, monkeypatch):
    from trl import GRPOConfig

    monkeypatch.delenv("OPENRM_TEST_ENV", raising=False)
    config = tmp_path / "c.yaml"
    config.write_text("env:\n  OPENRM_TEST_ENV: 7\nmax_steps: 4\nuse_cpu: true\nbf16: false\n")
    (training,) = from_values((GRPOConfig,), config, output_dir=str(tmp_path))
    assert training.max_steps == 4
    import os

    assert os.environ["OPENRM_TEST_ENV"] == "7"
    config.write_text("- a list\n")
    with pytest.raises(ValueError, match="YAML mapping"):
        from_values((GRPOConfig,), config)
