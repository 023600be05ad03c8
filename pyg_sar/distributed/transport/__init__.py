"""The thin transport: one :class:`Communicator` interface, one module per backend (``mpi``:
mpi4py, ``gloo`` and ``nccl``: torch.distributed, ``local``: one process). Nothing here knows
of failure supervision (:mod:`pyg_sar.distributed.supervision` wraps a communicator) or of
graphs. Backend modules import their libraries (mpi4py, torch.distributed) lazily."""
from pyg_sar.distributed.transport.base import (
    REDUCE_OPS,
    CommError,
    CommStats,
    CommTimeout,
    Communicator,
    WaitObserver,
    Work,
    describe,
    timeout_error,
)
from pyg_sar.distributed.transport.gloo import GlooCommunicator
from pyg_sar.distributed.transport.local import LocalCommunicator
from pyg_sar.distributed.transport.mpi import MPICommunicator
from pyg_sar.distributed.transport.nccl import NCCLCommunicator
from pyg_sar.distributed.transport.torch_dist import TorchCommunicator

__all__ = ["Communicator", "Work", "CommStats", "CommError", "CommTimeout", "WaitObserver",
           "REDUCE_OPS", "describe", "timeout_error", "LocalCommunicator", "MPICommunicator",
           "TorchCommunicator", "GlooCommunicator", "NCCLCommunicator"]
