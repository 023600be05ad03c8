"""Communication: bootstrap (:func:`init`), the transport (one communicator per backend),
failure supervision around it, the streaming step, gradient sync."""
from pyg_sar.distributed.context import (
    DistContext,
    get_context,
    init,
    resolve_context,
    shutdown,
)
from pyg_sar.distributed.streaming import PendingExchange, ring_peers, start_exchange
from pyg_sar.distributed.supervision import SupervisedCommunicator, Supervisor, supervise
from pyg_sar.distributed.sync import (
    all_reduce_gradients,
    broadcast_parameters,
    check_parameters_equal,
    check_same_dtypes,
)
from pyg_sar.distributed.transport import (
    CommError,
    CommTimeout,
    Communicator,
    GlooCommunicator,
    LocalCommunicator,
    MPICommunicator,
    NCCLCommunicator,
    TorchCommunicator,
    Work,
)

__all__ = [
    "DistContext", "init", "get_context", "resolve_context", "shutdown",
    "Communicator", "Work", "CommError", "CommTimeout", "LocalCommunicator",
    "MPICommunicator", "TorchCommunicator", "GlooCommunicator", "NCCLCommunicator",
    "SupervisedCommunicator", "Supervisor", "supervise",
    "ring_peers", "start_exchange", "PendingExchange",
    "all_reduce_gradients", "broadcast_parameters", "check_parameters_equal", "check_same_dtypes",
]
