"""TRL's fused LM head, made to score only the labelled positions on a CPU.

GRPOTrainer computes per-token log-probs through `trl.trainer.utils.add_fused_lm_head`, which projects the hidden
states onto the vocabulary in tiles. On Triton devices it projects only the positions whose label is not -100 (the
completion); elsewhere it projects every position, prompt included, and masks the result, so that tile shapes stay
fixed for compilers. Eager PyTorch on a CPU compiles nothing, and there the prompt's projections (49,152-way for
SmolLM2) and their backward are wasted work. `score_labelled_positions_only()` makes the head take the compact path
on CPUs too: the same log-probs (the same rows of the same matrix product), fewer rows.
"""

from __future__ import annotations

import contextlib

import trl.trainer.utils as trl_utils

_TRL_CHOICE = trl_utils._use_triton  # the head's choice of the compact path, by device


def _compact_on_cpu(device) -> bool:
    return device.type == "cpu" or _TRL_CHOICE(device)


def score_labelled_positions_only() -> None:
    """From now on in this process, the fused LM head projects only labelled positions on CPU devices too."""
    if not hasattr(trl_utils, "_use_triton"):
        raise RuntimeError("trl.trainer.utils no longer chooses the fused head's compact path with _use_triton: "
                           "train/fused_head.py needs updating for this TRL version")
    trl_utils._use_triton = _compact_on_cpu


@contextlib.contextmanager
def completion_positions_only():
    """`score_labelled_positions_only()` for the duration of a block (benchmarks compare both paths)."""
    before = trl_utils._use_triton
    score_labelled_positions_only()
    try:
        yield
    finally:
        trl_utils._use_triton = before
