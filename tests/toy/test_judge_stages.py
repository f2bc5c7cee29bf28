"""toy/judge_stages.py for the real-text judge: a judge folder links the model's files beside a card of the table's
settings, and the exported GRPO stage passes its flags in one fixed order (they are its run's cache key)."""

from __future__ import annotations

import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CONFIG = ROOT / "configs/grpo_openrm/smollm2_wiki_cpu.yaml"


def test_a_judge_folder_links_the_models_files_and_writes_the_tables_settings(tmp_path):
    from toy.judge_stages import judge_folder, judging_settings

    model = tmp_path / "model"
    model.mkdir()
    (model / "model.safetensors").write_bytes(b"weights")
    (model / "judge_card.json").write_text("{}")
    settings = judging_settings(CONFIG) | {"topk": 2}
    out = judge_folder(model, tmp_path / "judges" / "sft", settings)
    assert (out / "model.safetensors").is_symlink() and (out / "model.safetensors").read_bytes() == b"weights"
    assert json.loads((out / "judge_card.json").read_text())["topk"] == 2  # the model's own card is not linked
    judge_folder(model, out, settings)  # a second call keeps the links
    (out / "stage.json").symlink_to(model / "warmup.json")  # a link left by an earlier run, its file since renamed
    (model / "stage.json").write_text('{"steps": 3}')
    judge_folder(model, out, settings)
    assert json.loads((out / "stage.json").read_text()) == {"steps": 3}


def test_the_exported_grpo_stage_passes_the_values_of_its_cache_key(tmp_path, monkeypatch):
    from openrm.card import JudgeCard
    from toy import judge_stages
    from train import judge_export

    calls = []
    monkeypatch.setattr(judge_stages, "grpo", lambda *a, **kw: calls.append((a, kw)) or tmp_path / "run")
    monkeypatch.setattr(judge_export, "ExportArguments", lambda **kw: kw)
    monkeypatch.setattr(judge_export, "export_judge", lambda args: None)
    settings = judge_stages.judging_settings(CONFIG)
    (tmp_path / "judges" / "grpo").mkdir(parents=True)
    JudgeCard(**settings).write(tmp_path / "judges" / "grpo")
    built_elsewhere = tmp_path / "pairs"  # a dataset folder of another name is linked as <data>/dataset
    built_elsewhere.mkdir()
    exported = judge_stages.exported_grpo(tmp_path / "judge-sft", built_elsewhere, tmp_path / "data", {"wiki": "i"},
                                          settings, tmp_path, 5, seed=1, learning_rate=1e-5, bf16=True,
                                          both_orders=True, rival_share=0.25, config=CONFIG)
    (warm, data, indexes, out, steps, config), values = calls[0]
    assert exported == tmp_path / "judges" / "grpo" and config == CONFIG
    assert (warm, data, indexes, out, steps) == (tmp_path / "judge-sft", tmp_path / "data", {"wiki": "i"},
                                                 tmp_path / "grpo", 5)
    assert (tmp_path / "data" / "dataset").resolve() == built_elsewhere.resolve()
    assert values == {"seed": 1, "learning_rate": 1e-5, "bf16": True, "max_new_tokens": settings["max_new_tokens"],
                      "max_completion_length": settings["max_completion_tokens"],
                      "trajectory_log": tmp_path / "grpo" / "trajectories.jsonl", "both_orders": True,
                      "rival_share": 0.25}
    judge_stages.exported_grpo(tmp_path / "judge-sft", built_elsewhere, tmp_path / "data", {"wiki": "i"}, settings,
                               tmp_path, 5, seed=1, learning_rate=1e-5, bf16=True, both_orders=False, rival_share=0.0,
                               order_groups=True, config=CONFIG)
    assert calls[1][1]["order_groups"] is True and "both_orders" not in calls[1][1]
    judge_stages.exported_grpo(tmp_path / "judge-sft", built_elsewhere, tmp_path / "data", {"wiki": "i"}, settings,
                               tmp_path, 5, seed=1, learning_rate=1e-5, bf16=True, both_orders=False, rival_share=0.5,
                               rival_kinds=["hedge", "evasion"], config=CONFIG)
    assert (calls[2][1]["rival_share"], calls[2][1]["rival_kinds"]) == (0.5, ["hedge", "evasion"])
    judge_stages.exported_grpo(tmp_path / "judge-sft", built_elsewhere, tmp_path / "data", {"wiki": "i"}, settings,
                               tmp_path, 5, seed=1, learning_rate=1e-5, bf16=True, both_orders=False, rival_share=0.5,
                               rival_kinds=["hedge", "evasion", "markup"], config=CONFIG)
    assert "rival_kinds" not in calls[3][1]  # every kind: the key of a run without the setting
    chosen = tmp_path / "grpo-pairs"  # the pairs `unsettled_pairs` kept: how they were chosen joins the run's key
    (chosen / "dataset").mkdir(parents=True)
    (chosen / "unsettled.json").write_text("{}")
    (chosen / "stage.json").write_text('{"margin": 3.0}')
    judge_stages.exported_grpo(tmp_path / "judge-sft", chosen / "dataset", tmp_path / "data", {"wiki": "i"}, settings,
                               tmp_path, 5, seed=1, learning_rate=1e-5, bf16=True, both_orders=False, rival_share=0.0,
                               config=CONFIG)
    assert calls[4][0][1] == chosen and calls[4][1]["pairs"] == {"margin": 3.0}
    assert all("pairs" not in kw for _, kw in calls[:4])


def test_a_stage_marker_compares_equal_to_the_values_it_was_written_from(tmp_path):
    from plumbing.records import STAGE
    from toy.stages import trained

    runs = []
    origin = {"values": {"trajectory_log": tmp_path / "t.jsonl", "rival_kinds": ("hedge", "evasion")}}
    trained(tmp_path / "run", origin, 3, "run.json", lambda resume: runs.append(resume), "a stage")
    assert runs == [None]  # nothing to resume
    assert json.loads((tmp_path / "run" / STAGE).read_text())["values"]["rival_kinds"] == ["hedge", "evasion"]
    (tmp_path / "run" / "checkpoint-2").mkdir()
    trained(tmp_path / "run", origin, 3, "run.json", lambda resume: runs.append(resume), "a stage")
    assert runs == [None, str(tmp_path / "run" / "checkpoint-2")]  # the same origin (a tuple read back as a list)
