r"""The point-to-point streaming step of SAR.

At step :math:`k = 1, \dots, P - 1` rank :math:`r` sends its rows meant for rank
:math:`(r - k) \bmod P` and receives the rows rank :math:`(r + k) \bmod P` holds for it. Every
pair of ranks exchanges exactly one message per sweep, with isend/irecv only: no global
collective, no dummy tensors. With ``depth = d`` the exchange of step ``k + d`` is in flight
while the caller computes on step ``k``.
"""
from __future__ import annotations

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
