r"""Failure supervision, asked for explicitly: ``pyg_sar.init(supervise=True)``,
``PYG_SAR_SUPERVISE=1``, or the launcher entry point ``python -m pyg_sar.train``.

Without it, :func:`pyg_sar.init` is a library call: no thread, no helper process, no hook, no
exit timer. Every wait still has a deadline and ends in an error naming the rank and the
operation (:class:`~pyg_sar.distributed.transport.CommTimeout`), and launchers end a job whose
rank died (MPICH's ``mpiexec`` kills the other ranks when one exits with an error status;
torchrun's agent does the same).

With it, a :class:`Supervisor` (owned by the :class:`SupervisedCommunicator`, reachable as
``ctx.supervisor``) puts four pieces together:

* an :class:`~pyg_sar.distributed.operations.OperationTracker`: the operation this rank is in;
* a :class:`~pyg_sar.distributed.hub.FailureHub`: a TCP side channel to rank 0 with heartbeats
  (a thread), over which a failed or killed rank is named on every rank at once;
* a :class:`~pyg_sar.distributed.witness_link.Witness` under ``mpiexec`` and ``torchrun``: a
  process that outlives the rank, says which rank ended first when the launcher kills the rest;
* :class:`~pyg_sar.distributed.exit_hooks.ExitHooks`: ``sys.excepthook`` reports an uncaught
  exception to every rank, and a process that failed exits without blocking on a dead peer.

Every wait of the supervised communicator publishes its operation, ends at once with
:class:`PeerFailure` when another rank failed, and turns a broken connection or a timeout into
the hub's diagnosis (which rank failed, and in what). The transport knows none of this: it only
calls its :class:`~pyg_sar.distributed.transport.WaitObserver` hooks. A clean
:func:`pyg_sar.shutdown` removes everything again.
"""
from __future__ import annotations

import os
import sys
import traceback
import warnings
from collections.abc import Sequence
from typing import Any, Optional

from torch import Tensor

from pyg_sar.distributed import hub as _hub
from pyg_sar.distributed.exit_hooks import GRACE_S, ExitHooks
from pyg_sar.distributed.hub import FailureHub, PeerFailure, PeerInterrupted
from pyg_sar.distributed.operations import OperationTracker
from pyg_sar.distributed.transport.base import CommError, CommTimeout, Communicator, Work
from pyg_sar.distributed.witness_link import Witness, witness_wanted

__all__ = ["Supervisor", "SupervisedCommunicator", "supervise", "supervision_requested",
           "PeerFailure", "PeerInterrupted"]

ENV = "PYG_SAR_SUPERVISE"
LEGACY_ENV = "PYG_SAR_WATCHDOG"  # its old name, still read
_TRUE, _FALSE = ("1", "true", "yes", "on"), ("0", "false", "no", "off")


def _env_flag(name: str) -> Optional[bool]:
    value = os.environ.get(name)
    if value is None or value.strip() == "":
        return None
    flag = value.strip().lower()
    if flag in _TRUE:
        return True
    if flag in _FALSE:
        return False
    raise ValueError(f"pyg_sar: {name}={value!r} is not a switch: set it to 1 (supervise) or 0")


def supervision_requested(supervise: Optional[bool], default: bool = False) -> bool:
    """Whether failure supervision is asked for: the argument when given, else
    ``PYG_SAR_SUPERVISE`` (``1``/``0``; its old name ``PYG_SAR_WATCHDOG`` is still read), else
    ``default`` (off for :func:`pyg_sar.init`, on for ``python -m pyg_sar.train``)."""
    if supervise is not None:
        return bool(supervise)
    new, old = _env_flag(ENV), _env_flag(LEGACY_ENV)
    if old is not None:
        if new is not None and new != old:
            raise ValueError(f"pyg_sar: {ENV}={os.environ[ENV]!r} and {LEGACY_ENV}="
                             f"{os.environ[LEGACY_ENV]!r} disagree; {LEGACY_ENV} is the old "
                             f"name of {ENV}: unset it")
        if new is None:
            warnings.warn(f"pyg_sar: {LEGACY_ENV} is now called {ENV} (read as "
                          f"{ENV}={int(old)})", FutureWarning, stacklevel=3)
            return old
    return default if new is None else new


def _env_seconds(name: str, default: float) -> float:
    try:
        value = float(os.environ.get(name, default))
    except ValueError:
        raise RuntimeError(f"pyg_sar: {name}={os.environ[name]!r} is not a number") from None
    if not value > 0:
        raise RuntimeError(f"pyg_sar: {name} must be > 0 (got {value})")
    return value


class Supervisor:
    """The failure supervision of one rank (see the module docstring).

    Args:
        rank, world_size: this rank and the number of ranks.
        heartbeat: seconds between heartbeats.
        dead_after: a peer silent this long is declared lost.
        grace: seconds between learning of another rank's failure and ending this process.
        witness: start a witness process (default: under ``mpiexec`` and ``torchrun``, or as
            ``PYG_SAR_WITNESS=1/0`` says).

    Attributes:
        tracker: the operation this rank is in.
        hub: the TCP side channel (failure detection and relay).
        witness: this rank's witness, or ``None``.
        exit_hooks: the process-wide hooks (installed by :meth:`start`).
    """

    def __init__(self, rank: int, world_size: int, *, heartbeat: float = _hub.HEARTBEAT_S,
                 dead_after: float = _hub.DEAD_AFTER_S, grace: float = GRACE_S,
                 witness: Optional[bool] = None) -> None:
        self.rank, self.world_size = rank, world_size
        self.tracker = OperationTracker()
        self.hub = FailureHub(rank, world_size, heartbeat, dead_after, tracker=self.tracker,
                              on_peer_failure=self._on_peer_failure)
        self.exit_hooks = ExitHooks(self.hub, grace, report_failure=self.report_failure,
                                    report_interrupt=self.report_interrupt)
        self.witness: Optional[Witness] = None
        self._want_witness = witness_wanted() if witness is None else witness
        self._started = False

    @property
    def grace(self) -> float:
        return self.exit_hooks.grace

    @property
    def failure(self) -> Optional[str]:
        """The failure message this rank learnt of (or reported), or ``None``."""
        return self.hub.failure

    def start(self, comm: Communicator, host: str, timeout: float) -> None:
        """Collective over ``comm``: start the witness, meet the others at rank 0's hub
        (reachable at ``host``), start the heartbeat thread and install the exit hooks."""
        if self._started:
            raise RuntimeError("Supervisor.start: already started")
        witness = None
        if self._want_witness:
            try:
                witness = Witness(self.rank, tracker=self.tracker)
            except OSError as e:  # failure reports still come from the hub itself
                print(f"pyg_sar: rank {self.rank}: could not start the failure witness ({e}); "
                      f"continuing without it", file=sys.stderr, flush=True)
        try:
            self.hub.connect(comm, host, timeout, witness)
        except BaseException:
            if witness is not None:
                witness.close(clean=True)
            raise
        self.witness = witness
        self.tracker.begin("init", waiting=False)
        self.exit_hooks.install()
        self._started = True

    def close(self) -> None:
        """A clean end: goodbye to the others, the witness and the thread end, the hooks are
        removed. After a failure the exit hooks stay (they end the process without blocking
        on a dead peer). Idempotent."""
        self.hub.close()
        if self.hub.failure is None and not self.hub.exiting_with_error:
            self.exit_hooks.uninstall()
        self._started = False

    # -------------------------------------------------------------- what ranks ask of it
    def check_peers(self) -> None:
        """Raise :class:`PeerFailure` if another rank has failed."""
        self.hub.check()

    def diagnose(self, error: CommError) -> Optional[BaseException]:
        """A :class:`PeerFailure` naming the failed rank behind ``error``, or ``None``."""
        diagnosis = self.hub.diagnose(timed_out=isinstance(error, CommTimeout))
        if diagnosis is None:
            return None
        failure = PeerFailure(diagnosis)
        failure.__cause__ = error
        return failure

    def report_failure(self, exc: BaseException) -> None:
        """Tell every rank that this one failed with ``exc``."""
        error = "".join(traceback.format_exception_only(type(exc), exc)).strip().splitlines()
        self.hub.report_own_failure(error[-1] if error else type(exc).__name__)

    def report_interrupt(self) -> None:
        """Tell every rank that this one was interrupted: they stop at their next wait with
        :class:`PeerInterrupted`, and no rank or witness reports it as a failure."""
        self.hub.report_interrupt()

    def release_after_interrupt(self) -> None:
        """After an interrupt, the order of exits: rank 0 calls this once it has reported the
        interrupt; every other rank calls it to wait for that (or for rank 0's end; at most
        half the grace period, a hang detector), so that all exit together right after.

        mpiexec and torchrun end every rank once one exits: a rank that exited first could cut
        rank 0's report short, and one still running when the launcher kills it is reported
        as killed (MPICH: "BAD TERMINATION ... signal 9")."""
        if self.rank == 0:
            self.hub.release_others()
        else:
            self.hub.wait_released(self.grace / 2)

    def _on_peer_failure(self, message: str) -> None:
        if self.exit_hooks.installed:
            self.exit_hooks.arm(message)


class _Observer:
    """A :class:`~pyg_sar.distributed.transport.WaitObserver` reporting to a supervisor."""

    def __init__(self, supervisor: Supervisor) -> None:
        self.supervisor = supervisor

    def begin(self, operation: str) -> None:
        self.supervisor.tracker.begin(operation)

    def poll(self) -> None:
        self.supervisor.check_peers()  # a failed peer ends the wait at once

    def end(self) -> None:
        self.supervisor.tracker.end()

    def failed(self, error: CommError) -> Optional[BaseException]:
        # A dead peer breaks gloo's connections: the hub names it soon after.
        return self.supervisor.diagnose(error)


class SupervisedCommunicator(Communicator):
    """``inner`` with failure supervision (see the module docstring); made by
    :func:`supervise`. Every operation is ``inner``'s; :meth:`close` ends supervision first.

    Attributes:
        inner: the transport's communicator.
        supervisor: the :class:`Supervisor` it owns.
    """

    def __init__(self, inner: Communicator, supervisor: Supervisor) -> None:
        # No Communicator.__init__: rank, counters and observer are the inner communicator's.
        self.inner = inner
        self.supervisor = supervisor
        inner.observer = _Observer(supervisor)

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
        """End supervision (a goodbye to the others, unless a failure is known), then close
        the inner communicator. Idempotent."""
        self.supervisor.close()
        self.inner.observer = None
        self.inner.close()


def supervise(comm: Communicator, hub_address: str,
              timeout: Optional[float] = None) -> SupervisedCommunicator:
    """Start failure supervision over ``comm`` (collective: every rank calls it) and return the
    supervised communicator.

    Args:
        comm: the transport's communicator.
        hub_address: the address by which the other ranks reach rank 0's hub (see
            :func:`pyg_sar.distributed.address.choose_address`).
        timeout: deadline of the set-up (default: the communicator's).

    Intervals from ``PYG_SAR_HEARTBEAT_S`` (2), ``PYG_SAR_DEAD_AFTER_S`` (45) and
    ``PYG_SAR_FAILURE_GRACE_S`` (10); ``PYG_SAR_WITNESS=0/1`` turns the witness off or on.
    """
    if isinstance(comm, SupervisedCommunicator):
        raise ValueError("supervise: the communicator is already supervised")
    supervisor = Supervisor(
        comm.rank, comm.world_size,
        heartbeat=_env_seconds("PYG_SAR_HEARTBEAT_S", _hub.HEARTBEAT_S),
        dead_after=_env_seconds("PYG_SAR_DEAD_AFTER_S", _hub.DEAD_AFTER_S),
        grace=_env_seconds("PYG_SAR_FAILURE_GRACE_S", GRACE_S))
    supervisor.start(comm, hub_address, comm.timeout if timeout is None else float(timeout))
    return SupervisedCommunicator(comm, supervisor)
