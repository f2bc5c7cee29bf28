"""eval.downstream and eval.benchmark_files: our local task configs are the harness's official ones but for their data
source, each runs under lm-evaluation-harness on two tiny models offline (no socket opened), and the side-by-side
table, results.json and Δ are the harness's own numbers."""

from __future__ import annotations

import json
import socket
from dataclasses import replace
from functools import partial
from pathlib import Path

import pytest

from eval import benchmark_files, lm_harness
from eval.lm_harness import DownstreamArguments, Row

FIXTURES = Path(__file__).parent / "fixtures" / "downstream"
EXPECTED = {("truthfulqa_mc1", "acc,none"), ("truthfulqa_mc2", "acc,none"),
            ("mmlu_pro", "exact_match,custom-extract"), ("triviaqa", "exact_match,remove_whitespace")}
# Keys that differ by design: where the data comes from, and the task's own name.
DATA_KEYS = {"dataset_path", "dataset_name", "dataset_kwargs", "custom_dataset", "task", "tag"}


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def fixture_rows(name: str) -> list[dict]:
    return read_jsonl(FIXTURES / name)


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    from toy.tiny import TinyConfig, build

    root = tmp_path_factory.mktemp("downstream_models")
    return build(root / "base", TinyConfig(seed=0)), build(root / "dpo", TinyConfig(seed=1))


@pytest.fixture(scope="module")
def run(models, tmp_path_factory):
    """The whole command on the fixture files, with every socket connection refused and recorded."""
    base, dpo = models
    out = tmp_path_factory.mktemp("downstream_out")
    attempts = []

    def refuse(self, address):
        attempts.append(address)
        raise OSError(f"network disabled in this test: {address}")

    args = DownstreamArguments(model=str(dpo), baseline=str(base), data_dir=str(FIXTURES), out=str(out),
                               num_fewshot=1, max_gen_toks=8, batch_size="8", device="cpu", dtype="float32")
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(socket.socket, "connect", refuse)
        rows = lm_harness.run(args)
    return rows, out, attempts, args


@pytest.fixture(scope="module")
def official():
    """The harness's own task index (every built-in task)."""
    from lm_eval.tasks import TaskManager

    return TaskManager().task_index


def _ident(value):
    """A config value with functions named by module and name, so two loads of one function compare equal."""
    if isinstance(value, partial):
        return ("partial", _ident(value.func), value.args, tuple(sorted(value.keywords.items())))
    if callable(value):
        return (value.__module__, value.__qualname__)
    if isinstance(value, dict):
        return {k: _ident(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_ident(v) for v in value]
    return value


def test_local_configs_are_the_harness_official_ones_but_for_the_data(official):
    from lm_eval.tasks import TaskManager
    from lm_eval.tasks._yaml_loader import load_yaml

    ours = TaskManager(include_path=str(lm_harness.TASKS_DIR), include_defaults=False).task_index

    def load(index, name):
        return _ident(load_yaml(index[name].yaml_path, resolve_func=True))

    def strip(cfg, *extra):
        return {k: v for k, v in cfg.items() if k not in DATA_KEYS | set(extra)}

    for name in ("truthfulqa_mc1", "truthfulqa_mc2"):
        assert strip(load(ours, f"{name}_local")) == strip(load(official, name))
    # The harness's TriviaQA names a train split only for few-shot (its default is zero-shot).
    assert strip(load(ours, "triviaqa_local")) == strip(load(official, "triviaqa"), "training_split")

    group = load(ours, "mmlu_pro_local")
    official_group = load(official, "mmlu_pro")
    assert group["aggregate_metric_list"] == official_group["aggregate_metric_list"]
    shared = {k: v for k, v in group.items() if k not in ("group", "task", "aggregate_metric_list", "metadata")}
    subjects = {item["task"]: item for item in group["task"]}
    assert sorted(f"mmlu_pro_{s}" for s in subjects) == sorted(official_group["task"])
    for subject, item in subjects.items():
        theirs = load(official, f"mmlu_pro_{subject}")
        assert strip({**shared, **item}) == strip(theirs, "metadata"), subject


def test_the_documented_hub_task_names_exist_in_the_harness(official):
    assert set(lm_harness.HUB_TASKS) <= set(official)


@pytest.mark.slow
def test_every_task_and_metric_is_in_the_table_offline(run):
    rows, out, attempts, _ = run
    assert attempts == []
    assert {(r.task, r.metric) for r in rows} == EXPECTED
    n = {r.task: r.n for r in rows}
    assert n == {"truthfulqa_mc1": len(fixture_rows("truthfulqa_mc/validation.jsonl")),
                 "truthfulqa_mc2": len(fixture_rows("truthfulqa_mc/validation.jsonl")),
                 "mmlu_pro": len(fixture_rows("mmlu_pro/test.jsonl")),
                 "triviaqa": len(fixture_rows("triviaqa/validation.jsonl"))}
    assert all(0 <= v <= 1 for r in rows for v in (r.baseline, r.model))
    table = (out / "table.md").read_text(encoding="utf-8")
    for r in rows:
        assert f"| {r.task} | {lm_harness._metric_name(r.metric)} | {r.n} | {100 * r.baseline:.2f} | " in table
    assert (out / "plot.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.slow
def test_delta_is_model_minus_baseline(run):
    rows, out, _, _ = run
    for r in rows:
        assert r.delta == pytest.approx(r.model - r.baseline, abs=1e-12)
        assert (r.delta_pct is None) == (r.baseline == 0)
        if r.delta_pct is not None:
            assert r.delta_pct == pytest.approx(100 * (r.model - r.baseline) / r.baseline)
    # Different seeds: the two models' TruthfulQA MC2 probability mass differs, so the table compared two models.
    assert any(r.delta != 0 for r in rows)
    table = (out / "table.md").read_text(encoding="utf-8")
    for r in rows:
        assert f"| {100 * r.delta:+.2f} |" in table


@pytest.mark.slow
def test_results_json_holds_the_harness_numbers(run, models):
    import lm_eval

    rows, out, _, args = run
    record = json.loads((out / "results.json").read_text(encoding="utf-8"))
    assert [Row(**r) for r in record["rows"]] == rows
    for role in ("baseline", "model"):
        harness = json.loads((out / f"harness_{role}.json").read_text(encoding="utf-8"))
        for r in rows:
            assert harness["results"][record["harness_tasks"][r.task]][r.metric] == getattr(r, role)
    # And a separate call of the harness, outside our module, gives the same TruthfulQA numbers for the model.
    alone = lm_eval.simple_evaluate(model="hf", model_args={"pretrained": str(models[1]), "dtype": "float32"},
                                    tasks=["truthfulqa_mc1_local", "truthfulqa_mc2_local"], device="cpu",
                                    batch_size=1, task_manager=lm_harness.task_manager(False, str(FIXTURES)))
    for r in rows:
        if r.task.startswith("truthfulqa"):
            assert alone["results"][f"{r.task}_local"][r.metric] == pytest.approx(r.model, abs=1e-6)


@pytest.mark.slow
def test_a_lora_adapter_folder_evaluates_as_base_plus_adapter(run, models, tmp_path):
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM

    rows, _, _, args = run
    base, _ = models
    # A fresh LoRA adapter is the identity (B = 0): its scores must be the base model's.
    peft_model = get_peft_model(AutoModelForCausalLM.from_pretrained(base),
                                LoraConfig(r=2, target_modules=["q_proj", "v_proj"]))
    peft_model.save_pretrained(tmp_path / "adapter")
    assert lm_harness.model_args(str(tmp_path / "adapter"), "float32") == {
        "pretrained": str(Path(base).resolve()), "dtype": "float32", "peft": str((tmp_path / "adapter").resolve())}
    result = lm_harness.evaluate(str(tmp_path / "adapter"), replace(args, tasks=["truthfulqa_mc2"]))
    mc2 = next(r for r in rows if r.task == "truthfulqa_mc2")
    assert result["results"]["truthfulqa_mc2_local"]["acc,none"] == pytest.approx(mc2.baseline, abs=1e-6)


def test_missing_benchmark_files_are_named_before_any_model_loads(tmp_path):
    (tmp_path / "truthfulqa_mc").mkdir()
    (tmp_path / "truthfulqa_mc" / "validation.jsonl").write_text("", encoding="utf-8")
    args = DownstreamArguments(model="no/such-model", baseline="no/such-model", data_dir=str(tmp_path),
                               out=str(tmp_path / "out"))
    with pytest.raises(FileNotFoundError) as err:
        lm_harness.run(args)
    message = str(err.value)
    assert "mmlu_pro/test.jsonl" in message and "mmlu_pro/validation.jsonl" in message
    assert "triviaqa/validation.jsonl" in message and "truthfulqa_mc" not in message


@pytest.mark.parametrize("kwargs, error", [
    ({"tasks": ["hellaswag"], "data_dir": "d"}, "no local config for \\['hellaswag'\\]"),
    ({"tasks": []}, "--tasks is empty"),
    ({}, "--data_dir is required"),
])
def test_arguments_are_checked(kwargs, error):
    with pytest.raises(ValueError, match=error):
        DownstreamArguments(model="m", baseline="b", **kwargs)


def test_hub_mode_takes_any_harness_task_without_data():
    args = DownstreamArguments(model="m", baseline="b", tasks=["hellaswag"], hub_tasks=True)
    assert args.tasks == ["hellaswag"]


def test_model_args_for_a_folder_and_a_hub_id(tmp_path):
    (tmp_path / "m").mkdir()
    assert lm_harness.model_args(str(tmp_path / "m"), "auto") == {"pretrained": str((tmp_path / "m").resolve()),
                                                                   "dtype": "auto"}
    assert lm_harness.model_args("Qwen/Qwen2.5-3B", "bfloat16") == {"pretrained": "Qwen/Qwen2.5-3B",
                                                                    "dtype": "bfloat16"}


def test_compare_pairs_metrics_and_sums_group_sizes():
    def harness(mc2, group):
        return {"results": {"truthfulqa_mc2_local": {"alias": "x", "acc,none": mc2, "acc_stderr,none": 0.1},
                            "mmlu_pro_local": {"alias": "g", "exact_match,custom-extract": group,
                                               "exact_match_stderr,custom-extract": "N/A"}},
                "group_subtasks": {"mmlu_pro_local": ["a", "b"]},
                "n-samples": {"truthfulqa_mc2_local": {"original": 9, "effective": 7}, "a": {"effective": 3},
                              "b": {"effective": 4}}}

    rows = lm_harness.compare(harness(0.25, 0.0), harness(0.5, 0.1),
                              {"truthfulqa_mc2": "truthfulqa_mc2_local", "mmlu_pro": "mmlu_pro_local"})
    assert rows == [Row("truthfulqa_mc2", "acc,none", 0.25, 0.5, 0.25, 100.0, 7, 0.1, 0.1),
                    Row("mmlu_pro", "exact_match,custom-extract", 0.0, 0.1, 0.1, None, 7, None, None)]


@pytest.mark.parametrize("name", list(benchmark_files.BENCHMARKS))
def test_downloaded_parquet_converts_to_the_fixture_rows(name, tmp_path):
    import datasets

    benchmark = benchmark_files.BENCHMARKS[name]
    rows = fixture_rows(benchmark.target)
    datasets.Dataset.from_list(rows).to_parquet(str(tmp_path / "split.parquet"))
    args = benchmark_files.BenchmarkFilesArguments(out=str(tmp_path / "data"),
                                                   **{name: str(tmp_path / "split.parquet")})
    assert benchmark_files.main(args) == [tmp_path / "data" / benchmark.target]
    assert read_jsonl(tmp_path / "data" / benchmark.target) == rows


def test_a_split_without_a_column_the_config_reads_is_refused(tmp_path):
    import datasets

    rows = [{k: v for k, v in r.items() if k != "mc2_targets"} for r in fixture_rows("truthfulqa_mc/validation.jsonl")]
    datasets.Dataset.from_list(rows).to_json(str(tmp_path / "tqa.jsonl"))
    args = benchmark_files.BenchmarkFilesArguments(out=str(tmp_path / "data"), truthfulqa=str(tmp_path / "tqa.jsonl"))
    with pytest.raises(ValueError, match=r"tqa.jsonl: no column 'mc2_targets.choices'"):
        benchmark_files.main(args)
    assert not (tmp_path / "data" / "truthfulqa_mc" / "validation.jsonl").exists()


def test_a_save_to_disk_folder_of_several_splits_is_refused(tmp_path):
    import datasets

    split = datasets.Dataset.from_list(fixture_rows("triviaqa/validation.jsonl"))
    datasets.DatasetDict({"train": split, "validation": split}).save_to_disk(str(tmp_path / "dd"))
    with pytest.raises(ValueError, match="pass the folder of one split"):
        benchmark_files.read(tmp_path / "dd")
    datasets.DatasetDict({"validation": split})["validation"].save_to_disk(str(tmp_path / "one"))
    assert benchmark_files.read(tmp_path / "one").to_list() == fixture_rows("triviaqa/validation.jsonl")
