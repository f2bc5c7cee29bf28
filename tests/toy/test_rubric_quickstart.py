"""The rubric quickstart's choice of generator: the tiny from-scratch model by default, a pretrained base with its
own GRPO config and a rubric budget that fits BPE tokens, and clear errors for bad sizes."""

from __future__ import annotations

import pytest
import yaml

from toy.rubric_stages import CONFIG, PRETRAINED_CONFIG, RubricQuickstartArguments


def test_a_pretrained_generator_gets_its_own_config_and_a_longer_rubric_budget():
    tiny = RubricQuickstartArguments()
    smol = RubricQuickstartArguments(model="smollm2-135m-instruct")
    assert (tiny.tiny, tiny.config, tiny.eval_tokens) == (True, CONFIG, 48)
    assert (smol.tiny, smol.config, smol.eval_tokens) == (False, PRETRAINED_CONFIG, 160)
    assert RubricQuickstartArguments(model="smollm2-135m-instruct", max_new_tokens=96).eval_tokens == 96
    pretrained = yaml.safe_load(PRETRAINED_CONFIG.read_text())
    assert pretrained["max_completion_length"] >= smol.eval_tokens  # training may write what evaluation reads
    assert pretrained["per_device_train_batch_size"] % pretrained["num_generations"] == 0


@pytest.mark.parametrize("bad", [{"sft_batch": 0}, {"max_new_tokens": -1}, {"n_queries": 8}])
def test_bad_sizes_are_clear_errors(bad):
    with pytest.raises(ValueError):
        RubricQuickstartArguments(**bad)
