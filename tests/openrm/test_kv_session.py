"""The KV-cache session against re-sending whole contexts, on the tiny model: the same ids and log-probs turn by
turn (environment tokens appended between turns, rows stopping at different steps and leaving the batch), and a
whole greedy rollout identical to the re-prefilling one.

Why log-probs are compared with a tolerance: the re-sending path runs a row's context through one left-padded
forward pass, the session through several (prompt, then each turn's new tokens against the cache) and with other
gaps. The same sums are taken in other orders and shapes, so float32 results differ in the last bits (measured:
≤ 1e-6 here); the ids must still be exactly equal.
"""

from __future__ import annotations

import pytest
import torch
from transformers import AutoModelForCausalLM

from openrm import kv_session, protocol
from openrm import rollout as rollout_module
from openrm.generation import GROUPED_SDPA, HFGenerator, ResendSession, SamplingParams, grouped_decoding
from openrm.kv_session import KVSession, open_session
from openrm.rollout import RolloutConfig, prompt_token_ids, rollout
from toy.world import ToyWorld

ATOL = 1e-4  # measured differences stay below 2e-5; a padding or position leak moves log-probs by > 1e-2


@pytest.fixture(scope="module")
def model(tiny_dir):
    """The tiny model with larger random weights: the stock initialisation is so flat that greedy decoding writes
    newlines only, which would make 'the same ids' an empty claim."""
    return _sharpened(tiny_dir, seed=0)


def _sharpened(tiny_dir, seed: int):
    """The tiny model with every matrix drawn again at 0.3 scale (`seed`)."""
    model = AutoModelForCausalLM.from_pretrained(tiny_dir)
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in model.parameters():
            if p.dim() == 2:
                p.copy_(torch.randn(p.shape, generator=generator) * 0.3)
    return model


@pytest.fixture(scope="module")
def prompts(tokenizer):
    rows = [prompt_token_ids(tokenizer, protocol.judge_messages(e)) for e in ToyWorld(0).examples(4, "test")]
    rows[1] = rows[1][:200]  # lengths far apart, so left padding and gaps matter
    assert len({len(r) for r in rows}) == len(rows)
    return rows


def _play(session, turns, params, extra):
    """Turns over a session: each turn continues the rows named, then appends `extra[row]` environment tokens."""
    out = []
    for rows in turns:
        gens = session.generate(rows, params)
        out.append([(g.token_ids, g.logprobs, g.finish_reason, g.stop_string) for g in gens])
        for i in rows:
            session.extend(i, extra[i])
    return out


def _assert_same(got, expected):
    assert len(got) == len(expected)
    for turn_got, turn_expected in zip(got, expected, strict=True):
        for (ids, lps, finish, stop), (ids2, lps2, finish2, stop2) in zip(turn_got, turn_expected, strict=True):
            assert ids == ids2 and finish == finish2 and stop == stop2
            torch.testing.assert_close(torch.tensor(lps), torch.tensor(lps2), atol=ATOL, rtol=0)


@pytest.mark.parametrize("batch_size", [None, 2])
def test_turns_with_environment_tokens_match_resending(model, tokenizer, prompts, batch_size):
    extra = {0: tokenizer.encode("\n<information>\nVelmora is a river.\n</information>\n"), 1: [],
             2: tokenizer.encode(" x"), 3: tokenizer.encode("\n<information>\nnothing\n</information>\n") * 3}
    turns = [[0, 1, 2, 3], [0, 1, 2, 3], [3, 0], [2], [0, 2, 3]]  # rows skip turns and come back, in any order
    params = SamplingParams(max_new_tokens=9, temperature=0)
    kv = open_session(HFGenerator(model, tokenizer, batch_size=batch_size), prompts)
    assert isinstance(kv, KVSession)
    got = _play(kv, turns, params, extra)
    expected = _play(open_session(HFGenerator(model, tokenizer, reuse_cache=False), prompts), turns, params, extra)
    _assert_same(got, expected)
    assert len({tuple(g[0]) for turn in got for g in turn}) > 5  # the rows really wrote different text


def test_rows_that_stop_leave_the_batch_and_resume_exactly(model, tokenizer, prompts):
    params = SamplingParams(max_new_tokens=24, temperature=0)
    free = HFGenerator(model, tokenizer, reuse_cache=False).generate(prompts, params)
    # a stop string from row 0's own text, so row 0 stops early while the others run on; rows that hit it later
    # stop at their own step
    text = tokenizer.decode(free[0].token_ids[:6])
    stopping = SamplingParams(max_new_tokens=24, temperature=0, stop=(text[-2:],))
    turns = [[0, 1, 2, 3]] * 3
    extra = {i: tokenizer.encode(f" [{i}]") for i in range(4)}
    got = _play(open_session(HFGenerator(model, tokenizer), prompts), turns, stopping, extra)
    expected = _play(open_session(HFGenerator(model, tokenizer, reuse_cache=False), prompts), turns, stopping, extra)
    _assert_same(got, expected)
    first = got[0]
    assert first[0][2] == "stop" and len(first[0][0]) <= 6
    assert {len(g[0]) for g in first} != {len(first[0][0])}  # the others ran longer: rows left the batch


def test_sampled_rows_alone_draw_what_generate_draws(model, tokenizer, prompts):
    """One row per batch consumes the seeded generator step for step as `model.generate` does, so even sampled
    text (temperature, top-k, top-p) comes out the same; log-probs match a fresh forward pass of the context."""
    params = SamplingParams(max_new_tokens=12, temperature=0.8, top_k=40, top_p=0.9, seed=3)
    turns = [[0, 1, 2], [0, 1, 2]]
    extra = {i: tokenizer.encode(" evidence") for i in range(3)}
    got = _play(open_session(HFGenerator(model, tokenizer, batch_size=1), prompts[:3]), turns, params, extra)
    expected = _play(open_session(HFGenerator(model, tokenizer, batch_size=1, reuse_cache=False), prompts[:3]), turns,
                     params, extra)
    _assert_same(got, expected)
    context = list(prompts[0]) + got[0][0][0] + extra[0]
    ids = got[1][0][0]
    with torch.no_grad():
        logits = model(torch.tensor([context + ids])).logits[0, len(context) - 1:-1].float()  # [G, V]
    fresh = torch.log_softmax(logits / 0.8, -1).gather(-1, torch.tensor(ids)[:, None]).squeeze(-1)
    torch.testing.assert_close(torch.tensor(got[1][0][1]), fresh, atol=ATOL, rtol=0)


def test_greedy_rollout_is_identical_to_the_reprefilling_rollout(model, tokenizer, prompts, monkeypatch):
    """A whole rollout, cache kept vs whole contexts re-sent. The random model never writes `</search>`, so a
    string it does write often ends a search here: every turn then gets an `<information>` block (an error
    message, as for a search without its opening tag), and rows end by turns, length or budget at different
    rounds."""
    free = HFGenerator(model, tokenizer, reuse_cache=False).generate(prompts, SamplingParams(40, temperature=0))
    texts = [tokenizer.decode(g.token_ids) for g in free]
    # the commonest character that some rows write and others do not: those search, the rest run whole turns
    chars = sorted({c for t in texts for c in t if c.strip()}, key=lambda c: (-sum(t.count(c) for t in texts), c))
    end = next(c for c in chars if 2 <= sum(c in t for t in texts) <= 3)
    monkeypatch.setattr(rollout_module, "SEARCH_CLOSE", end)
    cfg = RolloutConfig(max_turns=5, max_completion_tokens=130, max_information_tokens=48,
                        sampling=SamplingParams(max_new_tokens=40, temperature=0, stop=(end,)))
    new = rollout(prompts, HFGenerator(model, tokenizer), None, tokenizer, cfg)
    old = rollout(prompts, HFGenerator(model, tokenizer, reuse_cache=False), None, tokenizer, cfg)
    for a, b in zip(new, old, strict=True):
        assert a.completion_ids == b.completion_ids and a.env_mask == b.env_mask
        assert a.finish_reason == b.finish_reason and a.turns == b.turns
        assert [r.rendered for r in a.tool_results] == [r.rendered for r in b.tool_results]
        torch.testing.assert_close(torch.tensor(a.logprobs), torch.tensor(b.logprobs), atol=ATOL, rtol=0)
    assert sum(len(t.tool_results) for t in new) >= 4  # information blocks were appended to cached rows
    assert max(t.turns for t in new) >= 3 and len({t.turns for t in new}) >= 2


def test_closed_rows_and_backends_without_sessions(model, tokenizer, prompts):
    session = open_session(HFGenerator(model, tokenizer), prompts[:2])
    session.generate([0, 1], SamplingParams(3, temperature=0))
    session.close(1)
    with pytest.raises(ValueError, match="closed"):
        session.generate([1], SamplingParams(3, temperature=0))
    with pytest.raises(ValueError, match="one turn at a time"):
        session.generate([0, 0], SamplingParams(3, temperature=0))

    class Plain:  # any Generator without a session of its own
        def generate(self, prompts, params):
            return []

    assert isinstance(open_session(Plain(), prompts), ResendSession)


def test_sliding_window_models_resend_whole_contexts(tiny_dir, tokenizer, prompts):
    model = AutoModelForCausalLM.from_pretrained(tiny_dir)
    model.config.layer_types = ["sliding_attention"] * len(model.config.layer_types)
    assert isinstance(open_session(HFGenerator(model, tokenizer), prompts), ResendSession)


def test_train_mode_is_restored(model, tokenizer, prompts):
    model.train()
    try:
        open_session(HFGenerator(model, tokenizer), prompts[:1]).generate([0], SamplingParams(3, temperature=0))
        assert all(m.training for m in model.modules())
    finally:
        model.eval()


def _forward_shapes(model, monkeypatch) -> list[tuple[int, int]]:
    """Records the `input_ids` shape of every forward pass of `model`."""
    shapes: list[tuple[int, int]] = []
    forward = model.forward

    def recording(*args, **kwargs):
        shapes.append(tuple(kwargs["input_ids"].shape))
        return forward(*args, **kwargs)

    monkeypatch.setattr(model, "forward", recording)
    return shapes


def test_the_common_beginning_is_read_once_and_identical_rows_are_prefilled_once(model, tokenizer, prompts,
                                                                                   monkeypatch):
    """A GRPO batch holds each prompt several times, and every judge prompt starts with the same system prompt:
    the session reads that beginning in one batch-1 pass and prefills each distinct row once, and the turns are
    still exactly what re-sending whole contexts gives."""
    rows = [prompts[0], prompts[2], prompts[0], prompts[3], prompts[0]]
    common = next(i for i, t in enumerate(zip(*rows, strict=False)) if len(set(t)) > 1)
    assert common >= kv_session.MIN_SHARED
    extra = {i: tokenizer.encode(f" [{i}] evidence") for i in range(len(rows))}
    turns = [[0, 1, 2, 3, 4], [0, 1, 2, 3, 4]]
    params = SamplingParams(max_new_tokens=7, temperature=0)
    expected = _play(open_session(HFGenerator(model, tokenizer, reuse_cache=False), rows), turns, params, extra)
    shapes = _forward_shapes(model, monkeypatch)
    got = _play(open_session(HFGenerator(model, tokenizer), rows), turns, params, extra)
    _assert_same(got, expected)
    width = max(len(r) for r in rows) - common
    assert shapes[:2] == [(1, common), (3, width)]  # the beginning once, then the three distinct rows
    assert shapes[2] == (5, 1)  # the copies decode as rows of their own
    assert (5, max(len(e) for e in extra.values()) + 1) in shapes  # the second turn: every row differs now
    shapes.clear()
    plain = _play(open_session(HFGenerator(model, tokenizer, share_prefill=False), rows), turns, params, extra)
    _assert_same(plain, expected)
    assert shapes[0] == (5, max(len(r) for r in rows))  # off: every row's whole prompt, as before


def test_copies_of_one_prompt_sample_on_their_own(model, tokenizer, prompts):
    """Prefilled once, the copies of a prompt still draw their own tokens (a GRPO group needs different
    completions), and with a fixed seed the same ones every time."""
    params = SamplingParams(max_new_tokens=12, temperature=1.0, seed=5)

    def draw():
        session = open_session(HFGenerator(model, tokenizer), [prompts[0]] * 4)
        return [tuple(g.token_ids) for g in session.generate([0, 1, 2, 3], params)]

    first = draw()
    assert len(set(first)) > 1
    assert draw() == first


def test_grouped_decoding_reads_grouped_keys_in_place_with_the_same_result(model, tokenizer, prompts):
    """On the CPU the `sdpa` model decodes with `GROUPED_SDPA` while a generator runs (grouped keys/values read in
    place instead of copied per head) and gets its own implementation back after; the logits do not move."""
    config = model.config
    assert config.num_key_value_heads < config.num_attention_heads  # the tiny model groups its queries
    assert config._attn_implementation == "sdpa"
    width = max(len(p) for p in prompts)
    ids = torch.tensor([[0] * (width - len(p)) + list(p) for p in prompts])  # [B, P], left-padded
    mask = torch.tensor([[0] * (width - len(p)) + [1] * len(p) for p in prompts])

    def last_logits():
        with torch.no_grad():
            out = model(input_ids=ids[:, :-1], attention_mask=mask[:, :-1], use_cache=True)
            step = model(input_ids=ids[:, -1:], attention_mask=mask, past_key_values=out.past_key_values)
        return step.logits[:, -1]  # [B, V]: a one-token query over a padded cache

    plain = last_logits()
    with grouped_decoding(model, torch.device("cpu")):
        assert config._attn_implementation == GROUPED_SDPA
        grouped = last_logits()
    assert config._attn_implementation == "sdpa"
    torch.testing.assert_close(grouped, plain, atol=1e-5, rtol=0)
    config._attn_implementation = "eager"  # any other implementation is left alone
    try:
        with grouped_decoding(model, torch.device("cpu")):
            assert config._attn_implementation == "eager"
    finally:
        config._attn_implementation = "sdpa"


def test_generators_decode_grouped_unless_told_not_to(model, tokenizer, prompts, monkeypatch):
    seen: list[str] = []
    forward = model.forward

    def recording(*args, **kwargs):
        seen.append(model.config._attn_implementation)
        return forward(*args, **kwargs)

    monkeypatch.setattr(model, "forward", recording)
    params = SamplingParams(max_new_tokens=3, temperature=0)
    on = HFGenerator(model, tokenizer).generate(prompts[:2], params)
    assert set(seen) == {GROUPED_SDPA}
    seen.clear()
    off = HFGenerator(model, tokenizer, grouped_attention=False).generate(prompts[:2], params)
    assert set(seen) == {"sdpa"}
    assert [g.token_ids for g in on] == [g.token_ids for g in off]
    assert model.config._attn_implementation == "sdpa"


def test_a_bf16_autocast_model_decodes_in_float32_on_the_cpu(tiny_dir, tokenizer, prompts):
    """Under accelerate's bf16 mixed precision a model's forward runs in autocast. A session prefills through that
    forward and decodes one token at a time with the unwrapped float32 forward, its cache turned to float32 first;
    `float32_decoding=False` decodes under autocast. Both write text over several turns, and the float32 steps'
    log-probs are those of the float32 model at the same tokens."""
    from accelerate import Accelerator

    model = Accelerator(cpu=True, mixed_precision="bf16").prepare_model(_sharpened(tiny_dir, seed=1))
    original = model.__dict__["_original_forward"]
    calls = {"autocast": 0, "float32": 0}

    def count(name, forward):
        def counted(*args, **kwargs):
            calls[name] += 1
            return forward(*args, **kwargs)
        return counted

    model.forward = count("autocast", model.forward)  # the autocast wrapper, as the trainer calls it
    model._original_forward = count("float32", original)
    extra = {0: tokenizer.encode("\n<information>\nVelmora is a river.\n</information>\n"), 1: [], 2: [], 3: []}
    params = SamplingParams(max_new_tokens=6, temperature=0)
    got = _play(open_session(HFGenerator(model, tokenizer), prompts), [[0, 1, 2, 3], [0, 2]], params, extra)
    assert calls["float32"] > 0 and calls["autocast"] > 0  # prefills under autocast, one-token steps in float32
    assert calls["float32"] >= 2 * calls["autocast"]
    assert all(len(g[0]) == 6 or g[2] != "length" for turn in got for g in turn)
    plain = AutoModelForCausalLM.from_pretrained(tiny_dir)
    plain.load_state_dict(model.state_dict())
    ids, lps = got[0][0][0], got[0][0][1]
    with torch.no_grad():  # the float32 model's log-probs of row 0's first turn, past its first (autocast) token
        logits = plain(input_ids=torch.tensor([prompts[0] + ids])).logits[0, len(prompts[0]) - 1:-1]
    expected = torch.log_softmax(logits.float(), -1).gather(-1, torch.tensor(ids)[:, None]).squeeze(-1)
    # the prompt's keys/values come from the bf16 prefill: measured <= 0.06 apart; a lost cache or a wrong position
    # moves these log-probs by more than 1
    torch.testing.assert_close(torch.tensor(lps[1:]), expected[1:], atol=0.15, rtol=0)
    for name in calls:
        calls[name] = 0
    off = HFGenerator(model, tokenizer, float32_decoding=False)
    _play(open_session(off, prompts), [[0, 1, 2, 3]], params, extra)
    assert calls["float32"] == 0 and calls["autocast"] > 0
    assert HFGenerator(model, tokenizer).decoder(torch.device("meta")) is model  # other devices: the model itself
