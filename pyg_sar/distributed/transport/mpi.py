r"""The MPI backend: mpi4py on tensors through zero-copy NumPy views.

How a rank waits matters: MPICH (without its async progress thread) moves a large message only
inside MPI calls, a chunk per call through shared memory or the socket buffers over TCP. A wait
therefore polls ``MPI_Test`` back to back, yielding the core between polls
(``sched_yield``, as MPICH's own blocking calls spin), for up to :data:`SPIN_S` seconds plus
the time the request's bytes take at :data:`SPIN_RATE` (:func:`spin_budget`); a longer wait (a
peer that is still computing) polls every :data:`IDLE_POLL_S` seconds instead of spinning a
core that other ranks on the host may need. A wait that slept 1 ms between polls moved large
messages at a fraction of the rate (``benchmarks/comm_wait.py``); so did a 0.1 ms poll once a
large transfer outlasted a fixed one-second spin (a bulk's 400 MB feature all-to-all in
distributed sampling waited 20 s instead of 5 s).
"""
from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from typing import Optional

import torch
from torch import Tensor

from pyg_sar.distributed.transport.base import (
    CommError,
    Communicator,
    Work,
    all_to_all_layout,
    byte_view,
    check_reduce,
    describe,
    encode,
    reducible,
    timeout_error,
)
from pyg_sar.distributed.transport.staging import Staging, carrier_of

SPIN_S = 1.0  # poll back to back this long into a wait...
IDLE_POLL_S = 1e-4  # ...then every 0.1 ms
SPIN_RATE = 100e6  # bytes/s: a transfer is also spun for as long as it would take at this rate


def spin_budget(nbytes: int) -> float:
    """Seconds a wait on a request moving ``nbytes`` (sent + received) polls back to back."""
    return SPIN_S + max(nbytes, 0) / SPIN_RATE


def wait_request(comm: Communicator, request, status, seconds: float, where: str,
                 on_abandon: Optional[Callable[[], None]] = None,
                 spin_s: float = SPIN_S) -> None:
    """Poll ``request`` until done (see the module docstring); past ``seconds``
    :class:`~pyg_sar.distributed.transport.base.CommTimeout`. The communicator's observer
    sees the wait and may end it (``on_abandon`` runs first)."""
    start = time.monotonic()
    deadline = start + seconds
    comm._begin(where)
    yield_ = getattr(os, "sched_yield", None)
    while True:
        try:
            if request.Test(status):
                break
        except Exception as e:  # noqa: BLE001 - an MPI error: typed, with the operation
            raise comm._failed(CommError(f"pyg_sar: rank {comm.rank} failed in {where}: {e}",
                                         comm.rank, where)) from e
        now = time.monotonic()
        if now >= deadline:
            if on_abandon is not None:
                on_abandon()
            raise comm._failed(timeout_error(comm.rank, seconds, where))
        try:
            comm._poll()
        except BaseException:
            if on_abandon is not None:
                on_abandon()
            raise
        if now - start < spin_s and yield_ is not None:
            yield_()
        else:
            time.sleep(IDLE_POLL_S)
    comm._end()


class _MPIWork(Work):
    """A posted MPI request; :meth:`wait` polls it (see :func:`wait_request`)."""

    def __init__(self, comm: MPICommunicator, request, op: str, peer: Optional[int],
                 tag: Optional[int], result: Optional[Tensor], keep: tuple = (),
                 expect_bytes: Optional[int] = None,
                 finish: Optional[Callable[[], None]] = None) -> None:
        self._comm = comm
        self._request = request
        self._op, self._peer, self._tag = op, peer, tag
        self._result = result
        self._keep = keep  # buffers that must outlive the request
        self._spin_s = spin_budget(sum(t.numel() * t.element_size() for t in keep
                                       if isinstance(t, Tensor)))
        self._expect_bytes = expect_bytes
        self._finish = finish
        self._done = False

    def _complete(self, status) -> None:
        self._done = True
        if self._expect_bytes is not None:
            from mpi4py import MPI
            got = status.Get_count(MPI.BYTE)
            if got != self._expect_bytes:
                raise RuntimeError(
                    f"pyg_sar: rank {self._comm.rank} {describe(self._op, self._peer, self._tag)}"
                    f" received {got} bytes, expected {self._expect_bytes}")
        if self._finish is not None:
            self._finish()
        self._keep = ()

    def is_completed(self) -> bool:
        if not self._done:
            from mpi4py import MPI
            status = MPI.Status()
            if self._request.Test(status):
                self._complete(status)
        return self._done

    def wait(self, timeout: Optional[float] = None) -> Optional[Tensor]:
        if self._done:
            return self._result
        from mpi4py import MPI
        status = MPI.Status()
        where = describe(self._op, self._peer, self._tag)
        wait_request(self._comm, self._request, status, self._comm._deadline(timeout), where,
                     on_abandon=self._abandon, spin_s=self._spin_s)
        self._complete(status)
        return self._result

    def _abandon(self) -> None:
        if self._op == "irecv":  # cancelling a receive is well-defined in MPI
            try:
                self._request.Cancel()
                self._request.Test()
            except Exception:  # noqa: BLE001 - best effort; the error raised is what matters
                pass


class MPICommunicator(Communicator):
    """mpi4py on tensors through zero-copy NumPy views of host memory. A tensor on a GPU is
    staged through (page-locked) host memory, CUDA-aware MPI or not
    (:class:`~pyg_sar.distributed.transport.staging.Staging`, attribute ``staging``).

    Args:
        mpi_comm: an mpi4py communicator owned by this object (freed by :meth:`close`), e.g.
            ``MPI.COMM_WORLD.Dup()`` so that SAR traffic never interleaves with other traffic.
        timeout: default deadline of blocking waits, in seconds.
    """

    backend = "mpi"
    # MPICH moves rendezvous-size messages only inside MPI calls (unless its async progress
    # thread is on: MPIR_CVAR_ASYNC_PROGRESS=1).
    progresses_in_background = False

    def __init__(self, mpi_comm, timeout: float = 120.0) -> None:
        super().__init__(mpi_comm.Get_rank(), mpi_comm.Get_size(), timeout)
        if os.environ.get("MPIR_CVAR_ASYNC_PROGRESS", "0").strip() not in ("", "0"):
            self.progresses_in_background = True
        self.mpi_comm = mpi_comm
        self.staging = Staging(carrier_of("mpi"))

    @staticmethod
    def _mpi_type(dtype: torch.dtype):
        from mpi4py import MPI
        types = {torch.float32: MPI.FLOAT, torch.float64: MPI.DOUBLE, torch.int64: MPI.INT64_T,
                 torch.int32: MPI.INT32_T, torch.int16: MPI.INT16_T, torch.int8: MPI.INT8_T,
                 torch.uint8: MPI.UINT8_T, torch.complex64: MPI.C_FLOAT_COMPLEX,
                 torch.complex128: MPI.C_DOUBLE_COMPLEX}
        if dtype not in types:
            raise TypeError(f"pyg_sar: MPI cannot reduce tensors of dtype {dtype}")
        return types[dtype]

    def _host(self, t: Tensor) -> Tensor:
        """A contiguous host tensor with the data of ``t`` (``t`` itself when possible)."""
        return self.staging.outgoing(t)

    def _recv_buffer(self, t: Tensor) -> tuple[Tensor, Optional[Callable[[], None]]]:
        """Where to receive data meant for ``t``, and how to copy it into ``t`` afterwards."""
        return self.staging.incoming(t)

    def _run(self, request, op: str, timeout: Optional[float], keep: tuple = ()) -> None:
        _MPIWork(self, request, op, None, None, None, keep).wait(timeout)

    def isend(self, tensor: Tensor, dst: int, tag: int = 0) -> Work:
        from mpi4py import MPI
        self._check_peer(dst, "isend")
        buf = self._host(tensor)
        data = byte_view(buf).numpy()
        request = self.mpi_comm.Isend([data, MPI.BYTE], dest=dst, tag=tag)
        return _MPIWork(self, request, "isend", dst, tag, tensor, keep=(buf, data))

    def irecv(self, tensor: Tensor, src: int, tag: int = 0) -> Work:
        from mpi4py import MPI
        self._check_peer(src, "irecv")
        buf, finish = self._recv_buffer(tensor)
        data = byte_view(buf).numpy()
        request = self.mpi_comm.Irecv([data, MPI.BYTE], source=src, tag=tag)
        return _MPIWork(self, request, "irecv", src, tag, tensor, keep=(buf, data),
                        expect_bytes=data.nbytes, finish=finish)

    def all_reduce(self, tensor, op="sum", *, timeout=None):
        from mpi4py import MPI
        check_reduce(op)
        work, work_op = reducible(tensor, op)
        buf = self._host(work)
        mpi_op = {"sum": MPI.SUM, "prod": MPI.PROD, "max": MPI.MAX, "min": MPI.MIN}[work_op]
        request = self.mpi_comm.Iallreduce(MPI.IN_PLACE,
                                           [buf.reshape(-1).numpy(), self._mpi_type(buf.dtype)],
                                           mpi_op)
        self._run(request, "all_reduce", timeout, keep=(buf,))
        if buf.data_ptr() != tensor.data_ptr():
            with torch.no_grad():
                tensor.copy_(buf.view(tensor.dtype) if tensor.dtype == torch.bool else buf)
        return tensor

    def broadcast(self, tensor, src=0, *, timeout=None):
        from mpi4py import MPI
        self._check_peer(src, "broadcast")
        buf, finish = self._recv_buffer(tensor)
        if finish is not None and self.rank == src:
            buf.copy_(tensor.detach())
        request = self.mpi_comm.Ibcast([byte_view(buf).numpy(), MPI.BYTE], root=src)
        self._run(request, "broadcast", timeout, keep=(buf,))
        if finish is not None and self.rank != src:
            finish()
        return tensor

    def all_to_all_single(self, output, input, output_split_sizes=None, input_split_sizes=None,
                          *, timeout=None):
        from mpi4py import MPI
        send_rows, recv_rows, row = all_to_all_layout(output, input, output_split_sizes,
                                                      input_split_sizes, self.world_size)
        send = self._host(input)
        recv, finish = self._recv_buffer(output)

        def layout(rows: list[int]) -> tuple[list[int], list[int]]:
            counts = [r * row for r in rows]
            displs = [0] * len(counts)
            for i in range(1, len(counts)):
                displs[i] = displs[i - 1] + counts[i - 1]
            return counts, displs

        request = self.mpi_comm.Ialltoallv(
            [byte_view(send).numpy(), layout(send_rows), MPI.BYTE],
            [byte_view(recv).numpy(), layout(recv_rows), MPI.BYTE])
        self._run(request, "all_to_all_single", timeout, keep=(send, recv))
        if finish is not None:
            finish()
        return output

    def allgather_object(self, obj, *, timeout=None):
        import numpy as np
        from mpi4py import MPI
        data = np.frombuffer(encode(obj), dtype=np.uint8)
        sizes = np.zeros(self.world_size, dtype=np.int64)
        mine = np.array([data.size], dtype=np.int64)
        self._run(self.mpi_comm.Iallgather([mine, MPI.INT64_T], [sizes, MPI.INT64_T]),
                  "allgather_object", timeout, keep=(mine, sizes))
        counts = [int(s) for s in sizes]
        displs = [sum(counts[:i]) for i in range(len(counts))]
        out = np.zeros(sum(counts), dtype=np.uint8)
        request = self.mpi_comm.Iallgatherv([data, MPI.BYTE],
                                            [out, (counts, displs), MPI.BYTE])
        self._run(request, "allgather_object", timeout, keep=(data, out))
        return [json.loads(out[d:d + c].tobytes()) for c, d in zip(counts, displs)]

    def barrier(self, *, timeout=None):
        self._run(self.mpi_comm.Ibarrier(), "barrier", timeout)

    def close(self) -> None:
        from mpi4py import MPI
        if self.mpi_comm is not None and not MPI.Is_finalized():
            self.mpi_comm.Free()
        self.mpi_comm = None
