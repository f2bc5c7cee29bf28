"""The packaged models (openrm/models.py): the real SmolLM2 conversion, the short name everywhere a folder goes, and
clear errors that leave no half folder behind (missing package, corrupt GGUF, a full disk)."""

from __future__ import annotations

import errno
import json
import sys

import pytest

from openrm import models

NAME = "smollm2-135m-instruct"


@pytest.fixture(scope="module")
def smollm2():
    return models.prepare(NAME)


def test_prepared_folder_is_a_plain_model_with_the_chat_turns_special_tokens(smollm2):
    from transformers import AutoConfig, AutoTokenizer, GenerationConfig

    config = AutoConfig.from_pretrained(smollm2)
    assert getattr(config, "quantization_config", None) is None  # loadable and savable as a normal model
    assert config.max_position_embeddings == 8192 and config.tie_word_embeddings
    tok = AutoTokenizer.from_pretrained(smollm2)
    # the GGUF conversion names <|im_start|> as eos and sets no pad token: both must be the turn's end
    assert tok.eos_token == tok.pad_token == "<|im_end|>" and tok.eos_token_id == tok.pad_token_id == 2
    assert tok.model_max_length == 8192 and tok.clean_up_tokenization_spaces is False
    assert tok.padding_side == "left"
    assert GenerationConfig.from_pretrained(smollm2).eos_token_id == 2
    assert json.loads((smollm2 / models.MARKER).read_text())["sha256"] == models.PACKAGED[NAME].sha256


def test_prepare_reuses_a_finished_folder(smollm2, monkeypatch):
    def boom(*args):
        raise AssertionError("converted again")

    monkeypatch.setattr(models, "_convert", boom)
    assert models.prepare(NAME) == smollm2
    assert models.resolve(NAME) == str(smollm2)


def test_resolve_leaves_folders_and_other_names_alone(tmp_path):
    assert models.resolve(str(tmp_path)) == str(tmp_path)
    assert models.resolve("Qwen/Qwen2.5-7B-Instruct") == "Qwen/Qwen2.5-7B-Instruct"


def test_cli_prints_the_folder(smollm2, capsys):
    assert models.main(["prepare", NAME]) == 0
    assert capsys.readouterr().out.strip() == str(smollm2)


def fake_model(tmp_path, monkeypatch, content: bytes, package: str = "fake_gguf_pkg"):
    """A packaged model whose 'package' is a folder on sys.path holding `content` as its GGUF."""
    pkg = tmp_path / "site" / package
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("raise ImportError('never import me')\n")
    (pkg / "model.gguf").write_bytes(content)
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    sys.modules.pop(package, None)
    real = models.PACKAGED[NAME]
    fake = models.PackagedModel(name="fake", package=package, filename="model.gguf",
                                sha256=real.sha256, install="pip install fake", eos_token="<|im_end|>",
                                max_positions=8192, license="none")
    monkeypatch.setitem(models.PACKAGED, "fake", fake)
    monkeypatch.setenv("OPENRM_CACHE", str(tmp_path / "cache"))
    return fake


def leftovers(tmp_path) -> list:
    return sorted((tmp_path / "cache").rglob("*"))[1:]  # all but the (possibly created) models/ folder itself


def test_unknown_name_is_a_clear_error():
    with pytest.raises(models.ModelPreparationError, match="unknown packaged model 'nope'.*smollm2"):
        models.prepare("nope")


def test_missing_package_names_the_install_command(tmp_path, monkeypatch):
    fake = fake_model(tmp_path, monkeypatch, b"x")
    monkeypatch.setitem(models.PACKAGED, "fake", models.PackagedModel(**{**fake.__dict__, "package": "no_such_pkg_x"}))
    with pytest.raises(models.ModelPreparationError, match="no_such_pkg_x is not installed.*pip install fake"):
        models.prepare("fake")
    assert leftovers(tmp_path) == []


def test_truncated_gguf_is_refused_without_a_folder(tmp_path, monkeypatch):
    fake_model(tmp_path, monkeypatch, b"GGUF" + b"\0" * 100)
    with pytest.raises(models.ModelPreparationError, match="corrupt or truncated.*--force-reinstall"):
        models.prepare("fake")
    assert leftovers(tmp_path) == []


def test_full_disk_leaves_no_half_folder(tmp_path, monkeypatch):
    import hashlib

    content = b"GGUF fake"
    fake = fake_model(tmp_path, monkeypatch, content)
    monkeypatch.setitem(models.PACKAGED, "fake", models.PackagedModel(
        **{**fake.__dict__, "sha256": hashlib.sha256(content).hexdigest()}))

    def half_written(model, source, out):
        out.mkdir(parents=True)
        (out / "model.safetensors").write_bytes(b"half")
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(models, "_convert", half_written)
    with pytest.raises(models.ModelPreparationError, match="no space left.*OPENRM_CACHE"):
        models.prepare("fake")
    assert leftovers(tmp_path) == []  # neither the folder nor its temporary twin
    assert models.main(["list"]) == 0
