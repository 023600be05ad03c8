"""Communication: bootstrap (:func:`init`), communicators, the streaming step, gradient sync."""
from pyg_sar.distributed.comm import (
    Communicator,
    LocalCommunicator,
    MPICommunicator,
    TorchCommunicator,
    Work,
)
from pyg_sar.distributed.context import DistContext, get_context, init, shutdown
from pyg_sar.distributed.streaming import PendingExchange, ring_peers, start_exchange, stream
from pyg_sar.distributed.sync import (
    all_reduce_gradients,
    broadcast_parameters,
    check_parameters_equal,
    check_same_dtypes,
)

__all__ = [
    "DistContext", "init", "get_context", "shutdown",
    "Communicator", "Work", "LocalCommunicator", "MPICommunicator", "TorchCommunicator",
    "ring_peers", "start_exchange", "stream", "PendingExchange",
    "all_reduce_gradients", "broadcast_parameters", "check_parameters_equal", "check_same_dtypes",
]
