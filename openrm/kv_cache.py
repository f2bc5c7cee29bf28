"""A KV cache layer that grows in blocks instead of copying itself at every decoding step.

transformers' `DynamicLayer` concatenates each new token's keys/values onto the whole cache, so a one-token step
copies every cached column of every layer: for SmolLM2 at 16 rows of ~200 tokens on the CPU, about a fifth of the
step. `GrowingLayer` writes into a buffer with `BLOCK` spare columns and hands out a view of its filled part; a
step copies only the new columns, and the buffer is rebuilt (one copy) when it is full or when someone put other
tensors in `keys` / `values` (`batch_select_indices`, a `KVSession` dropping gap columns, a dtype change).

`store_dtype` keeps the keys/values in that dtype whatever the model computes in. A bf16 model on the CPU decodes
with float32 keys/values: PyTorch's CPU attention kernel is several times slower on bf16 one-token queries than on
float32 ones (SmolLM2, 16 rows: about 80 ms a step against 13 ms), while bf16 weights halve the matmuls' time;
`openrm.generation.grouped_decoding`'s attention reads the query in the cache's dtype and returns its own.
"""

from __future__ import annotations

import torch
from transformers.cache_utils import DynamicLayer

BLOCK = 64  # spare columns a rebuilt buffer holds


class GrowingLayer(DynamicLayer):
    def __init__(self, store_dtype: torch.dtype | None = None):
        super().__init__()
        self.store_dtype = store_dtype
        self._keys: torch.Tensor | None = None  # [B, H_kv, capacity, D] buffers; `keys` is a view of the first
        self._values: torch.Tensor | None = None

    def update(self, key_states: torch.Tensor, value_states: torch.Tensor, *args, **kwargs):
        if not self.is_initialized:
            self.lazy_initialization(key_states, value_states)
        dtype = self.store_dtype or key_states.dtype
        keys, buffer = self.keys, self._keys
        filled = keys.shape[-2] if keys.dim() == 4 else 0
        new = key_states.shape[-2]
        if (buffer is None or keys.dim() != 4 or keys.data_ptr() != buffer.data_ptr()
                or keys.stride() != buffer.stride() or keys.dtype != dtype or keys.shape[:2] != buffer.shape[:2]
                or filled + new > buffer.shape[-2]):
            shape = (*key_states.shape[:2], filled + new + BLOCK, key_states.shape[-1])
            self._keys = key_states.new_empty(shape, dtype=dtype)
            self._values = value_states.new_empty(shape, dtype=dtype)
            if filled:
                self._keys[:, :, :filled] = keys
                self._values[:, :, :filled] = self.values
        self._keys[:, :, filled:filled + new] = key_states
        self._values[:, :, filled:filled + new] = value_states
        self.keys = self._keys[:, :, :filled + new]
        self.values = self._values[:, :, :filled + new]
        return self.keys, self.values
