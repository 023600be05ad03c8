"""The gloo backend: host tensors over TCP through torch.distributed (the default under
torchrun). Tensors on a GPU are staged through page-locked host memory
(:mod:`pyg_sar.distributed.transport.staging`), so several ranks may share one GPU. gloo binds
to ``GLOO_SOCKET_IFNAME``'s interface; :func:`pyg_sar.init` sets it to the interface that
reaches the rendezvous address when it is unset (see :mod:`pyg_sar.distributed.address`)."""
from __future__ import annotations

from pyg_sar.distributed.transport.torch_dist import TorchCommunicator


class GlooCommunicator(TorchCommunicator):
    """gloo on a dedicated process group (``dist.new_group(backend="gloo")``); the backend
    sees host tensors only (GPU tensors are staged through the host, see ``staging``).

    Args:
        group: the process group; destroyed by :meth:`close` when ``owns_group``.
        timeout: default deadline of blocking waits, in seconds.
    """

    def __init__(self, group, timeout: float = 120.0, owns_group: bool = True) -> None:
        super().__init__(group, timeout, "cpu", owns_group)
        if self.backend != "gloo":
            raise ValueError(f"GlooCommunicator: the group's backend is {self.backend!r}")
