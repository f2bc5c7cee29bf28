"""The tiny judge's curriculum on CPU, before GRPO: induction stages (the content-matching copy the deciding step is,
and on the fast path value-letter recall drills), then an SFT warm-up on compact gold trajectories mixed with copy,
decision and induction drills. train/quickstart.py
and bench/learning_proof.py run it; each stage is cached in its folder and redone only when its inputs change
(bench/RESULTS.md, "Learning proof", says why each part is there)."""

from __future__ import annotations

import json
import logging
import random
from collections.abc import Sequence
from pathlib import Path

from openrm import protocol
from openrm.tiny import LETTERS
from openrm.toyworld import DOMAINS, ToyWorld

logger = logging.getLogger("openrm.quickstart")
STAGES = 7  # the quickstart's numbered steps, which the stages here report as
# Bumped whenever the warm-up's data or settings change, so an older warm-up in the same --out is redone.
# 6: steps as length-sorted micro-batches over the records in drawn order (session 26); 7: a fair tool coin;
# Session 28 passes --bf16 false outright (TRL's SFTConfig defaults to bf16; the plain head's loss never ran under its
# autocast, so the numbers are unchanged and the recipe stays 7) and adds the `fast` induction below.
# 8 (session 29): on the fast path, every whole-word token in the induction vocabulary (the years were missing) and
# value-letter recall drills in the last induction stage and the warm-up; the measured (constant) path is unchanged.
WARMUP_RECIPE = 8
WARMUP_BATCH = 32
INDUCTION_BATCH = 64
INDUCTION_LENGTHS = (8, 24)  # the first two stages'; once the copy works on every word it extends to long runs fast
# The `fast` induction's first stage (session 28): with a 300-step rate ramp and runs up to 16 words the copy formed in
# 300-450 steps on seeds 0-3; with runs up to 24 it sometimes settled first on a partial answer (any word of the run
# not yet repeated: copy accuracy ~0.2) and stayed there for thousands of steps (bench/RESULTS.md).
INDUCTION_LENGTHS_FIRST = (8, 16)
FIRST_RAMP = 300
INDUCTION_LENGTHS_LONG = (8, 96)  # the last stage's and the warm-up's: the deciding copy reaches ~90 tokens back
# Each SFT step runs as this many length-sorted micro-batches (sft_warmup --sort_within_steps): the same records and
# loss per step, about a fifth less padding compute on records whose lengths vary two- to twelve-fold.
MICRO_BATCHES = 2
# The fast path's last induction stage and its warm-up: this share of the drills are value-letter recall drills (the
# deciding copy laid out as text is), and that stage stops at this copy accuracy (session 29).
RECALL_SHARE = 0.5
RECALL_STOP = 0.98


def stage(n: int, message: str, *args) -> None:
    logger.info(f"[{n}/{STAGES}] {message}", *args)


DECISION_DRILL_SYSTEM = "Write each value followed by the letter of the answer that states it."


def decision_drill(world: ToyWorld, index: int, rng: random.Random, n: int = 8) -> dict:
    """A record that drills the judge's deciding step alone: the compact judge prompt of a short pair (under its own
    system line, so it never passes for a judgment) and a think block of `n` values drawn from the two answers, each
    followed by its answer's letter: n decisions per record instead of one, each the copy the compact prompt sets up
    (a value, then its letter)."""
    ex = world.example(index, "train", style="recombined")
    fact, label = ex["meta"]["corrupted"][0], ex["label"]
    claims = [(fact["true"], label), (fact["wrong"], "B" if label == "A" else "A")]
    text = " ".join(f"{value} {letter}" for value, letter in (rng.choice(claims) for _ in range(n)))
    user = protocol.judge_messages(ex, style="compact")[1]
    return {"prompt": [{"role": "system", "content": DECISION_DRILL_SYSTEM}, user],
            "completion": [{"role": "assistant", "content": f"{protocol.open_tag(protocol.THINK)}{text}"
                                                            f"{protocol.close_tag(protocol.THINK)}"}]}


def letter_ids(tokenizer) -> list[int]:
    """The answer letters (" A", " B") as the tiny tokenizer spells them: one token each, or an error."""
    ids = [tokenizer.encode(f" {letter}", add_special_tokens=False) for letter in LETTERS]
    if any(len(t) != 1 for t in ids):
        raise ValueError("the tokenizer spells ' A' or ' B' in more than one token; the deciding copy needs them whole")
    return [t[0] for t in ids]


def induction_words(tokenizer, world: ToyWorld, vocab: int, seed: int, every_token: bool = False) -> list[int]:
    """The token ids of `vocab` toy words (seeded draw), each a single token of the tiny judge's tokenizer; `vocab`
    0: every toy word and the answer letters (" A", " B"), which the deciding step copies. `every_token` (the fast
    path, session 29): with `vocab` 0, also every other whole-word token of the tokenizer, the years among them. The
    world's vocabulary text has no years, and the measured recipe never drilled them; a judge from the fast path
    copied the letter after a year no better than a coin (bench/RESULTS.md)."""
    words = sorted(set(world.vocabulary_text().split()))
    ids = sorted({i for i in tokenizer.convert_tokens_to_ids(words) if i is not None and i != tokenizer.unk_token_id})
    if not vocab:
        if every_token:
            special = set(tokenizer.all_special_ids)
            ids = sorted(set(ids) | {i for token, i in tokenizer.get_added_vocab().items()
                                     if i not in special and token and not token.startswith("<")
                                     and token.strip() == token})
        return ids + [t for t in letter_ids(tokenizer) if t not in ids]
    if len(ids) < vocab:
        raise ValueError(f"the tokenizer has {len(ids)} toy words as tokens, fewer than induction_vocab={vocab}")
    return random.Random(f"quickstart:induction-words:{seed}").sample(ids, vocab)


def induction_drill(words: Sequence[int], rng: random.Random, lengths: tuple[int, int] = INDUCTION_LENGTHS) -> dict:
    """A tokenized drill (no chat template): distinct words drawn from `words`, then the same words again, trained
    on the repeat from its second word on. Each word of the repeat follows the same word as in the first showing, so
    the drill is the content-matching copy ("find where this token was, say what came next") that the deciding step
    needs (`<think>2022 A` after `… 2022 A` in the prompt). The length varies, so a copy from a fixed distance back
    cannot solve it. A tiny judge does not discover that circuit from judge records alone (bench/RESULTS.md)."""
    seq = rng.sample(list(words), rng.randint(*lengths))
    return {"input_ids": seq + seq, "completion_mask": [0] * (len(seq) + 1) + [1] * (len(seq) - 1)}


def letter_recall_drill(values: Sequence[int], letters: Sequence[int], space: int, rng: random.Random) -> dict:
    """A tokenized drill (no chat template) of the deciding copy as the compact prompt lays it out: 2-8 distinct
    values each followed by a letter (a space token before most values and a few other words between the pairs, as in
    "[A] It was published in 2016 A"), then 4-8 of those values again in random order, each trained on the letter that
    followed it. Plain `induction_drill`s have no space tokens and repeat a whole run; a judge that learned only
    those copied a letter after a spaced value no better than a coin (session 29: 0.52 on decision drills) and,
    with these in the last induction stage, at 0.92 before any warm-up (bench/RESULTS.md)."""
    n = rng.randint(2, 8)
    pairs = [(value, rng.choice(letters)) for value in rng.sample(list(values), n)]
    ids: list[int] = []
    mask: list[int] = []
    for value, letter in pairs:
        for _ in range(rng.randint(0, 3)):
            ids += [rng.choice(values), space]
            mask += [0, 0]
        if rng.random() < 0.8:
            ids.append(space)
            mask.append(0)
        ids += [value, letter]
        mask += [0, 0]
    for _ in range(rng.randint(4, 8)):
        value, letter = rng.choice(pairs)
        if rng.random() < 0.5:
            ids.append(space)
            mask.append(0)
        ids += [value, letter]
        mask += [0, 1]
    return {"input_ids": ids, "completion_mask": mask}


class _Drills:
    """Draws the induction stages' and the warm-up's tokenized drills: plain runs of `lengths`, and with `recall` a
    share that are `letter_recall_drill`s."""

    def __init__(self, tokenizer, words: Sequence[int], lengths: tuple[int, int], recall: float = 0.0):
        self.words, self.lengths, self.recall = list(words), lengths, recall
        if recall:
            self.letters = letter_ids(tokenizer)
            self.values = [w for w in self.words if w not in self.letters]
            self.space = tokenizer.convert_tokens_to_ids("\u0120")  # the byte-level BPE's space token
            if self.space is None or self.space == tokenizer.unk_token_id:
                raise ValueError("the tokenizer has no single space token for letter-recall drills")

    def __call__(self, rng: random.Random) -> dict:
        if self.recall and rng.random() < self.recall:
            return letter_recall_drill(self.values, self.letters, self.space, rng)
        return induction_drill(self.words, rng, self.lengths)


def gold_records(world: ToyWorld, n: int, recombined_share: float, seed: int, random_tool: bool = False,
                 copy_share: float = 0.0, domains: Sequence[str] = DOMAINS, decision_share: float = 0.0,
                 induction_share: float = 0.0, induction_ids: Sequence[int] = (),
                 drills: _Drills | None = None) -> list[dict]:
    """`n` SFT records (prompt, completion) of compact gold trajectories over short train pairs, a `recombined_share`
    of them about freshly drawn facts; `random_tool` puts a seeded coin's tool in every record (an SFT start whose
    tool choice is uninformed, for bench/learning_proof.py's stage A). A `copy_share` of the records are instead
    "repeat these words" drills over the world's names and values, from a random word on (every target a copy:
    dense signal for the induction circuit a tiny model needs before it can copy a name into a query or the letter
    that follows a value), a `decision_share` are `decision_drill`s and an `induction_share` are `induction_drill`s
    over `induction_ids` (or drawn by `drills`). Every record is drawn afresh, so a warm-up of `n` records sees none
    twice."""
    rng = random.Random(f"quickstart:gold:{seed}")
    words = sorted(set(world.vocabulary_text().split()))
    tools = sorted(set(protocol.GOLD_TOOL.values()))  # a fair coin (until recipe 7 it listed WIKI twice: 2 in 3)
    records = []
    for i in range(n):
        draw = rng.random()
        if draw < copy_share:
            # The repeat starts at a random word, so the copy must find its place by content (an induction copy),
            # not by a fixed distance back to the prompt.
            drill = [rng.choice(words) for _ in range(16)]
            records.append({"prompt": [{"role": "system", "content": protocol.system_prompt(style="compact")},
                                       {"role": "user", "content": f"Repeat: {' '.join(drill)}"}],
                            "completion": [{"role": "assistant", "content": " ".join(drill[rng.randrange(8):])}]})
            continue
        if draw < copy_share + decision_share:
            records.append(decision_drill(world, rng.randrange(10**9), rng))
            continue
        if draw < copy_share + decision_share + induction_share:
            records.append(drills(rng) if drills else induction_drill(induction_ids, rng, INDUCTION_LENGTHS_LONG))
            continue
        ex = world.example(i, "train", domains, "recombined" if rng.random() < recombined_share else "short")
        tool = rng.choice(tools) if random_tool else None
        records.append({"prompt": protocol.judge_messages(ex, style="compact"), "completion": [
            {"role": "assistant", "content": world.compact_trajectory(ex, tool=tool)}]})
    return records


def _sft(records, base: Path, out: Path, want: dict, steps: int, batch: int, learning_rate: float, scheduler: str,
         seed: int, what: str, stop_at_accuracy: float = 0.0, decay_steps: int = 0, warmup_steps: int = 0) -> Path:
    """Run train/sft_warmup.py (plain LM head) on `records` from `base` into `out`, unless `out` already holds the
    run `want` describes (its warmup.json; the base's own warmup.json is part of it, so a redone base redoes this).
    `decay_steps` > 0: `scheduler` is ignored; the rate holds at its peak, then falls over the last `decay_steps`.
    A scheduler that ramps does so over `warmup_steps` (0: a twentieth of `steps`); 'constant' does not ramp."""
    from train import sft_warmup

    done = out / "warmup.json"
    base_done = base / "warmup.json"
    want = {"base": str(base), "steps": steps, "batch": batch, "learning_rate": learning_rate, "seed": seed,
            "recipe": WARMUP_RECIPE, **want, **({"stop_at_accuracy": stop_at_accuracy} if stop_at_accuracy else {}),
            **({"base_warmup": json.loads(base_done.read_text())} if base_done.exists() else {})}
    if done.exists() and json.loads(done.read_text()) == want:
        stage(4, "reusing %s at %s", what, out)
        return out
    out.mkdir(parents=True, exist_ok=True)
    data = out / "sft_records.jsonl"
    with data.open("w", encoding="utf-8") as f:
        for record in records:
            f.write(json.dumps(record) + "\n")
    stage(4, "%s: up to %d steps of %d records", what, steps, batch)
    sft_warmup.main(*sft_warmup.parse([
        "--dataset", str(data), "--lm_head", "plain", "--model_name_or_path", str(base), "--output_dir", str(out),
        "--max_steps", str(steps), "--per_device_train_batch_size", str(batch // MICRO_BATCHES),
        "--gradient_accumulation_steps", str(MICRO_BATCHES), "--sort_within_steps", "true",
        "--learning_rate", str(learning_rate),
        *(["--lr_scheduler_type", "warmup_stable_decay", "--lr_scheduler_kwargs",
           json.dumps({"num_decay_steps": decay_steps})] if decay_steps else ["--lr_scheduler_type", scheduler]),
        "--warmup_steps", str(warmup_steps or max(steps // 20, 1)), "--max_length", "512",
        "--save_strategy", "no", "--report_to", "none", "--use_cpu", "true", "--dtype", "float32", "--bf16", "false",
        "--gradient_checkpointing", "false", "--seed", str(seed), "--disable_tqdm", "true",
        "--logging_steps", str(min(50, max(steps // 10, 1)) if stop_at_accuracy else max(steps // 10, 1)),
        "--stop_at_accuracy", str(stop_at_accuracy)]))
    done.write_text(json.dumps(want) + "\n")
    return out


def induction_stage(world: ToyWorld, base: Path, out: Path, steps: int, vocab: int, seed: int,
                    lengths: tuple[int, int] = INDUCTION_LENGTHS, learning_rate: float = 3e-3,
                    stop_at_accuracy: float = 0.95, ramp: int = 0, recall: float = 0.0,
                    every_token: bool = False) -> Path:
    """Up to `steps` x 64 fresh `induction_drill`s over `vocab` toy words (0: all, and the letters) of `lengths`
    (a `recall` share of them `letter_recall_drill`s instead; `every_token`: see `induction_words`), a constant
    learning rate from `base` (after a linear ramp over `ramp` steps, when > 0); it stops once the logged copy
    accuracy reaches `stop_at_accuracy` (0: runs every step). The circuit forms in a sudden drop after a plateau
    whose length varies with the seed (bench/RESULTS.md): hence a stop on accuracy rather than a fixed count."""
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(base)
    draw = _Drills(tokenizer, induction_words(tokenizer, world, vocab, seed, every_token), lengths, recall)
    rng = random.Random(f"quickstart:induction:{seed}:{vocab}:{lengths}" + (f":{recall}" if recall else ""))
    # at most 1,000 batches of distinct drills, cycled (random runs: a repeat teaches nothing to memorise), so the
    # stage does not write and tokenise records for steps its accuracy stop will skip
    records = (draw(rng) for _ in range(min(steps, 1000) * INDUCTION_BATCH))
    # 'constant' ignores warmup_steps: the measured recipe's stages never ramped (until session 28 this passed a
    # ramp that had no effect, and the want below recorded one for the later stages)
    return _sft(records, base, out, {"induction_vocab": vocab, "lengths": list(lengths),
                                     **({"ramp": ramp} if ramp else {}), **({"recall": recall} if recall else {}),
                                     **({"every_token": True} if every_token else {})},
                steps, INDUCTION_BATCH, learning_rate, "constant_with_warmup" if ramp else "constant", seed,
                f"induction stage of the tiny judge ({vocab or 'all'} words, runs of {lengths[0]}-{lengths[1]}"
                + (f", {recall:.0%} value-letter recall drills)" if recall else ")"),
                stop_at_accuracy, warmup_steps=ramp)


def induction_stages(world: ToyWorld, base: Path, out: Path, steps: int, vocab: int, seed: int,
                     fast: bool = False) -> Path:
    """The copy on `vocab` words first (it forms sooner on few), then on every word and letter, then on runs up to
    96 words; folders `<out>-1`, `-2`, `-3`. Each stage runs until its copy accuracy stop, up to `steps` steps, at a
    constant rate: the every-word stage can have a plateau of its own (seed 1 of bench/learning_proof.py needed 3,150
    steps; until session 26 a 1,500-step cap cut it off at 0.91).
    `fast` (the quickstart's default since session 29): every whole-word token (`induction_words(every_token=True)`),
    the first stage on runs of 8-16 words with its rate ramped over 300 steps, the later ones over 75; with `vocab` 0
    there is no separate every-word stage, and the last stage mixes in `letter_recall_drill`s and stops at a copy
    accuracy of 0.98. Every word from the start formed the copy in 450-750 steps and the last stage took 100-1,500
    more, where the constant-rate stages took thousands. Without the recall drills (session 28) the judge warmed up
    from that start did not decide (accuracy 0.06, ties 0.91); with them, 0.96-1.00 after GRPO on seeds 0-3
    (bench/RESULTS.md, session 29)."""
    if fast:
        plan = [(vocab, INDUCTION_LENGTHS_FIRST, FIRST_RAMP, 0.0, 0.95),
                *([(0, INDUCTION_LENGTHS, 75, 0.0, 0.95)] if vocab else []),
                (0, INDUCTION_LENGTHS_LONG, 75, RECALL_SHARE, RECALL_STOP)]
    else:
        plan = [(vocab, INDUCTION_LENGTHS, 0, 0.0, 0.95), (0, INDUCTION_LENGTHS, 0, 0.0, 0.95),
                (0, INDUCTION_LENGTHS_LONG, 0, 0.0, 0.95)]
    for n, (words, lengths, ramp, recall, stop) in enumerate(plan, start=1):
        base = induction_stage(world, base, out.with_name(f"{out.name}-{n}"), steps, words, seed, lengths,
                               stop_at_accuracy=stop, ramp=ramp, recall=recall, every_token=fast)
    return base


def warm_up(world: ToyWorld, base: Path, out: Path, steps: int, learning_rate: float, recombined_share: float,
            seed: int, random_tool: bool = False, copy_share: float = 0.0, domains: Sequence[str] = DOMAINS,
            decision_share: float = 0.0, induction_share: float = 0.0, decay_steps: int = 0,
            recall: float = 0.0) -> Path:
    """SFT warm-up (train/sft_warmup.py, batch 32) of `base` on `steps` x 32 fresh `gold_records`: cosine, or with
    `decay_steps` the peak rate held and then decayed over the last `decay_steps`. A `recall` share of the induction
    drills are `letter_recall_drill`s (and then they draw from every whole-word token, as the fast path does)."""
    drills = None
    if induction_share:
        from transformers import AutoTokenizer

        tokenizer = AutoTokenizer.from_pretrained(base)
        drills = _Drills(tokenizer, induction_words(tokenizer, world, 0, seed, every_token=bool(recall)),
                         INDUCTION_LENGTHS_LONG, recall)
    records = gold_records(world, steps * WARMUP_BATCH, recombined_share, seed, random_tool, copy_share, domains,
                           decision_share, induction_share, drills=drills)
    want = {"recombined_share": recombined_share, "random_tool": random_tool,
            **({"copy_share": copy_share} if copy_share else {}),
            **({"decision_share": decision_share} if decision_share else {}),
            **({"induction_share": induction_share} if induction_share else {}),
            **({"recall": recall} if recall and induction_share else {}),
            **({"decay_steps": decay_steps} if decay_steps else {}),
            **({"domains": list(domains)} if tuple(domains) != DOMAINS else {})}
    return _sft(records, base, out, want, steps, WARMUP_BATCH, learning_rate, "cosine", seed,
                "SFT warm-up of the tiny judge on gold trajectories and drills", decay_steps=decay_steps)
