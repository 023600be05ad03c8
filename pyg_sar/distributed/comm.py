r"""Communication on tensors behind one interface: MPI (mpi4py), torch.distributed, or local.

A :class:`Communicator` knows ranks and tensors, never graphs. Data movement (point-to-point,
broadcast, all-to-all) sends raw bytes (an ``uint8`` view of a contiguous tensor), so every dtype
works on every backend, including ``bfloat16`` and ``bool`` that MPI has no type for. Reductions
run in a dtype the backend can reduce (``float16``/``bfloat16`` in ``float32``; ``bool`` as
``uint8`` max/min).

Every blocking wait has a deadline (the communicator's ``timeout`` unless given); a peer that
never answers becomes a :class:`RuntimeError` naming this rank, the peer and the operation.
"""
from __future__ import annotations

import json
import math
import os
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from datetime import timedelta
from typing import Any, Optional

import torch
from torch import Tensor

from pyg_sar.distributed import watchdog
from pyg_sar.distributed.traffic import TrafficLedger

REDUCE_OPS = ("sum", "prod", "max", "min")

# Reductions of bool tensors: "sum" is logical or, "prod" logical and (as NCCL does).
_BOOL_OPS = {"sum": "max", "max": "max", "prod": "min", "min": "min"}
_UPCAST = {torch.float16: torch.float32, torch.bfloat16: torch.float32}


def _describe(op: str, peer: Optional[int], tag: Optional[int]) -> str:
    where = op
    if peer is not None:
        where += f" {'to' if op == 'isend' else 'from'} rank {peer}"
    if tag is not None:
        where += f" (tag {tag})"
    return where


def timeout_error(rank: int, seconds: float, op: str, peer: Optional[int] = None,
                  tag: Optional[int] = None, detail: str = "") -> RuntimeError:
    """The error raised when a wait passes its deadline (names rank, peer and operation)."""
    msg = f"pyg_sar: rank {rank} timed out after {seconds:.1f} s in {_describe(op, peer, tag)}"
    return RuntimeError(msg + (f": {detail}" if detail else ""))


def _byte_view(t: Tensor) -> Tensor:
    """Flat ``uint8`` view of a contiguous tensor (shares its storage)."""
    return t.reshape(-1).view(torch.uint8)


def _row_bytes(t: Tensor) -> int:
    return math.prod(t.shape[1:]) * t.element_size()


def _check_reduce(op: str) -> None:
    if op not in REDUCE_OPS:
        raise ValueError(f"pyg_sar: reduce op must be one of {REDUCE_OPS} (got {op!r})")


def _reducible(t: Tensor, op: str) -> tuple[Tensor, str]:
    """A contiguous tensor in a dtype every backend reduces, and the op to apply to it."""
    if t.dtype == torch.bool:
        return t.contiguous().view(torch.uint8), _BOOL_OPS[op]
    if t.dtype in _UPCAST:
        return t.to(_UPCAST[t.dtype]).contiguous(), op
    return t.contiguous(), op


def _check_splits(name: str, sizes: Optional[Sequence[int]], rows: int,
                  world_size: int) -> list[int]:
    if sizes is None:
        if rows % world_size:
            raise ValueError(f"all_to_all_single: {name} has {rows} rows, not divisible by "
                             f"world size {world_size}; pass {name}_split_sizes")
        return [rows // world_size] * world_size
    sizes = [int(s) for s in sizes]
    if len(sizes) != world_size or any(s < 0 for s in sizes) or sum(sizes) != rows:
        raise ValueError(f"all_to_all_single: {name}_split_sizes must be {world_size} "
                         f"non-negative sizes summing to {rows} rows (got {sizes})")
    return sizes


def _check_all_to_all(output: Tensor, input: Tensor) -> None:
    if output.dtype != input.dtype or output.shape[1:] != input.shape[1:]:
        raise ValueError(f"all_to_all_single: output and input must have the same dtype and "
                         f"row shape (got {output.dtype} {tuple(output.shape)} and "
                         f"{input.dtype} {tuple(input.shape)})")
    if output.dim() == 0:
        raise ValueError("all_to_all_single: tensors must have at least one dimension")


def _all_to_all_layout(output: Tensor, input: Tensor,
                       output_split_sizes: Optional[Sequence[int]],
                       input_split_sizes: Optional[Sequence[int]],
                       world_size: int) -> tuple[list[int], list[int], int]:
    """Checked ``(send rows per rank, recv rows per rank, bytes per row)`` of an all-to-all."""
    _check_all_to_all(output, input)
    send_rows = _check_splits("input", input_split_sizes, input.shape[0], world_size)
    recv_rows = _check_splits("output", output_split_sizes, output.shape[0], world_size)
    return send_rows, recv_rows, _row_bytes(input)


def _encode(obj: Any) -> bytes:
    try:
        return json.dumps(obj).encode()
    except TypeError as e:
        raise ValueError(f"allgather_object: object must be JSON-serialisable ({e})") from None


class Work(ABC):
    """Handle of a non-blocking operation."""

    @abstractmethod
    def wait(self, timeout: Optional[float] = None) -> Optional[Tensor]:
        """Block until done (at most ``timeout`` seconds, the communicator's by default);
        returns the tensor the operation wrote (``irecv``) or read (``isend``)."""

    @abstractmethod
    def is_completed(self) -> bool:
        """Whether the operation has finished (never blocks)."""


class CommStats:
    """Traffic counters of a communicator (filled by the engine's exchanges; reset per epoch).

    Attributes:
        bytes_sent / bytes_recv: payload bytes of the engine's row and gradient messages.
        messages: number of messages sent.
        wait_s: seconds spent blocked waiting for exchanges to finish.
    """

    __slots__ = ("bytes_sent", "bytes_recv", "messages", "wait_s")

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        self.bytes_sent, self.bytes_recv, self.messages, self.wait_s = 0, 0, 0, 0.0

    def as_dict(self) -> dict:
        return {k: getattr(self, k) for k in self.__slots__}


class Communicator(ABC):
    """Tensor communication among ``world_size`` ranks.

    Attributes:
        rank: this process's rank in the communicator.
        world_size: number of ranks.
        timeout: default deadline (seconds) of every blocking wait.
        backend: ``"mpi"``, ``"gloo"``, ``"nccl"`` or ``"local"``.
        progresses_in_background: whether posted sends and receives move data while this
            process computes. Where they only move inside a wait (MPICH without an async
            progress thread), posting early buys no overlap and only holds buffers, so the
            engine fetches just in time (see :func:`pyg_sar.core.exchange.pipeline_depth`).
    """

    backend: str = ""
    progresses_in_background: bool = True

    def __init__(self, rank: int, world_size: int, timeout: float) -> None:
        self.rank = rank
        self.world_size = world_size
        self.timeout = float(timeout)
        self.stats = CommStats()  # traffic counters, see CommStats
        self.traffic = TrafficLedger()  # the same traffic by layer and direction

    def _check_peer(self, peer: int, op: str) -> None:
        if not isinstance(peer, int) or not 0 <= peer < self.world_size:
            raise ValueError(f"pyg_sar: {op} peer must be a rank in [0, {self.world_size}) "
                             f"(got {peer!r})")

    def _deadline(self, timeout: Optional[float]) -> float:
        return self.timeout if timeout is None else float(timeout)

    @abstractmethod
    def isend(self, tensor: Tensor, dst: int, tag: int = 0) -> Work:
        """Start sending ``tensor`` to rank ``dst``."""

    @abstractmethod
    def irecv(self, tensor: Tensor, src: int, tag: int = 0) -> Work:
        """Start receiving into ``tensor`` (its size must match the message) from ``src``."""

    @abstractmethod
    def all_reduce(self, tensor: Tensor, op: str = "sum", *,
                   timeout: Optional[float] = None) -> Tensor:
        """Reduce ``tensor`` over all ranks, in place; returns it."""

    @abstractmethod
    def broadcast(self, tensor: Tensor, src: int = 0, *,
                  timeout: Optional[float] = None) -> Tensor:
        """Copy rank ``src``'s ``tensor`` into every rank's ``tensor``, in place; returns it."""

    @abstractmethod
    def all_to_all_single(self, output: Tensor, input: Tensor,
                          output_split_sizes: Optional[Sequence[int]] = None,
                          input_split_sizes: Optional[Sequence[int]] = None, *,
                          timeout: Optional[float] = None) -> Tensor:
        """Rows ``input[splits[q]]`` go to rank ``q``; rows from rank ``q`` land in
        ``output[out_splits[q]]`` (split sizes count rows, i.e. the first dimension)."""

    @abstractmethod
    def allgather_object(self, obj: Any, *, timeout: Optional[float] = None) -> list:
        """Gather one small JSON-serialisable object from every rank, in rank order."""

    @abstractmethod
    def barrier(self, *, timeout: Optional[float] = None) -> None:
        """Wait until every rank has reached the barrier."""

    def close(self) -> None:
        """Release the communicator's resources (idempotent)."""
        return None


# ----------------------------------------------------------------------------------- local
class _DoneWork(Work):
    def __init__(self, tensor: Optional[Tensor], finish: Optional[Callable[[], None]] = None):
        self._tensor = tensor
        self._finish = finish

    def wait(self, timeout: Optional[float] = None) -> Optional[Tensor]:
        if self._finish is not None:
            finish, self._finish = self._finish, None
            finish()
        return self._tensor

    def is_completed(self) -> bool:
        return True


class LocalCommunicator(Communicator):
    """World size 1: collectives are identities; messages to self are matched by tag."""

    backend = "local"

    def __init__(self, timeout: float = 120.0) -> None:
        super().__init__(0, 1, timeout)
        self._mailbox: dict[int, list[Tensor]] = {}

    def isend(self, tensor: Tensor, dst: int, tag: int = 0) -> Work:
        self._check_peer(dst, "isend")
        self._mailbox.setdefault(tag, []).append(tensor.detach().clone())
        return _DoneWork(tensor)

    def irecv(self, tensor: Tensor, src: int, tag: int = 0) -> Work:
        self._check_peer(src, "irecv")

        def finish() -> None:
            queue = self._mailbox.get(tag)
            if not queue:
                raise timeout_error(0, 0.0, "irecv", 0, tag, "no message was sent to self")
            msg = queue.pop(0)
            if msg.shape != tensor.shape or msg.dtype != tensor.dtype:
                raise RuntimeError(f"pyg_sar: rank 0 irecv (tag {tag}) expected "
                                   f"{tensor.dtype} {tuple(tensor.shape)}, got {msg.dtype} "
                                   f"{tuple(msg.shape)}")
            tensor.copy_(msg)

        return _DoneWork(tensor, finish)

    def all_reduce(self, tensor, op="sum", *, timeout=None):
        _check_reduce(op)
        return tensor

    def broadcast(self, tensor, src=0, *, timeout=None):
        self._check_peer(src, "broadcast")
        return tensor

    def all_to_all_single(self, output, input, output_split_sizes=None, input_split_sizes=None,
                          *, timeout=None):
        _check_all_to_all(output, input)
        _check_splits("input", input_split_sizes, input.shape[0], 1)
        _check_splits("output", output_split_sizes, output.shape[0], 1)
        if output.shape != input.shape:
            raise ValueError(f"all_to_all_single: output shape {tuple(output.shape)} must equal "
                             f"input shape {tuple(input.shape)} on one rank")
        output.copy_(input)
        return output

    def allgather_object(self, obj, *, timeout=None):
        return [json.loads(_encode(obj))]

    def barrier(self, *, timeout=None):
        return None


# ------------------------------------------------------------------------------------- MPI
class _MPIWork(Work):
    """Polls an MPI request with a short backoff sleep until done or past the deadline."""

    def __init__(self, comm: MPICommunicator, request, op: str, peer: Optional[int],
                 tag: Optional[int], result: Optional[Tensor], keep: tuple = (),
                 expect_bytes: Optional[int] = None,
                 finish: Optional[Callable[[], None]] = None) -> None:
        self._comm = comm
        self._request = request
        self._op, self._peer, self._tag = op, peer, tag
        self._result = result
        self._keep = keep  # buffers that must outlive the request
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
                    f"pyg_sar: rank {self._comm.rank} {_describe(self._op, self._peer, self._tag)}"
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
        seconds = self._comm._deadline(timeout)
        deadline = time.monotonic() + seconds
        status = MPI.Status()
        delay = 0.0
        watchdog.set_operation(_describe(self._op, self._peer, self._tag))
        while not self._request.Test(status):
            if time.monotonic() >= deadline:
                self._abandon()
                raise timeout_error(self._comm.rank, seconds, self._op, self._peer, self._tag)
            try:
                watchdog.check_peers()  # a failed peer ends the wait at once
            except watchdog.PeerFailure:
                self._abandon()
                raise
            # Back off from a few microseconds to 1 ms: latency stays low for quick answers
            # without spinning a core that other ranks on this host need.
            time.sleep(delay)
            delay = min(max(delay * 2, 1e-5), 1e-3)
        watchdog.done_operation()
        self._complete(status)
        return self._result

    def _abandon(self) -> None:
        if self._op == "irecv":  # cancelling a receive is well-defined in MPI
            try:
                self._request.Cancel()
                self._request.Test()
            except Exception:  # noqa: BLE001 - best effort; the timeout error is what matters
                pass


class MPICommunicator(Communicator):
    """mpi4py on tensors through zero-copy NumPy views (CUDA tensors are staged via the host).

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

    @staticmethod
    def _host(t: Tensor) -> Tensor:
        """A contiguous CPU tensor with the data of ``t`` (``t`` itself when possible)."""
        return t.detach().to("cpu").contiguous()

    @staticmethod
    def _recv_buffer(t: Tensor) -> tuple[Tensor, Optional[Callable[[], None]]]:
        """Where to receive data meant for ``t``, and how to copy it into ``t`` afterwards."""
        if t.device.type == "cpu" and t.is_contiguous():
            return t.detach(), None
        buf = torch.empty(t.shape, dtype=t.dtype)
        return buf, lambda: t.detach().copy_(buf)

    def _run(self, request, op: str, timeout: Optional[float], keep: tuple = ()) -> None:
        _MPIWork(self, request, op, None, None, None, keep).wait(timeout)

    def isend(self, tensor: Tensor, dst: int, tag: int = 0) -> Work:
        from mpi4py import MPI
        self._check_peer(dst, "isend")
        buf = self._host(tensor)
        data = _byte_view(buf).numpy()
        request = self.mpi_comm.Isend([data, MPI.BYTE], dest=dst, tag=tag)
        return _MPIWork(self, request, "isend", dst, tag, tensor, keep=(buf, data))

    def irecv(self, tensor: Tensor, src: int, tag: int = 0) -> Work:
        from mpi4py import MPI
        self._check_peer(src, "irecv")
        buf, finish = self._recv_buffer(tensor)
        data = _byte_view(buf).numpy()
        request = self.mpi_comm.Irecv([data, MPI.BYTE], source=src, tag=tag)
        return _MPIWork(self, request, "irecv", src, tag, tensor, keep=(buf, data),
                        expect_bytes=data.nbytes, finish=finish)

    def all_reduce(self, tensor, op="sum", *, timeout=None):
        from mpi4py import MPI
        _check_reduce(op)
        work, work_op = _reducible(tensor, op)
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
        request = self.mpi_comm.Ibcast([_byte_view(buf).numpy(), MPI.BYTE], root=src)
        self._run(request, "broadcast", timeout, keep=(buf,))
        if finish is not None and self.rank != src:
            finish()
        return tensor

    def all_to_all_single(self, output, input, output_split_sizes=None, input_split_sizes=None,
                          *, timeout=None):
        from mpi4py import MPI
        send_rows, recv_rows, row = _all_to_all_layout(output, input, output_split_sizes,
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
            [_byte_view(send).numpy(), layout(send_rows), MPI.BYTE],
            [_byte_view(recv).numpy(), layout(recv_rows), MPI.BYTE])
        self._run(request, "all_to_all_single", timeout, keep=(send, recv))
        if finish is not None:
            finish()
        return output

    def allgather_object(self, obj, *, timeout=None):
        import numpy as np
        from mpi4py import MPI
        data = np.frombuffer(_encode(obj), dtype=np.uint8)
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


# --------------------------------------------------------------------------- torch.distributed
class _TorchWork(Work):
    def __init__(self, comm: TorchCommunicator, work, op: str, peer: Optional[int],
                 tag: Optional[int], result: Optional[Tensor], keep: tuple = (),
                 finish: Optional[Callable[[], None]] = None) -> None:
        self._comm = comm
        self._work = work
        self._op, self._peer, self._tag = op, peer, tag
        self._result = result
        self._keep = keep
        self._finish = finish
        self._done = False

    def is_completed(self) -> bool:
        if not self._done and self._work.is_completed():
            self.wait()
        return self._done

    def wait(self, timeout: Optional[float] = None) -> Optional[Tensor]:
        if self._done:
            return self._result
        seconds = self._comm._deadline(timeout)
        start = time.monotonic()
        where = _describe(self._op, self._peer, self._tag)
        watchdog.set_operation(where)
        try:
            # Collectives: poll rather than block, so that a failed peer ends the wait at
            # once. gloo's point-to-point work completes only inside wait(): block there (a
            # dead peer breaks the connection, and the watchdog's grace timer is the backstop).
            delay = 0.0
            while self._op not in ("isend", "irecv") and not self._work.is_completed() and \
                    time.monotonic() - start < seconds:
                watchdog.check_peers()
                time.sleep(delay)
                delay = min(max(delay * 2, 1e-5), 1e-3)
            self._work.wait(timedelta(seconds=max(0.001, seconds - (time.monotonic() - start))))
        except watchdog.PeerFailure:
            raise
        except Exception as e:  # noqa: BLE001 - re-raised with rank, peer and operation
            diagnosis = watchdog.wait_for_diagnosis()  # a dead peer breaks gloo's connections
            if diagnosis is not None:
                raise watchdog.PeerFailure(diagnosis) from e
            if time.monotonic() - start >= 0.9 * seconds or "imed out" in str(e):
                raise timeout_error(self._comm.rank, seconds, self._op, self._peer, self._tag,
                                    str(e).splitlines()[0] if str(e) else "") from e
            raise RuntimeError(f"pyg_sar: rank {self._comm.rank} failed in {where}: {e}") from e
        watchdog.done_operation()
        self._done = True
        if self._finish is not None:
            self._finish()
        self._keep = ()
        return self._result


class TorchCommunicator(Communicator):
    """torch.distributed (gloo or nccl) on a dedicated process group.

    Args:
        group: the process group SAR traffic uses (e.g. from ``dist.new_group()``); destroyed
            by :meth:`close` when ``owns_group``.
        timeout: default deadline of blocking waits, in seconds.
        device: where helper tensors live (``cuda`` for nccl).
    """

    def __init__(self, group, timeout: float = 120.0, device: torch.device | str = "cpu",
                 owns_group: bool = True) -> None:
        import torch.distributed as dist
        super().__init__(dist.get_rank(group), dist.get_world_size(group), timeout)
        self.group = group
        self.backend = str(dist.get_backend(group))
        self.device = torch.device(device)
        self._owns_group = owns_group

    def _staged(self, t: Tensor) -> tuple[Tensor, Optional[Callable[[], None]]]:
        if t.is_contiguous():
            return t.detach(), None
        buf = t.detach().contiguous()
        return buf, lambda: t.detach().copy_(buf)

    def _run(self, work, op: str, timeout: Optional[float], keep: tuple = ()) -> None:
        _TorchWork(self, work, op, None, None, None, keep).wait(timeout)

    def isend(self, tensor: Tensor, dst: int, tag: int = 0) -> Work:
        import torch.distributed as dist
        self._check_peer(dst, "isend")
        buf = tensor.detach().contiguous()
        work = dist.isend(_byte_view(buf), group=self.group, tag=tag, group_dst=dst)
        return _TorchWork(self, work, "isend", dst, tag, tensor, keep=(buf,))

    def irecv(self, tensor: Tensor, src: int, tag: int = 0) -> Work:
        import torch.distributed as dist
        self._check_peer(src, "irecv")
        buf, finish = self._staged(tensor)
        work = dist.irecv(_byte_view(buf), group=self.group, tag=tag, group_src=src)
        return _TorchWork(self, work, "irecv", src, tag, tensor, keep=(buf,), finish=finish)

    def all_reduce(self, tensor, op="sum", *, timeout=None):
        import torch.distributed as dist
        _check_reduce(op)
        buf, work_op = _reducible(tensor, op)
        reduce_op = {"sum": dist.ReduceOp.SUM, "prod": dist.ReduceOp.PRODUCT,
                     "max": dist.ReduceOp.MAX, "min": dist.ReduceOp.MIN}[work_op]
        self._run(dist.all_reduce(buf, op=reduce_op, group=self.group, async_op=True),
                  "all_reduce", timeout)
        if buf.data_ptr() != tensor.data_ptr():
            with torch.no_grad():
                tensor.copy_(buf.view(tensor.dtype) if tensor.dtype == torch.bool else buf)
        return tensor

    def broadcast(self, tensor, src=0, *, timeout=None):
        import torch.distributed as dist
        self._check_peer(src, "broadcast")
        buf, finish = self._staged(tensor)
        self._run(dist.broadcast(_byte_view(buf), group=self.group, group_src=src,
                                 async_op=True), "broadcast", timeout)
        if finish is not None and self.rank != src:
            finish()
        return tensor

    def all_to_all_single(self, output, input, output_split_sizes=None, input_split_sizes=None,
                          *, timeout=None):
        import torch.distributed as dist
        send_rows, recv_rows, row = _all_to_all_layout(output, input, output_split_sizes,
                                                       input_split_sizes, self.world_size)
        send = input.detach().contiguous()
        recv, finish = self._staged(output)
        if row == 0:  # rows without bytes (e.g. shape [n, 0]): nothing crosses
            return output
        # Rows as bytes: [rows, row_bytes] uint8 views, so any dtype crosses unchanged.
        work = dist.all_to_all_single(_byte_view(recv).view(-1, row),
                                      _byte_view(send).view(-1, row), recv_rows, send_rows,
                                      group=self.group, async_op=True)
        self._run(work, "all_to_all_single", timeout, keep=(send, recv))
        if finish is not None:
            finish()
        return output

    def allgather_object(self, obj, *, timeout=None):
        import torch.distributed as dist
        data = torch.frombuffer(bytearray(_encode(obj)), dtype=torch.uint8).to(self.device)
        size = torch.tensor([data.numel()], dtype=torch.int64, device=self.device)
        sizes = [torch.empty_like(size) for _ in range(self.world_size)]
        self._run(dist.all_gather(sizes, size, group=self.group, async_op=True),
                  "allgather_object", timeout)
        counts = [int(s) for s in sizes]
        longest = max(counts)
        padded = torch.zeros(longest, dtype=torch.uint8, device=self.device)
        padded[:data.numel()] = data
        gathered = [torch.empty_like(padded) for _ in range(self.world_size)]
        self._run(dist.all_gather(gathered, padded, group=self.group, async_op=True),
                  "allgather_object", timeout)
        return [json.loads(bytes(g[:c].cpu().tolist())) for g, c in zip(gathered, counts)]

    def barrier(self, *, timeout=None):
        import torch.distributed as dist
        # A tiny all-reduce rather than dist.barrier: it takes a timeout on every backend.
        token = torch.zeros(1, device=self.device)
        self._run(dist.all_reduce(token, group=self.group, async_op=True), "barrier", timeout)

    def close(self) -> None:
        import torch.distributed as dist
        if self.group is not None and self._owns_group and dist.is_initialized():
            dist.destroy_process_group(self.group)
        self.group = None
