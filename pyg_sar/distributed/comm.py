"""The communicators, under their historical import path: see
:mod:`pyg_sar.distributed.transport` (one module per backend) and
:mod:`pyg_sar.distributed.supervision` (failure supervision around one)."""
from pyg_sar.distributed.transport import (
    REDUCE_OPS,
    CommError,
    CommStats,
    CommTimeout,
    Communicator,
    GlooCommunicator,
    LocalCommunicator,
    MPICommunicator,
    NCCLCommunicator,
    TorchCommunicator,
    WaitObserver,
    Work,
    timeout_error,
)

__all__ = ["Communicator", "Work", "CommStats", "CommError", "CommTimeout", "WaitObserver",
           "REDUCE_OPS", "timeout_error", "LocalCommunicator", "MPICommunicator",
           "TorchCommunicator", "GlooCommunicator", "NCCLCommunicator"]
