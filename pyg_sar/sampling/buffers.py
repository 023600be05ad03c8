"""Reusable output buffers for the node rows a loader gathers per minibatch (used by the
single-process and the distributed sources alike)."""
from __future__ import annotations

import torch
from torch import Tensor


class BufferRing:
    """Reusable output buffers for gathered node rows.

    A fresh 200 MB tensor per minibatch (WordNet's 2,000 features x 27k sampled nodes) costs
    more in first-touch page faults than the gather itself. A minibatch's rows are gathered
    into the first of ``slots`` buffers that nothing outside the ring references any more (its
    storage's use count, which counts every view the user still holds); when all are in use, a
    fresh tensor is returned, so yielded batches are never overwritten.
    """

    def __init__(self, slots: int = 3) -> None:
        self.slots = slots
        self.buffers: dict[tuple, list[Tensor]] = {}

    @staticmethod
    def _free(buf: Tensor) -> bool:
        # The one private torch call of the package: no public API tells how many tensors share
        # a storage, and a weak reference to the yielded view would miss views of it that the
        # user kept (overwriting those would corrupt their batch). Should the call disappear,
        # every slot counts as in use and batches get fresh tensors: slower, never wrong.
        try:  # 2 = `buf` itself + the temporary storage object of this call
            return torch._C._storage_Use_Count(buf.untyped_storage()._cdata) <= 2
        except (AttributeError, RuntimeError):  # private API: fall back to fresh tensors
            return False

    def take(self, key: str, shape: tuple, dtype: torch.dtype) -> Tensor:
        numel = 1
        for d in shape:
            numel *= d
        ring = self.buffers.setdefault((key, dtype), [])
        for i, buf in enumerate(ring):
            if self._free(buf):
                if buf.numel() < numel:
                    buf = ring[i] = torch.empty(int(numel * 1.25) + 1, dtype=dtype)
                return buf[:numel].view(shape)
        if len(ring) < self.slots:
            ring.append(torch.empty(int(numel * 1.25) + 1, dtype=dtype))
            return ring[-1][:numel].view(shape)
        return torch.empty(shape, dtype=dtype)

    def gather(self, key: str, table: Tensor, index: Tensor) -> Tensor:
        """``table.index_select(0, index)`` into a reused buffer where one is free."""
        row_bytes = table[0].numel() * table.element_size() if table.numel() else 0
        if table.dim() == 0 or row_bytes < 256 or table.device.type != "cpu":
            return table.index_select(0, index)
        out = self.take(key, (index.numel(), *table.shape[1:]), table.dtype)
        return torch.index_select(table, 0, index, out=out)
