import json

import numpy as np
import pytest

from plumbing import atomic


def test_writes_replace_the_file_whole_and_leave_nothing_beside_it(tmp_path):
    path = tmp_path / "deep" / "results.json"
    atomic.write_json(path, {"a": 1})
    atomic.write_json(path, {"a": "é"}, ensure_ascii=False)
    assert json.loads(path.read_text(encoding="utf-8")) == {"a": "é"}
    assert path.read_text(encoding="utf-8").endswith("}\n")
    atomic.write_jsonl(tmp_path / "rows.jsonl", [{"x": 1}, {"y": "ü"}])
    assert (tmp_path / "rows.jsonl").read_text(encoding="utf-8") == '{"x": 1}\n{"y": "ü"}\n'
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["deep", "results.json", "rows.jsonl"]


def test_a_failed_write_keeps_the_old_file_and_removes_the_temporary_one(tmp_path):
    path = atomic.write_text(tmp_path / "stats.md", "old\n")
    with pytest.raises(ValueError):
        atomic.write_json(path, {"bad": object()}, default=lambda o: (_ for _ in ()).throw(ValueError("no")))
    with pytest.raises(RuntimeError), atomic.replacing(path) as tmp:
        tmp.write_text("half", encoding="utf-8")
        raise RuntimeError("killed mid-write")
    assert path.read_text(encoding="utf-8") == "old\n"
    assert [p.name for p in tmp_path.iterdir()] == ["stats.md"]


def test_the_temporary_name_keeps_the_suffix_for_writers_that_add_one(tmp_path):
    target = tmp_path / "000001.npy"
    with atomic.replacing(target) as tmp:
        assert tmp.suffix == ".npy" and tmp.parent == tmp_path
        np.save(tmp, np.arange(3))
    assert np.load(target).tolist() == [0, 1, 2]
    assert [p.name for p in tmp_path.iterdir()] == ["000001.npy"]
