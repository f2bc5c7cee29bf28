"""native_bf16 reads the CPU's flags: bf16 only where the processor has native bf16 dot products."""

import pytest

from plumbing import hardware


@pytest.fixture(autouse=True)
def no_gpu(monkeypatch):
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)


def test_a_cpu_with_bf16_dot_products_trains_in_bf16(tmp_path):
    info = tmp_path / "cpuinfo"
    info.write_text("processor\t: 0\nflags\t\t: fpu sse2 avx2 avx512f avx512_bf16 avx512_vnni\n\n"
                    "processor\t: 1\nflags\t\t: fpu sse2 avx2 avx512f avx512_bf16 avx512_vnni\n")
    assert hardware.native_bf16(info)


@pytest.mark.parametrize("flags", ["fpu sse2 avx2 avx512f avx512bw", "fpu sse2 avx2 avx512_bf16x"])
def test_a_cpu_without_them_stays_in_float32(tmp_path, flags):
    info = tmp_path / "cpuinfo"
    info.write_text(f"processor\t: 0\nflags\t\t: {flags}\n")
    assert not hardware.native_bf16(info)


def test_no_cpuinfo_means_float32(tmp_path):
    assert not hardware.native_bf16(tmp_path / "missing")
