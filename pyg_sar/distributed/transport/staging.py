r"""Staging: how a communicator moves tensors that live where its backend cannot carry them.

Every backend carries tensors of one kind of memory, its *carrier*:

* ``mpi``: host memory. pyg_sar never hands a device pointer to MPI, CUDA-aware or not (one
  code path for every MPI build; a CUDA-aware MPI is not needed).
* ``gloo``: host memory. gloo's point-to-point operations take CPU tensors only; its
  collectives are staged the same way, so every operation behaves alike.
* ``nccl``: this rank's CUDA device (host tensors are staged onto it).
* ``local``: nothing crosses, nothing is staged.

A tensor on another device is *staged*: an outgoing tensor is copied to a buffer on the carrier
before the backend sees it (page-locked host memory when it comes from a GPU, so the copy runs
at full bandwidth; PyTorch's caching host allocator reuses those buffers); an incoming one is
received into such a buffer and copied into the caller's tensor when the operation completes.
The copies are synchronous: a staged send reads the device tensor once, before the operation
starts, and a staged receive writes it once, inside ``wait()``. On a CPU-only run with a host
carrier nothing is staged (the decision is :meth:`Staging.needed`; a non-contiguous host tensor
only gets a contiguous buffer). :attr:`Staging.copies` and :attr:`Staging.bytes` count what was
staged, so a test or a profile can see it.

Several ranks may so share one GPU (``init(backend="gloo" | "mpi", device="cuda")``): each
computes on the device and communicates through the host.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Optional

import torch
from torch import Tensor

HOST = torch.device("cpu")


def carrier_of(backend: str, device: Optional[torch.device | str] = None) -> torch.device:
    """The memory ``backend`` carries: the host for ``mpi``, ``gloo`` and ``local``; ``device``
    (a CUDA device) for ``nccl``."""
    if backend in ("mpi", "gloo", "local"):
        return HOST
    if backend == "nccl":
        if device is None or torch.device(device).type != "cuda":
            raise ValueError(f"pyg_sar: backend 'nccl' carries CUDA tensors; its device must "
                             f"be a CUDA device (got {device!r})")
        return torch.device(device)
    raise ValueError(f"pyg_sar: unknown backend {backend!r} (expected mpi, gloo, nccl, local)")


def _same(a: torch.device, b: torch.device) -> bool:
    # "cuda" without an index means the current device.
    if a.type != b.type:
        return False
    if a.index is None or b.index is None:
        cur = torch.cuda.current_device() if a.type == "cuda" and torch.cuda.is_available() \
            else None
        return (a.index if a.index is not None else cur) == \
            (b.index if b.index is not None else cur)
    return a.index == b.index


class Staging:
    """Copies tensors to and from a backend's carrier (see the module docstring).

    Args:
        carrier: the device whose memory the backend reads and writes.
        pin_memory: stage GPU tensors through page-locked host memory (default ``True``).

    Attributes:
        copies: number of tensors staged (each direction counts once).
        bytes: bytes staged.
    """

    def __init__(self, carrier: torch.device | str, pin_memory: bool = True) -> None:
        self.carrier = torch.device(carrier)
        self.pin_memory = bool(pin_memory)
        self.copies = 0
        self.bytes = 0

    def needed(self, device: torch.device | str) -> bool:
        """Whether a tensor on ``device`` must be staged to reach the backend."""
        return not _same(torch.device(device), self.carrier)

    def _buffer(self, t: Tensor) -> Tensor:
        pin = (self.pin_memory and self.carrier.type == "cpu" and t.device.type == "cuda")
        self.copies += 1
        self.bytes += t.numel() * t.element_size()
        return torch.empty(t.shape, dtype=t.dtype, device=self.carrier, pin_memory=pin)

    def outgoing(self, t: Tensor) -> Tensor:
        """A contiguous tensor on the carrier with the data of ``t`` (``t``'s own storage when
        it is already there and contiguous)."""
        t = t.detach()
        if not self.needed(t.device):
            return t.contiguous()
        buf = self._buffer(t)
        buf.copy_(t)
        return buf

    def incoming(self, t: Tensor) -> tuple[Tensor, Optional[Callable[[], None]]]:
        """Where to receive data meant for ``t``, and what copies it into ``t`` afterwards
        (``None``: ``t`` itself is received into)."""
        if not self.needed(t.device):
            if t.is_contiguous():
                return t.detach(), None
            buf = torch.empty(t.shape, dtype=t.dtype, device=t.device)
        else:
            buf = self._buffer(t)
        target = t.detach()
        return buf, lambda: target.copy_(buf)
