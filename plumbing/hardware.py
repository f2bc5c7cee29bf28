"""What this machine's processor can do that a run's defaults depend on."""

from __future__ import annotations

from pathlib import Path

# x86 CPU flags of native bfloat16 dot products (oneDNN uses them under torch.autocast("cpu", torch.bfloat16))
BF16_CPU_FLAGS = ("avx512_bf16", "amx_bf16")


def native_bf16(cpuinfo: Path = Path("/proc/cpuinfo")) -> bool:
    """Whether bfloat16 training pays here: a CUDA GPU that supports it, else a CPU with native bf16 dot products
    (read from `cpuinfo`'s flags; a CPU without them, or a system without that file, emulates bf16 slowly)."""
    import torch

    if torch.cuda.is_available():
        return torch.cuda.is_bf16_supported()
    try:
        flags = next((line.split(":", 1)[1].split() for line in cpuinfo.read_text().splitlines()
                      if line.startswith("flags")), [])
    except OSError:
        return False
    return any(flag in flags for flag in BF16_CPU_FLAGS)
