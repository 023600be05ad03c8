r"""Failure supervision as a layer around a communicator (opt-in; on by default in
:func:`pyg_sar.init` and ``python -m pyg_sar.train``).

:func:`supervise` starts this rank's failure watchdog (:mod:`pyg_sar.distributed.watchdog`:
the side channel to rank 0, heartbeats, and the witness process of
:mod:`pyg_sar.distributed.witness`) over the communicator, and returns a
:class:`SupervisedCommunicator`: the same communicator whose every wait now

* publishes the operation it is in (what peers and witnesses report if this rank dies),
* ends at once with :class:`~pyg_sar.distributed.watchdog.PeerFailure` when another rank has
  failed (instead of waiting out its timeout),
* turns a broken connection or a timeout into the watchdog's diagnosis (which rank failed, and
  in what) when it has one.

The transport knows none of this: it only calls its :class:`~pyg_sar.distributed.transport.
WaitObserver` hooks. The join checks at start-up (every rank must arrive within the timeout)
live in :mod:`pyg_sar.distributed.join`; :func:`pyg_sar.init` runs them before any of this.
"""
from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any, Optional

from torch import Tensor

from pyg_sar.distributed import watchdog
from pyg_sar.distributed.transport.base import CommError, CommTimeout, Communicator, Work


class WatchdogObserver:
    """A :class:`~pyg_sar.distributed.transport.WaitObserver` reporting to the watchdog."""

    def begin(self, operation: str) -> None:
        watchdog.set_operation(operation)

    def poll(self) -> None:
        watchdog.check_peers()  # a failed peer ends the wait at once

    def end(self) -> None:
        watchdog.done_operation()

    def failed(self, error: CommError) -> Optional[BaseException]:
        # A dead peer breaks gloo's connections: the watchdog names it soon after.
        diagnosis = watchdog.wait_for_diagnosis(timed_out=isinstance(error, CommTimeout))
        if diagnosis is None:
            return None
        failure = watchdog.PeerFailure(diagnosis)
        failure.__cause__ = error
        return failure


def _env_seconds(name: str, default: float) -> float:
    try:
        value = float(os.environ.get(name, default))
    except ValueError:
        raise RuntimeError(f"pyg_sar: {name}={os.environ[name]!r} is not a number") from None
    if not value > 0:
        raise RuntimeError(f"pyg_sar: {name} must be > 0 (got {value})")
    return value


class SupervisedCommunicator(Communicator):
    """``inner`` with failure supervision (see the module docstring); made by
    :func:`supervise`. Every operation is ``inner``'s; :meth:`close` stops the watchdog first.

    Attributes:
        inner: the transport's communicator.
    """

    def __init__(self, inner: Communicator) -> None:
        # No Communicator.__init__: rank, counters and observer are the inner communicator's.
        self.inner = inner
        inner.observer = WatchdogObserver()

    # The inner communicator's state, shared (the engine's counters land there).
    rank = property(lambda self: self.inner.rank)
    world_size = property(lambda self: self.inner.world_size)
    timeout = property(lambda self: self.inner.timeout)
    backend = property(lambda self: self.inner.backend)
    progresses_in_background = property(lambda self: self.inner.progresses_in_background)
    stats = property(lambda self: self.inner.stats)
    traffic = property(lambda self: self.inner.traffic)
    observer = property(lambda self: self.inner.observer)

    def isend(self, tensor: Tensor, dst: int, tag: int = 0) -> Work:
        return self.inner.isend(tensor, dst, tag)

    def irecv(self, tensor: Tensor, src: int, tag: int = 0) -> Work:
        return self.inner.irecv(tensor, src, tag)

    def all_reduce(self, tensor: Tensor, op: str = "sum", *,
                   timeout: Optional[float] = None) -> Tensor:
        return self.inner.all_reduce(tensor, op, timeout=timeout)

    def broadcast(self, tensor: Tensor, src: int = 0, *,
                  timeout: Optional[float] = None) -> Tensor:
        return self.inner.broadcast(tensor, src, timeout=timeout)

    def all_to_all_single(self, output: Tensor, input: Tensor,
                          output_split_sizes: Optional[Sequence[int]] = None,
                          input_split_sizes: Optional[Sequence[int]] = None, *,
                          timeout: Optional[float] = None) -> Tensor:
        return self.inner.all_to_all_single(output, input, output_split_sizes,
                                            input_split_sizes, timeout=timeout)

    def allgather_object(self, obj: Any, *, timeout: Optional[float] = None) -> list:
        return self.inner.allgather_object(obj, timeout=timeout)

    def barrier(self, *, timeout: Optional[float] = None) -> None:
        self.inner.barrier(timeout=timeout)

    def close(self) -> None:
        """Stop the watchdog (a goodbye to the others, unless a failure is known), then close
        the inner communicator. Idempotent."""
        watchdog.stop_watchdog()
        self.inner.observer = None
        self.inner.close()


def supervise(comm: Communicator, hub_address: str,
              timeout: Optional[float] = None) -> SupervisedCommunicator:
    """Start failure supervision over ``comm`` (collective: every rank calls it) and return the
    supervised communicator.

    Args:
        comm: the transport's communicator.
        hub_address: the address by which the other ranks reach rank 0's watchdog hub (see
            :func:`pyg_sar.distributed.address.choose_address`).
        timeout: deadline of the set-up (default: the communicator's).

    Intervals from ``PYG_SAR_HEARTBEAT_S`` (2), ``PYG_SAR_DEAD_AFTER_S`` (45) and
    ``PYG_SAR_FAILURE_GRACE_S`` (10); ``PYG_SAR_WITNESS=0/1`` turns the witness off or on.
    """
    if isinstance(comm, SupervisedCommunicator):
        raise ValueError("supervise: the communicator is already supervised")
    watchdog.start_watchdog(
        comm, hub_address, comm.timeout if timeout is None else float(timeout),
        heartbeat=_env_seconds("PYG_SAR_HEARTBEAT_S", watchdog.HEARTBEAT_S),
        dead_after=_env_seconds("PYG_SAR_DEAD_AFTER_S", watchdog.DEAD_AFTER_S),
        grace=_env_seconds("PYG_SAR_FAILURE_GRACE_S", watchdog.GRACE_S))
    return SupervisedCommunicator(comm)
