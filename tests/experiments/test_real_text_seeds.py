"""experiments/real_text_seeds.py: one real_text_judge run per seed on one set of pairs, and the table over seeds."""

import json

import pytest


def _results(accuracy: float, *, lexical: float = 0.82) -> dict:
    row = {"accuracy": accuracy, "ci95": [accuracy - 0.05, accuracy + 0.05], "n": 10, "ties": 0.1,
           "same_letter": 0.1, "unparsed_orders": 0.0, "single_order": 0.9, "searches": 2.0,
           "by_kind": {"numbers": {"n": 5, "accuracy": accuracy}}, "by_length": {"lead": {"n": 5, "accuracy": 0.5}}}
    ref = {"accuracy": lexical, "ci95": [0.7, 0.9], "n": 10, "ties": 0.0, "by_kind": {"numbers": {"accuracy": 1.0}},
           "by_length": {"lead": {"accuracy": 0.8}}}
    return {"rows": {"warm-up": row}, "references": {"lexical reference": ref},
            "coverage": {"all": 0.95, "by_kind": {"numbers": 1.0}, "by_length": {"lead": 0.86}}}


def test_every_seed_runs_on_the_same_pairs_and_the_table_spans_the_seeds(tmp_path, monkeypatch, capsys):
    from experiments import real_text_seeds as seeds

    ran = []

    def fake_run(command, log, threads):
        ran.append(command)
        out, seed = command[command.index("--out") + 1], int(command[command.index("--seed") + 1])
        if seed == 2:
            return 3  # a seed whose run breaks
        (tmp_path / "o" / f"s{seed}").mkdir(parents=True, exist_ok=True)
        (tmp_path / "o" / f"s{seed}" / "results.json").write_text(json.dumps(_results({0: 0.9, 1: 0.8}[seed])))
        assert out == str(tmp_path / "o" / f"s{seed}")
        return 0

    monkeypatch.setattr(seeds, "run_logged", fake_run)
    code = seeds.main(["--out", str(tmp_path / "o"), "--seeds", "0", "1", "2", "--", "--trace", "verdict",
                       "--dataset", str(tmp_path / "pairs"), "--rows", "warm-up"])
    assert code == 1  # seed 2 failed: said, and the others' table still written
    assert sorted(int(c[c.index("--seed") + 1]) for c in ran) == [0, 1, 2]
    for command in ran:  # the given pairs once, for every seed; the rest passed through as given
        assert command.count("--dataset") == 1 and command[command.index("--dataset") + 1] == str(tmp_path / "pairs")
        assert command[-4:] == ["--trace", "verdict", "--rows", "warm-up"]
    table = (tmp_path / "o" / "results.md").read_text()
    # columns for the seeds that finished; mean ± sd of 0.90 and 0.80 is 0.85 ± 0.07
    assert "| warm-up | 2 | 0.90 (0.85-0.95) | 0.80 (0.75-0.85) | 0.85 ± 0.07 | 0.10 | 0.00 | 0.85 | 0.50 |" in table
    assert "| lexical reference | - | - | - | 0.82 (0.70-0.90) | - | - | 1.00 | 0.80 |" in table
    saved = json.loads((tmp_path / "o" / "results.json").read_text())
    assert saved["failed"] == [2] and sorted(saved["seeds"]) == ["0", "1"]
    assert "seed 2 failed" in capsys.readouterr().err


def test_out_and_seed_are_the_commands_own(tmp_path):
    from experiments import real_text_seeds as seeds

    with pytest.raises(SystemExit):
        seeds.main(["--out", str(tmp_path), "--", "--seed", "4"])
    with pytest.raises(SystemExit):
        seeds.main(["--out", str(tmp_path), "--seeds", "1", "1"])


def test_seeds_that_judged_other_pairs_are_refused():
    from experiments.cells import seeds_table

    with pytest.raises(ValueError, match="other test pairs"):
        seeds_table({0: _results(0.9), 1: _results(0.8, lexical=0.5)})


def test_an_option_and_its_value_are_dropped_in_either_spelling():
    from experiments.real_text_seeds import without_option

    assert without_option(["--a", "1", "--dataset", "x", "--b", "--dataset=y"], "--dataset") == ["--a", "1", "--b"]


def test_a_second_stage_starts_each_seed_from_its_own_first_stage(tmp_path, monkeypatch):
    from experiments import real_text_seeds as seeds

    first = tmp_path / "first"
    for seed in (0, 1):
        (first / f"s{seed}" / "judge-sft").mkdir(parents=True)
        (first / f"s{seed}" / "judge-sft" / "config.json").write_text("{}")
    ran = []
    monkeypatch.setattr(seeds, "run_logged", lambda command, log, threads: ran.append(command) or 1)
    seeds.main(["--out", str(tmp_path / "second"), "--seeds", "0", "1", "--warm-from", str(first), "--",
                "--dataset", str(first / "data" / "dataset"), "--rows", "after GRPO"])
    models = {int(c[c.index("--seed") + 1]): c[c.index("--model") + 1] for c in ran}
    assert models == {0: str(first / "s0" / "judge-sft"), 1: str(first / "s1" / "judge-sft")}
    assert all(c.count("--model") == 1 for c in ran)


@pytest.mark.parametrize("passed, message", [
    (["--rows", "warm-up"], "pass the earlier run's pairs"),  # its own pairs would hold the warm-up's train articles
    (["--dataset", "d", "--model", "m"], "this command's own"),
])
def test_a_second_stage_is_refused_without_the_first_stages_pairs_or_with_another_model(tmp_path, capsys, passed,
                                                                                      message):
    from experiments import real_text_seeds as seeds

    with pytest.raises(SystemExit):
        seeds.main(["--out", str(tmp_path / "o"), "--seeds", "0", "--warm-from", str(tmp_path), "--", *passed])
    assert message in capsys.readouterr().err


def test_a_second_stage_is_refused_when_a_seed_has_no_first_stage(tmp_path, capsys):
    from experiments import real_text_seeds as seeds

    (tmp_path / "first" / "s0" / "judge-sft").mkdir(parents=True)
    (tmp_path / "first" / "s0" / "judge-sft" / "config.json").write_text("{}")
    with pytest.raises(SystemExit):
        seeds.main(["--out", str(tmp_path / "o"), "--seeds", "0", "2", "--warm-from", str(tmp_path / "first"), "--",
                    "--dataset", "d"])
    assert "seeds [2]" in capsys.readouterr().err
