"""The quickstart main job runs the whole slice end to end offline (small settings) and reuses its stages."""

import json
import shutil
import subprocess
import sys

import pytest

from openrm.toyworld import ToyWorld

SMALL = ["--n_train", "40", "--n_test", "8", "--induction_steps", "3", "--sft_steps", "4", "--grpo_steps", "2",
         "--n_eval", "4"]


def test_quickstart_runs_the_whole_slice_and_reuses_stages(tmp_path):
    cmd = [sys.executable, "-m", "train.quickstart", "--out", str(tmp_path), *SMALL]
    first = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    assert first.returncode == 0, first.stderr[-3000:]
    log = first.stdout + first.stderr
    assert "[7/7]" in log and "| after GRPO |" in log
    world = ToyWorld(0)  # the tiny judge's recipe: one passage per fact, short single-fact pairs
    n_facts = sum(len(d.facts) for d in world.corpus("wiki"))
    assert json.loads((tmp_path / "indexes" / "wiki" / "manifest.json").read_text())["n_passages"] == n_facts
    train = [json.loads(line) for line in (tmp_path / "data" / "train.jsonl").read_text().splitlines()]
    assert {r["meta"]["style"] for r in train} == {"short"}
    assert len((tmp_path / "data" / "train.jsonl").read_text().splitlines()) == 40
    assert json.loads((tmp_path / "grpo" / "openrm_run.json").read_text())["global_step"] == 2
    # the default (session 29): the copy on every word with a ramp, then long runs mixed with value-letter recall
    # drills; each stage starts from the last, and the warm-up mixes the recall drills in too
    stages = [json.loads((tmp_path / f"tiny-judge-induction-{n}" / "warmup.json").read_text()) for n in (1, 2)]
    assert not (tmp_path / "tiny-judge-induction-3").exists()
    assert [(st["steps"], st["batch"], st["induction_vocab"], st["lengths"], st["ramp"], st.get("recall"),
             st["stop_at_accuracy"], st["every_token"]) for st in stages] == [
        (3, 64, 0, [8, 16], 300, None, 0.95, True), (3, 64, 0, [8, 96], 75, 0.5, 0.98, True)]
    assert stages[1]["base_warmup"] == stages[0]
    warm = json.loads((tmp_path / "tiny-judge-sft" / "warmup.json").read_text())
    assert warm["base"] == str(tmp_path / "tiny-judge-induction-2") and warm["base_warmup"] == stages[1]
    assert warm["recall"] == 0.5 and warm["recipe"] == 8
    assert warm["decay_steps"] == 4  # the default 500 steps of decay, capped at the warm-up's 4 steps
    assert (tmp_path / "judge" / "judge_card.json").is_file()
    table = json.loads((tmp_path / "results.json").read_text())
    assert set(table) == {"SFT warm-up", "after GRPO", "after GRPO, no search"}
    assert table["after GRPO, no search"]["searches_per_judgment"] == 0
    card = json.loads((tmp_path / "judge" / "judge_card.json").read_text())
    assert card["prompt_style"] == "compact" and card["topk"] == 1  # judged as tiny_cpu.yaml trained it
    for row in table.values():
        assert 0 <= row["accuracy"] <= 1 and 0 <= row["consistency"] <= 1 and row["searches_per_judgment"] >= 0
    assert (tmp_path / "training_curves.png").stat().st_size > 1000
    second = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    assert second.returncode == 0, second.stderr[-3000:]
    log = second.stdout + second.stderr
    for stage in ("reusing tiny judge", "reusing wiki index", "reusing induction stage", "reusing SFT warm-up",
                  "reusing GRPO run"):
        assert stage in log, stage


def test_quickstart_rejects_bad_arguments(tmp_path):
    cmd = [sys.executable, "-m", "train.quickstart", "--out", str(tmp_path), "--n_train", "0"]
    result = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert result.returncode != 0 and "n_train" in result.stderr


@pytest.mark.parametrize(("fields", "message"), [
    ({"fast_induction": False}, "needs fast_induction"),  # every word first (the default) is only the fast plan's
    ({"induction_vocab": 12}, "induction_vocab 0 or >= 16"),  # fewer words than a run holds
    ({"induction_vocab": 20, "fast_induction": False}, "induction_vocab 0 or >= 24"),
    ({"induction_vocab": -1, "fast_induction": True}, "induction_vocab"),
])
def test_quickstart_refuses_induction_settings_it_cannot_run(fields, message):
    from train.quickstart import QuickstartArguments

    with pytest.raises(ValueError, match=message):
        QuickstartArguments(**fields)
    QuickstartArguments()  # the default: the fast plan with every word from the start
    QuickstartArguments(fast_induction=False, induction_vocab=128, induction_steps=6000)  # session 27s path


def test_decision_drills_pair_every_value_with_the_letter_of_the_answer_that_states_it():
    import random

    from openrm import protocol
    from train.curriculum import DECISION_DRILL_SYSTEM, decision_drill

    world, rng = ToyWorld(0), random.Random(0)
    for index in range(20):
        record = decision_drill(world, index, rng)
        assert record["prompt"][0] == {"role": "system", "content": DECISION_DRILL_SYSTEM}
        user = record["prompt"][1]["content"]
        lines = {line[1]: line for line in user.splitlines() if line.startswith("[")}  # letter -> "[A] ... A"
        text = record["completion"][0]["content"]
        assert text.startswith(protocol.open_tag(protocol.THINK)) and text.endswith(protocol.close_tag(protocol.THINK))
        words = text.removeprefix(protocol.open_tag(protocol.THINK)).removesuffix(
            protocol.close_tag(protocol.THINK)).split(" ")
        pairs = list(zip(words[::2], words[1::2], strict=True))
        assert len(pairs) == 8
        for value, letter in pairs:
            assert lines[letter].endswith(f" {value} {letter}")  # the prompt shows the value, then its letter
            assert not lines["B" if letter == "A" else "A"].endswith(f" {value} {'B' if letter == 'A' else 'A'}")


def test_gold_records_mix_drills_and_trajectories_in_the_asked_shares():
    from train.curriculum import DECISION_DRILL_SYSTEM, gold_records

    records = gold_records(ToyWorld(0), 400, 0.5, seed=0, copy_share=0.3, decision_share=0.2)
    kinds = [("copy" if r["prompt"][1]["content"].startswith("Repeat: ") else
              "decision" if r["prompt"][0]["content"] == DECISION_DRILL_SYSTEM else "judge") for r in records]
    assert 90 <= kinds.count("copy") <= 150 and 55 <= kinds.count("decision") <= 105
    assert kinds.count("judge") == 400 - kinds.count("copy") - kinds.count("decision")
    drills = [json.dumps(r) for r, kind in zip(records, kinds, strict=True) if kind != "judge"]
    assert len(set(drills)) == len(drills)  # drills are drawn afresh: none repeats


def test_stage_a_gold_records_draw_each_tool_half_the_time():
    from train.curriculum import gold_records

    records = gold_records(ToyWorld(0), 600, 0.5, seed=0, random_tool=True)
    tools = [r["completion"][0]["content"].split("<search>")[1].split("(")[0] for r in records]
    assert set(tools) == {"WIKI", "ARXIV"}
    assert 0.44 <= tools.count("ARXIV") / len(tools) <= 0.56  # a fair coin (until recipe 7, ARXIV 1 time in 3)


def test_induction_drills_repeat_distinct_words_and_train_only_the_copy_that_can_be_predicted(tmp_path):
    import random

    from transformers import AutoTokenizer

    from openrm.tiny import TinyConfig, build
    from train.curriculum import INDUCTION_LENGTHS, gold_records, induction_drill, induction_words

    world = ToyWorld(0)
    # the whole-word tokenizer of the quickstart's tiny judge (built from the same world)
    path = build(tmp_path / "tiny", TinyConfig.whole_word(0, 32, 1))
    tok = AutoTokenizer.from_pretrained(path)
    words = induction_words(tok, world, 128, seed=0)
    assert len(set(words)) == 128 and words == induction_words(tok, world, 128, seed=0)
    assert all(len(tok.encode(tok.convert_ids_to_tokens(i), add_special_tokens=False)) == 1 for i in words[:20])
    lengths = set()
    rng = random.Random(0)
    for _ in range(200):
        drill = induction_drill(words, rng)
        ids, mask = drill["input_ids"], drill["completion_mask"]
        n = len(ids) // 2
        lengths.add(n)
        assert ids[:n] == ids[n:] and len(set(ids[:n])) == n and set(ids) <= set(words)
        # trained: the repeat's 2nd..last words (each follows, in the first showing, the word before it)
        assert len(mask) == len(ids) and mask == [0] * (n + 1) + [1] * (n - 1)
    assert min(lengths) == INDUCTION_LENGTHS[0] and max(lengths) == INDUCTION_LENGTHS[1]  # no fixed distance
    records = gold_records(world, 400, 0.5, seed=0, copy_share=0.2, decision_share=0.2, induction_share=0.25,
                           induction_ids=words)
    assert 70 <= sum("input_ids" in r for r in records) <= 130


def test_summary_words_follow_the_numbers():
    from train.quickstart import results_table, summary

    def row(accuracy, failures, tool, named):
        return {"accuracy": accuracy, "consistency": accuracy, "ties": 0.0, "parse_failures": failures,
                "correct_tool_share": tool, "queries_with_subject": named, "searches_per_judgment": 2.0}

    table = {"SFT warm-up": row(0.5, 0.0, 1.0, 1.0), "after GRPO": row(0.9, 0.01, 0.95, 0.97),
             "after GRPO, no search": row(0.3, 0.0, None, None)}
    text = summary(table)
    assert "goal <= 2%: met" in text and "95% of its searches" in text and "97% name" in text
    assert "it uses the evidence" in text and "+0.40" in text
    table["after GRPO"] = row(0.3, 0.05, 0.5, 0.0)
    text = summary(table)
    assert "goal <= 2%: NOT met" in text and "goal >= 90%: NOT met" in text and "does not use the evidence" in text
    assert results_table(table)[-1].startswith("| after GRPO, no search | 0.300") and " - |" in results_table(table)[-1]


def test_quickstart_rejects_a_negative_warmup_decay():
    import pytest

    from train.quickstart import QuickstartArguments

    with pytest.raises(ValueError, match="sft_decay_steps"):
        QuickstartArguments(sft_decay_steps=-1)
    assert QuickstartArguments(sft_steps=4, sft_decay_steps=500).sft_decay_steps == 500  # capped only when used


def test_learning_proof_judges_each_model_once_until_its_weights_change(tmp_path, monkeypatch):
    import importlib

    proof = importlib.import_module("bench.learning_proof")
    calls = []
    monkeypatch.setattr(proof, "evaluate", lambda model, indexes, test, **kw: calls.append(kw) or {"accuracy": 0.5})
    model = tmp_path / "judge"
    model.mkdir()
    (model / "model.safetensors").write_bytes(b"weights-1")
    test = [{"id": "toy-0-test-000001"}, {"id": "toy-0-test-000002"}]
    assert proof.measured(model, {"wiki": "x"}, test) == {"accuracy": 0.5}
    assert proof.measured(model, {"wiki": "x"}, test) == {"accuracy": 0.5}
    assert len(calls) == 1  # the second answer came from judged.json
    proof.measured(model, {"wiki": "x"}, test, temperature=1.0, seed=0)  # other settings: judged anew
    proof.measured(model, None, test)  # without search: judged anew
    proof.measured(model, {"wiki": "x"}, test[:1])  # other pairs: judged anew
    assert len(calls) == 4
    (model / "model.safetensors").write_bytes(b"weights-2")  # a redone stage in the same folder
    proof.measured(model, {"wiki": "x"}, test)
    assert len(calls) == 5 and not list(model.glob("judged.*.tmp"))


def test_learning_proof_tokenizes_every_seeds_pairs_with_whole_names():
    """Each seed's tiny judge gets its tokenizer from the world the proof's pairs come from: names stay one token
    (a tokenizer built on world `seed` split world 0's names into letters for seeds 1 and 2)."""
    import importlib

    from openrm.tiny import build_tokenizer
    from openrm.toyworld import ToyWorld

    proof = importlib.import_module("bench.learning_proof")
    example = ToyWorld(proof.WORLD_SEED).examples(1, "test", style="short")[0]
    name = example["meta"]["subject"].split()[0]
    for seed in (0, 2):
        cfg = proof.start_config(seed, 64, 4, 32)
        assert cfg.seed == seed
        tokenizer = build_tokenizer(cfg)
        assert name in tokenizer.convert_ids_to_tokens(tokenizer.encode(example["question"], add_special_tokens=False))


def test_tool_choice_log_splits_rewards_by_gold_and_first_called_tool():
    from bench.tool_choice_log import summarise

    def line(step, gold, completion, total, em):
        return json.dumps({"step": step, "gold_tool": gold, "completion": completion, "total": total, "em": em})

    lines = [line(0, "WIKI", '<think>x</think><search>WIKI("a b")</search>', 1.5, 1.0),
             line(1, "WIKI", '<search>ARXIV("a b")</search><search>WIKI("a b")</search>', 0.0, 0.0),
             line(1, "WIKI", '<search>WIKI("a")</search>', 0.5, 0.0), "",
             line(2, "ARXIV", "<answer>A</answer>", 1.0, 1.0)]
    rows = summarise(lines, window=2)
    assert rows == [{"step": 0, "WIKI->ARXIV": (1, 0.0, 0.0), "WIKI->WIKI": (2, 1.0, 0.5)},
                    {"step": 2, "ARXIV->none": (1, 1.0, 1.0)}]
    with pytest.raises(ValueError, match="line 2: not a trajectory-log record"):
        summarise([lines[0], '{"step": 3}'], window=1)


def test_curriculum_stages_say_float32_and_fast_induction_ramps(tmp_path, monkeypatch):
    """TRL's SFTConfig defaults to bf16 (on a CPU: bf16 autocast of the model's forward), so every stage asks for
    float32. The measured recipe's induction stages run at a constant rate ('constant' ignores warmup_steps); the
    opt-in fast induction ramps (300 steps, then 75), which formed the copy in a few hundred steps where the constant
    rate sat on a plateau for thousands (bench/RESULTS.md, session 28); with every word from the start it has no
    separate every-word stage."""
    from openrm.tiny import TinyConfig, build
    from train import curriculum, sft_warmup

    seen = []

    def recorded(script, training, model):  # a stage "trains" by copying its base, so the next stage can load it
        seen.append((script, training, model))
        shutil.copytree(model.model_name_or_path, training.output_dir, dirs_exist_ok=True)

    monkeypatch.setattr(sft_warmup, "main", recorded)
    base = build(tmp_path / "tiny", TinyConfig.whole_word(0, 32, 1))
    world = ToyWorld(0)
    curriculum.induction_stages(world, base, tmp_path / "default", 400, 128, seed=0)
    curriculum.induction_stages(world, base, tmp_path / "fast", 400, 0, seed=0, fast=True)
    curriculum.induction_stages(world, base, tmp_path / "subset", 400, 128, seed=0, fast=True)
    curriculum.warm_up(world, base, tmp_path / "sft", 40, 3e-3, 0.5, seed=0, decay_steps=10)
    assert len(seen) == 3 + 2 + 3 + 1
    for _, training, model in seen:
        assert training.bf16 is False and training.mixed_precision == "no" and model.dtype == "float32"
    schedulers = [(t.lr_scheduler_type.value, t.warmup_steps) for _, t, _ in seen]
    assert schedulers[:3] == [("constant", 20)] * 3  # 'constant' ignores its warmup_steps
    assert schedulers[3:8] == [("constant_with_warmup", 300), ("constant_with_warmup", 75)] + [
        ("constant_with_warmup", 300)] + [("constant_with_warmup", 75)] * 2
    names = ("default", "fast", "subset")
    lengths = {name: [json.loads((tmp_path / f"{name}-{n}" / "warmup.json").read_text())["lengths"]
                      for n in range(1, 4) if (tmp_path / f"{name}-{n}").exists()] for name in names}
    assert lengths == {"default": [[8, 24], [8, 24], [8, 96]], "fast": [[8, 16], [8, 96]],
                       "subset": [[8, 16], [8, 24], [8, 96]]}
    # only the fast path's last stage mixes in value-letter recall drills, and stops at a higher copy accuracy
    recall = {name: [json.loads((tmp_path / f"{name}-{n}" / "warmup.json").read_text()).get("recall")
                     for n in range(1, 4) if (tmp_path / f"{name}-{n}").exists()] for name in names}
    assert recall == {"default": [None] * 3, "fast": [None, 0.5], "subset": [None, None, 0.5]}
    assert schedulers[8] == ("warmup_stable_decay", 2)


def test_letter_recall_drills_train_the_letter_after_a_spaced_value_and_every_value_is_drilled(tmp_path):
    """The deciding copy as the compact prompt lays it out ("in 2016 A" ... "<think>2016 A"): a space token before
    the value, other words between pairs, queries in random order. The drills train only the letters, and each
    letter is the one that followed its value. Every word the judge may copy is drilled, years included (until
    session 29 they were not, and the judge copied the letter after a year no better than a coin)."""
    import random

    from transformers import AutoTokenizer

    from openrm.tiny import TinyConfig, build
    from train.curriculum import _Drills, induction_words, letter_ids, letter_recall_drill

    world = ToyWorld(0)
    tok = AutoTokenizer.from_pretrained(build(tmp_path / "tiny", TinyConfig.whole_word(0, 32, 1)))
    words, letters = induction_words(tok, world, 0, seed=0, every_token=True), letter_ids(tok)
    measured = induction_words(tok, world, 0, seed=0)  # the measured (constant-rate) recipe's: toy words only
    assert set(letters) <= set(words) and len(set(words)) == len(words) and set(measured) < set(words)
    for value in ("2016", "1183", "916", "mathematician"):  # years are copied too
        (token,) = tok.encode(value, add_special_tokens=False)
        assert token in words and (token in measured) == (value == "mathematician")
    assert not {i for i in words if tok.convert_ids_to_tokens(i).startswith("<")}  # no tags, no special tokens
    space = tok.convert_tokens_to_ids("\u0120")
    assert tok.encode("in 2016 A", add_special_tokens=False)[1] == space  # the layout the drill copies
    values = [w for w in words if w not in letters]
    rng = random.Random(0)
    spaced = queries = 0
    for _ in range(100):
        drill = letter_recall_drill(values, letters, space, rng)
        ids, mask = drill["input_ids"], drill["completion_mask"]
        assert len(ids) == len(mask) and 4 <= sum(mask) <= 8
        first_seen = {}
        for i, (token, trained) in enumerate(zip(ids, mask, strict=True)):
            if trained:
                value = ids[i - 1]
                assert token in letters and value in first_seen and first_seen[value] == token
            elif token in letters and ids[i - 1] not in first_seen:
                first_seen[ids[i - 1]] = token
        spaced += sum(ids[i - 2] == space for i, m in enumerate(mask) if m)
        queries += sum(mask)
    assert 0.35 < spaced / queries < 0.65  # a query value is preceded by a space about half the time
    draw = _Drills(tok, words, (8, 96), recall=0.5)
    kinds = [("letter" if set(d["input_ids"]) & set(letters) and space in d["input_ids"] else "run")
             for d in (draw(rng) for _ in range(400))]
    assert 150 <= kinds.count("letter") <= 250


@pytest.mark.parametrize("fast", [True, False])
def test_learning_proof_runs_either_induction_into_its_own_folders(tmp_path, monkeypatch, fast):
    """The proof's stage loop hands the quickstart's induction (or session 27's, --constant-induction) to the
    curriculum and names the folders after it (session 28's fast path crashed here: Path + str)."""
    import argparse
    import importlib

    proof = importlib.import_module("bench.learning_proof")
    calls = {}
    monkeypatch.setattr(proof, "tiny_model", lambda out, cfg: out)
    monkeypatch.setattr(proof, "induction_stages", lambda world, base, out, steps, vocab, seed, fast: calls.update(
        induct=(out.name, steps, vocab, fast)) or out)
    monkeypatch.setattr(proof, "warm_up", lambda world, base, out, *a, **kw: calls.update(warm=(out.name, kw)) or out)
    monkeypatch.setattr(proof, "judged", lambda *a, **kw: {"accuracy": 1.0})
    monkeypatch.setattr(proof, "measured", lambda *a, **kw: {"accuracy": 0.0})
    args = argparse.Namespace(stage="b", seeds=[1], shared_start=False, hidden=64, layers=4, head_dim=32,
                              induct_steps=1500 if fast else 6000, induct_vocab=0 if fast else 128,
                              fast_induction=fast, out=tmp_path, sft_steps=10, copy=0.15, decide=0.2,
                              induct_share=0.2, sft_decay=5, domains=["wiki", "science", "medical"], sft_lr=3e-3,
                              recombined=0.5, grpo_steps=0, variants=[])
    runs = proof.run_stage(args, ToyWorld(0), tmp_path, {}, [])
    assert runs["sft/s1"] == {"accuracy": 1.0, "no_search_accuracy": 0.0}
    name, steps, vocab, used_fast = calls["induct"]
    assert used_fast is fast and name.endswith("-fast") is fast
    assert (steps, vocab) == ((1500, 0) if fast else (6000, 128))
    folder, kw = calls["warm"]
    assert folder.endswith("-wsd5-fast") is fast and kw["recall"] == (0.5 if fast else 0.0)


def test_recall_drills_refuse_a_tokenizer_that_cannot_spell_the_copy():
    """A tokenizer that splits " A" (or has no single space token) cannot hold the deciding copy as one token after
    another: the drills say so rather than train on a layout the judge never sees."""
    from train.curriculum import _Drills, letter_ids

    class Split:  # " A" in two tokens, as a BPE that never saw the letter alone would spell it
        unk_token_id = 0

        def encode(self, text, add_special_tokens=False):
            return [5, 6] if text == " A" else [7]

        def convert_tokens_to_ids(self, token):
            return 9

    with pytest.raises(ValueError, match="more than one token"):
        letter_ids(Split())
    assert _Drills(Split(), [1, 2, 3], (8, 16)).recall == 0.0  # without recall drills the letters are not needed

    class NoSpace(Split):
        def encode(self, text, add_special_tokens=False):
            return [5] if text == " A" else [6]

        def convert_tokens_to_ids(self, token):
            return self.unk_token_id

    assert letter_ids(NoSpace()) == [5, 6]
    with pytest.raises(ValueError, match="no single space token"):
        _Drills(NoSpace(), [1, 2, 3], (8, 16), recall=0.5)
