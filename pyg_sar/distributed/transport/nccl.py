"""The NCCL backend: CUDA tensors through torch.distributed (one GPU per rank; NCCL refuses two
ranks on one GPU, see :func:`pyg_sar.init`). Host tensors are staged onto the rank's GPU
(:mod:`pyg_sar.distributed.transport.staging`)."""
from __future__ import annotations

import torch

from pyg_sar.distributed.transport.torch_dist import TorchCommunicator


class NCCLCommunicator(TorchCommunicator):
    """NCCL on a dedicated process group; helper tensors live on ``device``.

    Args:
        group: the process group (``dist.new_group(backend="nccl")``); destroyed by
            :meth:`close` when ``owns_group``.
        timeout: default deadline of blocking waits, in seconds.
        device: this rank's CUDA device.
    """

    def __init__(self, group, timeout: float = 120.0,
                 device: torch.device | str = "cuda", owns_group: bool = True) -> None:
        device = torch.device(device)
        if device.type != "cuda":
            raise ValueError(f"NCCLCommunicator: device must be a CUDA device (got {device})")
        super().__init__(group, timeout, device, owns_group)
        if self.backend != "nccl":
            raise ValueError(f"NCCLCommunicator: the group's backend is {self.backend!r}")
