"""Shared fixtures of the core tests: one tiny judge (random weights, local tokenizer) per test module."""

import pytest


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory):
    from toy.tiny import build

    return build(tmp_path_factory.mktemp("tiny"))


@pytest.fixture(scope="module")
def tokenizer(tiny_dir):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(tiny_dir)
