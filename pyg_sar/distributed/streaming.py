r"""The point-to-point streaming step of SAR (DESIGN section 6).

At step :math:`k = 1, \dots, P - 1` rank :math:`r` sends its rows meant for rank
:math:`(r - k) \bmod P` and receives the rows rank :math:`(r + k) \bmod P` holds for it. Every
pair of ranks exchanges exactly one message per sweep, with isend/irecv only: no global
collective, no dummy tensors. With ``depth = d`` the exchange of step ``k + d`` is in flight
while the caller computes on step ``k``.
"""
from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterator
from typing import Optional

from torch import Tensor

from pyg_sar.distributed.transport.base import Communicator, Work


def ring_peers(rank: int, world_size: int, step: int) -> tuple[int, int]:
    """``(send_to, recv_from)`` of ``rank`` at ``step``: ``(rank - step) % P`` and
    ``(rank + step) % P``."""
    if world_size < 1 or not 0 <= rank < world_size:
        raise ValueError(f"ring_peers: rank must be in [0, {world_size}) (got {rank})")
    return (rank - step) % world_size, (rank + step) % world_size


class PendingExchange:
    """One step's send and receive in flight; :meth:`wait` returns the received tensor."""

    def __init__(self, send_work: Optional[Work], recv_work: Optional[Work],
                 recv: Optional[Tensor], send_to: int, recv_from: int) -> None:
        self._send_work = send_work
        self._recv_work = recv_work
        self._recv = recv
        self.send_to = send_to
        self.recv_from = recv_from

    def wait(self, timeout: Optional[float] = None) -> Optional[Tensor]:
        """Finish both halves (the send too, so its buffer may be reused); returns the
        received tensor, or ``None`` when nothing was to be received."""
        if self._recv_work is not None:
            self._recv_work.wait(timeout)
            self._recv_work = None
        if self._send_work is not None:
            self._send_work.wait(timeout)
            self._send_work = None
        return self._recv

    def is_completed(self) -> bool:
        return all(w is None or w.is_completed() for w in (self._send_work, self._recv_work))


def start_exchange(comm: Communicator, send: Optional[Tensor], send_to: int,
                   recv: Optional[Tensor], recv_from: int, tag: int = 0) -> PendingExchange:
    """Post the receive into ``recv`` from ``recv_from`` and the send of ``send`` to
    ``send_to`` (either may be ``None``: that half is skipped, and its peer must skip the
    matching half too). ``recv`` must have the exact size of the incoming message."""
    recv_work = comm.irecv(recv, recv_from, tag) if recv is not None else None
    send_work = comm.isend(send, send_to, tag) if send is not None else None
    return PendingExchange(send_work, recv_work, recv, send_to, recv_from)


def stream(comm: Communicator, send_rows_for: Callable[[int], Optional[Tensor]],
           recv_buffer_for: Callable[[int], Optional[Tensor]], depth: int = 1,
           tag: int = 0) -> Iterator[tuple[int, int, Optional[Tensor]]]:
    """Run the schedule for steps ``1 .. P - 1``, yielding ``(step, src_rank, received)``.

    Args:
        comm: the communicator.
        send_rows_for: ``dst -> tensor`` of this rank's rows for rank ``dst`` (or ``None``).
        recv_buffer_for: ``src -> tensor`` to receive rank ``src``'s rows into (or ``None``).
        depth: exchanges started ahead of the step being consumed (0: fetch, then compute).
        tag: message tag of this sweep.

    Closing the generator early waits for the exchanges already started, so no message is
    left to be matched by a later sweep.
    """
    if not isinstance(depth, int) or depth < 0:
        raise ValueError(f"stream: depth must be an integer >= 0 (got {depth!r})")
    world_size, rank = comm.world_size, comm.rank
    pending: deque[tuple[int, PendingExchange]] = deque()
    next_step = 1
    try:
        for step in range(1, world_size):
            while next_step < world_size and next_step <= step + depth:
                send_to, recv_from = ring_peers(rank, world_size, next_step)
                pending.append((next_step, start_exchange(
                    comm, send_rows_for(send_to), send_to, recv_buffer_for(recv_from),
                    recv_from, tag)))
                next_step += 1
            _, exchange = pending.popleft()
            received = exchange.wait()
            yield step, exchange.recv_from, received
    except GeneratorExit:
        for _, exchange in pending:
            exchange.wait()
        raise
