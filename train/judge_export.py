"""Exporting a trained judge, as `train/export_judge.py` runs it: a LoRA adapter merged into its base (or a full
model taken as is), model and tokenizer saved (safetensors) with a `judge_card.json` that starts as the training run's
card, the output folder appearing atomically.

    export_judge(ExportArguments(checkpoint="runs/grpo/checkpoint-500", out="judges/step500", overwrite=True))
"""

from __future__ import annotations

import dataclasses
import importlib.metadata
import json
import logging
import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from openrm.card import RUN_CARD_NAME, JudgeCard

logger = logging.getLogger("openrm.export")
ADAPTER_CONFIG = "adapter_config.json"
DTYPES = ("auto", "float32", "bfloat16", "float16")
RUN_FILE = RUN_CARD_NAME  # the card train/grpo_openrm.py writes beside its checkpoints


@dataclass
class ExportArguments:
    checkpoint: str = field(metadata={"help": "Training output or checkpoint folder: a full HF model or a peft LoRA "
                                              "adapter."})
    out: str = field(metadata={"help": "Folder to write the exported judge to."})
    base_model: str | None = field(default=None, metadata={"help": "Base model of a LoRA adapter (default: the "
                                                                     "adapter config's base_model_name_or_path)."})
    eval_results: str | None = field(default=None, metadata={"help": "A JSON file of evaluation results to record "
                                                                      "in the judge card."})
    max_completion_tokens: int | None = field(default=None, metadata={"help": "Completion budget (model + "
                                                                               "evidence tokens) recorded for "
                                                                               "judging; default the card's."})
    dtype: str = field(default="auto", metadata={"help": f"Weights dtype to load and save, one of {DTYPES}."})
    overwrite: bool = field(default=False, metadata={"help": "Replace --out if it exists."})

    def __post_init__(self):
        checkpoint, out = Path(self.checkpoint).resolve(), Path(self.out).resolve()
        if not ((checkpoint / "config.json").is_file() or (checkpoint / ADAPTER_CONFIG).is_file()):
            raise ValueError(f"--checkpoint {self.checkpoint}: no config.json or {ADAPTER_CONFIG} there")
        if out == checkpoint or checkpoint in out.parents or out in checkpoint.parents:
            raise ValueError(f"--out {self.out} must lie outside --checkpoint {self.checkpoint} (and not contain it)")
        if self.eval_results is not None and not Path(self.eval_results).is_file():
            raise ValueError(f"--eval-results {self.eval_results}: no such file")
        if self.dtype not in DTYPES:
            raise ValueError(f"--dtype must be one of {DTYPES}, got {self.dtype!r}")
        if self.max_completion_tokens is not None and self.max_completion_tokens < 1:
            raise ValueError("--max-completion-tokens must be >= 1")


def find_run(checkpoint: Path) -> tuple[JudgeCard | None, Path | None]:
    """The training run's card, from the checkpoint folder or (for `checkpoint-N`) its parent."""
    for folder in (checkpoint, checkpoint.parent):
        card = JudgeCard.read(folder, RUN_FILE)
        if card is not None:
            return card, folder / RUN_FILE
    return None, None


def global_step(checkpoint: Path, run: JudgeCard | None, run_path: Path | None) -> int | None:
    """This checkpoint's step: its trainer_state.json, else the run file beside it, else a `checkpoint-N` name.
    A run file in the parent folder describes the final step, not this checkpoint's."""
    state = checkpoint / "trainer_state.json"
    if state.is_file():
        return int(json.loads(state.read_text(encoding="utf-8"))["global_step"])
    if run is not None and run_path.parent == checkpoint and run.global_step is not None:
        return run.global_step
    match = re.fullmatch(r"checkpoint-(\d+)", checkpoint.name)
    return int(match.group(1)) if match else None


def load_model(checkpoint: Path, base_model: str | None, dtype: str):
    """(model, tokenizer, base model name, is_adapter); an adapter is merged into its base."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    adapter = (checkpoint / ADAPTER_CONFIG).is_file()
    if not adapter:
        model = AutoModelForCausalLM.from_pretrained(checkpoint, dtype=dtype)
        return model, AutoTokenizer.from_pretrained(checkpoint), base_model, False
    from peft import PeftModel

    config = json.loads((checkpoint / ADAPTER_CONFIG).read_text(encoding="utf-8"))
    base_model = base_model or config["base_model_name_or_path"]
    if not base_model:
        raise ValueError(f"{checkpoint}/{ADAPTER_CONFIG} names no base model; pass --base-model")
    try:
        base = AutoModelForCausalLM.from_pretrained(base_model, dtype=dtype)
    except OSError as exc:
        raise ValueError(f"cannot load base model {base_model!r} of the adapter in {checkpoint} ({exc}); "
                         "pass --base-model") from None
    model = PeftModel.from_pretrained(base, checkpoint).merge_and_unload()
    has_tokenizer = (checkpoint / "tokenizer_config.json").is_file()
    return model, AutoTokenizer.from_pretrained(checkpoint if has_tokenizer else base_model), base_model, True


def openrm_version() -> str | None:
    try:
        return importlib.metadata.version("openrm")
    except importlib.metadata.PackageNotFoundError:
        return None


def openrm_commit() -> str | None:
    """The git commit of this openrm checkout ("-dirty" with uncommitted changes), or None outside git."""
    root = Path(__file__).resolve().parents[1]
    try:
        commit = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True,
                                check=True, timeout=10).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, check=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return commit + ("-dirty" if dirty else "")


def make_card(args: ExportArguments, base_model: str | None, adapter: bool) -> JudgeCard:
    """The training run's card (the judge runs as it was trained), with this export's provenance."""
    checkpoint = Path(args.checkpoint).resolve()
    run, run_path = find_run(checkpoint)
    if run is None:
        logger.warning("no %s in %s or its parent: the card records no training data, reward or tools", RUN_FILE,
                       checkpoint)
    card = run or JudgeCard()
    eval_results = json.loads(Path(args.eval_results).read_text(encoding="utf-8")) if args.eval_results else None
    return dataclasses.replace(
        card, max_completion_tokens=args.max_completion_tokens or card.max_completion_tokens,
        base_model=base_model or card.base_model, source=str(checkpoint), adapter=adapter,
        global_step=global_step(checkpoint, run, run_path), eval_results=eval_results,
        openrm_version=openrm_version(), openrm_commit=openrm_commit(),
        exported_at=datetime.now(UTC).isoformat(timespec="seconds"))


def write_atomically(out: Path, fill, overwrite: bool) -> None:
    """Build the folder beside `out` with `fill(tmp)`, then rename it into place; a crash leaves `out` as it was."""
    if out.exists() and not overwrite:
        raise FileExistsError(f"{out} exists; pass --overwrite to replace it")
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.tmp-", dir=out.parent))
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(tmp, 0o777 & ~umask)  # mkdtemp makes it private; the export is an ordinary folder
    try:
        fill(tmp)
        if out.exists():
            old = out.with_name(f".{out.name}.old-{os.getpid()}")
            os.replace(out, old)
            os.replace(tmp, out)
            shutil.rmtree(old) if old.is_dir() else old.unlink()
        else:
            os.replace(tmp, out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def export_judge(args: ExportArguments) -> Path:
    """Load (merging an adapter into its base), write model, tokenizer and card to `args.out` atomically; returns
    `args.out`."""
    checkpoint, out = Path(args.checkpoint).resolve(), Path(args.out)
    if out.exists() and not args.overwrite:  # before the slow part
        raise FileExistsError(f"{out} exists; pass --overwrite to replace it")
    model, tokenizer, base_model, adapter = load_model(checkpoint, args.base_model, args.dtype)
    card = make_card(args, base_model, adapter)

    def fill(folder: Path) -> None:
        model.save_pretrained(folder)
        tokenizer.save_pretrained(folder)
        card.write(folder)

    write_atomically(out, fill, args.overwrite)
    logger.info("exported the judge from %s%s (step %s) to %s", checkpoint,
                f" merged into {base_model}" if adapter else "", card.global_step, out)
    return out
