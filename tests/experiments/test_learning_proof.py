"""experiments/learning_proof.py: one warm-up per seed and stage, every reward variant trained from it, and run
folders named by the settings given on the command line."""

from toy.world import ToyWorld


def test_learning_proof_runs_each_variant_from_one_warm_up_per_seed(tmp_path, monkeypatch):
    import argparse
    import importlib

    proof = importlib.import_module("experiments.learning_proof")
    warmed, trained = [], []
    monkeypatch.setattr(proof, "resolve", lambda name: str(tmp_path / name))
    monkeypatch.setattr(proof, "warm_up", lambda world, base, out, plan: warmed.append((out.name, plan)) or out)
    monkeypatch.setattr(proof, "grpo", lambda start, data, indexes, out, steps, **values: trained.append(
        (start.name, out.name, values)) or out)
    judgings = []
    monkeypatch.setattr(proof, "judged", lambda *a, **kw: judgings.append(kw) or {"accuracy": 1.0})
    monkeypatch.setattr(proof, "measured", lambda *a, **kw: judgings.append(kw) or {"accuracy": 0.0})
    monkeypatch.setattr(proof, "grpo_curve", lambda run: [])
    args = argparse.Namespace(stage="a", seeds=[0, 1], model="smollm2-135m-instruct", sft_steps=40, sft_batch=8,
                              sft_lr=1e-4, domains=["wiki", "science"], variants=["composite", "em_only"],
                              grpo_steps=30, grpo_lr=1e-5, tool_term="share", grpo_generations=8, grpo_beta=0.04,
                              grpo_batch=None, hedge_share=0.0, out=tmp_path, bf16=False, tool_balance=False)
    runs = proof.run_stage(args, ToyWorld(0), tmp_path, {}, [], None)
    assert [(name, plan.random_tool, plan.seed) for name, plan in warmed] == [
        ("a-sft-s0-40x8", True, 0), ("a-sft-s1-40x8", True, 1)]
    suffix = "30x1e-05-g8-kl0.04"  # settings given on the command line name the run
    assert [(start, out) for start, out, _ in trained] == [
        ("a-sft-s0-40x8", f"a-composite-{suffix}-s0"), ("a-sft-s0-40x8", f"a-em_only-{suffix}-s0"),
        ("a-sft-s1-40x8", f"a-composite-{suffix}-s1"), ("a-sft-s1-40x8", f"a-em_only-{suffix}-s1")]
    values = trained[1][2]
    assert values["reward_variant"] == "em_only"
    assert values["num_generations"] == 8 and values["beta"] == 0.04
    assert set(runs) == {"sft/s0", "sft/s1", f"composite-{suffix}/s0", f"em_only-{suffix}/s0",
                         f"composite-{suffix}/s1", f"em_only-{suffix}/s1"}
    assert f"| GRPO composite-{suffix} | 2 |" in proof.table(runs, args)
    # stage C: the warm-up searches in a share of its trajectories; its folder says so, and the table counts searches
    warmed.clear(), trained.clear()
    args.stage, args.search_share, args.variants, args.seeds = "c", 0.3, ["composite"], [2]
    runs = proof.run_stage(args, ToyWorld(0), tmp_path, {}, [], None)
    assert [(name, plan.random_tool, plan.search_share) for name, plan in warmed] == [
        ("c-sft-s2-40x8-search0.3", False, 0.3)]
    assert [out for _, out, _ in trained] == [f"c-composite-{suffix}-s2"]
    assert "searches_per_order" in proof.table(runs, args).splitlines()[0]
    # hedged training pairs: the warm-up plan carries the share, and the warm-up and run folders name it
    warmed.clear(), trained.clear()
    args.hedge_share = 0.25
    proof.run_stage(args, ToyWorld(0), tmp_path, {}, [], None)
    assert [(name, plan.hedge_share) for name, plan in warmed] == [("c-sft-s2-40x8-search0.3-hedge0.25", 0.25)]
    assert [out for _, out, _ in trained] == [f"c-composite-{suffix}-hedge0.25-s2"]
    assert all("dtype" not in kw for kw in judgings)
    # bf16: the warm-up plan, GRPO's overrides and every judgment carry it, and its folders are apart from float32's
    warmed.clear(), trained.clear(), judgings.clear()
    args.hedge_share, args.bf16 = 0.0, True
    runs = proof.run_stage(args, ToyWorld(0), tmp_path, {}, [], None)
    assert [(name, plan.bf16) for name, plan in warmed] == [("c-sft-s2-40x8-search0.3-bf16", True)]
    assert [out for _, out, _ in trained] == [f"c-composite-{suffix}-bf16-s2"]
    assert trained[0][2]["bf16"] is True
    assert judgings and all(kw.get("dtype") == "bfloat16" for kw in judgings)
    assert f"| GRPO composite-{suffix}-bf16 | 1 |" in proof.table(runs, args)
    # tool-centred advantages: GRPO gets the switch, the run folder and row name it, the warm-up is shared
    warmed.clear(), trained.clear()
    args.tool_balance = True
    proof.run_stage(args, ToyWorld(0), tmp_path, {}, [], None)
    assert [name for name, _ in warmed] == ["c-sft-s2-40x8-search0.3-bf16"]
    assert [out for _, out, _ in trained] == [f"c-composite-{suffix}-toolbal-bf16-s2"]
    assert trained[0][2]["tool_balance"] is True


def test_learning_proof_passes_only_the_group_settings_it_is_given(tmp_path):
    import argparse
    import importlib

    proof = importlib.import_module("experiments.learning_proof")
    args = argparse.Namespace(tool_term="share", grpo_steps=30, grpo_lr=1e-5, grpo_generations=None, grpo_beta=None,
                              grpo_batch=None, hedge_share=0.0, bf16=False, tool_balance=False)
    values = proof.grpo_overrides(args, "composite", 0, tmp_path)
    assert not {"num_generations", "beta", "bf16", "tool_balance", "per_device_train_batch_size"} & set(values)
    assert proof.run_suffix(args) == "-30x1e-05"


def test_the_curves_plot_draws_each_variant_over_the_steps_every_seed_logged(tmp_path, monkeypatch):
    import matplotlib.axes

    from experiments.cells import plot_over_steps

    drawn = []
    real_plot = matplotlib.axes.Axes.plot
    monkeypatch.setattr(matplotlib.axes.Axes, "plot",
                        lambda self, x, y, **kw: drawn.append((list(x), list(y), kw.get("label"))) or real_plot(
                            self, x, y, **kw))
    seed0 = [{"step": 1, "openrm/em": 0.2}, {"step": 2, "openrm/em": 0.4}, {"step": 3, "openrm/em": 0.9}]
    seed1 = [{"step": 1, "openrm/em": 0.4}, {"step": 2, "openrm/em": 0.8}]  # stopped a step early
    out = plot_over_steps({"composite": [seed0, seed1], "em_only": []}, [("openrm/em", "R_EM")], tmp_path / "c.png")
    assert out == tmp_path / "c.png" and out.stat().st_size > 0
    means = [(x, y) for x, y, label in drawn if label]
    assert [(x, [round(v, 6) for v in y]) for x, y in means] == [([1, 2], [0.3, 0.6])]
    assert [label for *_, label in drawn if label] == ["composite (2 seeds)"]  # a variant with no curve is left out
    drawn.clear()  # a window of 2: each line the mean of its last two logged steps
    plot_over_steps({"composite": [seed0, seed1]}, [("openrm/em", "R_EM")], tmp_path / "w.png", window=2)
    assert [[round(v, 6) for v in y] for _, y, label in drawn if label] == [[0.3, 0.45]]
    assert [[round(v, 6) for v in y] for _, y, label in drawn if not label][0] == [0.2, 0.3, 0.65]
    assert plot_over_steps({"em_only": []}, [("openrm/em", "R_EM")], tmp_path / "none.png") is None
    assert not (tmp_path / "none.png").exists()


def test_stage_a_centres_each_tools_advantages_unless_told_not_to(tmp_path, monkeypatch):
    import importlib
    import sys

    proof = importlib.import_module("experiments.learning_proof")
    seen = []
    monkeypatch.setattr(proof, "write_dataset", lambda *a, **kw: None)
    monkeypatch.setattr(proof, "toy_indexes", lambda corpora, out: {})
    monkeypatch.setattr(proof, "run_stage", lambda args, *rest: seen.append(args.tool_balance) or {})
    monkeypatch.setattr(proof, "plot_over_steps", lambda *a, **kw: None)
    written = []
    monkeypatch.setattr(proof.atomic, "write_json", lambda path, *a, **kw: written.append(path.parent.name))
    for stage, flag, centred, name in (("a", [], True, "stage_a"), ("a", ["--tool-balance", "false"], False,
                                        "stage_a_plain"), ("a", ["--tool-balance"], True, "stage_a"),
                                       ("c", [], False, "stage_c"), ("c", ["--tool-balance", "true"], True,
                                                                           "stage_c_toolbal")):
        monkeypatch.setattr(sys, "argv", ["learning_proof", "--stage", stage, "--out", str(tmp_path), "--bf16",
                                          "false", "--other-world", "-1", *flag])
        proof.main()
        assert (seen[-1], written[-1]) == (centred, name), (stage, flag)
