r"""The :class:`Communicator` interface every backend implements, and what they share.

A communicator knows ranks and tensors, never graphs. Data movement (point-to-point,
broadcast, all-to-all) sends raw bytes (an ``uint8`` view of a contiguous tensor), so every
dtype works on every backend, including ``bfloat16`` and ``bool`` that MPI has no type for.
Reductions run in a dtype the backend can reduce (``float16``/``bfloat16`` in ``float32``;
``bool`` as ``uint8`` max/min).

Every blocking wait has a deadline (the communicator's ``timeout`` unless given). Its end is
typed: :class:`CommTimeout` past the deadline, :class:`CommError` when the backend fails (a
peer's connection broke); both name this rank, the peer and the operation. A
:class:`WaitObserver` (``Communicator.observer``) may watch every wait and end it early; the
transport knows nothing more of it (failure supervision plugs in there, see
:mod:`pyg_sar.distributed.supervision`).
"""
from __future__ import annotations

import json
import math
from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import Any, Optional, Protocol

import torch
from torch import Tensor

from pyg_sar.distributed.traffic import TrafficLedger

REDUCE_OPS = ("sum", "prod", "max", "min")

# Reductions of bool tensors: "sum" is logical or, "prod" logical and (as NCCL does).
_BOOL_OPS = {"sum": "max", "max": "max", "prod": "min", "min": "min"}
_UPCAST = {torch.float16: torch.float32, torch.bfloat16: torch.float32}


class CommError(RuntimeError):
    """A communication operation failed (the backend raised, or a peer went away).

    Attributes:
        rank: this rank.
        operation: what was waited for, e.g. ``"irecv from rank 2 (tag 7)"``.
    """

    def __init__(self, message: str, rank: int = -1, operation: str = "") -> None:
        super().__init__(message)
        self.rank, self.operation = rank, operation


class CommTimeout(CommError):
    """A wait passed its deadline (attribute ``seconds``); the peer may be alive but late."""

    def __init__(self, message: str, rank: int = -1, operation: str = "",
                 seconds: float = 0.0) -> None:
        super().__init__(message, rank, operation)
        self.seconds = seconds


class WaitObserver(Protocol):
    """Watches a communicator's waits (``Communicator.observer``)."""

    def begin(self, operation: str) -> None:
        """A wait for ``operation`` starts."""

    def poll(self) -> None:
        """Called between polls of a wait; raising ends the wait with that exception (the
        transport abandons the request first)."""

    def end(self) -> None:
        """The wait finished normally."""

    def failed(self, error: CommError) -> Optional[BaseException]:
        """The wait failed with ``error``; may return a more telling exception to raise."""


def describe(op: str, peer: Optional[int] = None, tag: Optional[int] = None) -> str:
    """``"irecv from rank 2 (tag 7)"``: an operation as errors and observers name it."""
    where = op
    if peer is not None:
        where += f" {'to' if op == 'isend' else 'from'} rank {peer}"
    if tag is not None:
        where += f" (tag {tag})"
    return where


def timeout_error(rank: int, seconds: float, op: str, peer: Optional[int] = None,
                  tag: Optional[int] = None, detail: str = "") -> CommTimeout:
    """The error raised when a wait passes its deadline (names rank, peer and operation)."""
    where = describe(op, peer, tag)
    msg = f"pyg_sar: rank {rank} timed out after {seconds:.1f} s in {where}"
    return CommTimeout(msg + (f": {detail}" if detail else ""), rank, where, seconds)


def byte_view(t: Tensor) -> Tensor:
    """Flat ``uint8`` view of a contiguous tensor (shares its storage)."""
    return t.reshape(-1).view(torch.uint8)


def row_bytes(t: Tensor) -> int:
    return math.prod(t.shape[1:]) * t.element_size()


def check_reduce(op: str) -> None:
    if op not in REDUCE_OPS:
        raise ValueError(f"pyg_sar: reduce op must be one of {REDUCE_OPS} (got {op!r})")


def reducible(t: Tensor, op: str) -> tuple[Tensor, str]:
    """A contiguous tensor in a dtype every backend reduces, and the op to apply to it."""
    if t.dtype == torch.bool:
        return t.contiguous().view(torch.uint8), _BOOL_OPS[op]
    if t.dtype in _UPCAST:
        return t.to(_UPCAST[t.dtype]).contiguous(), op
    return t.contiguous(), op


def check_splits(name: str, sizes: Optional[Sequence[int]], rows: int,
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


def check_all_to_all(output: Tensor, input: Tensor) -> None:
    if output.dtype != input.dtype or output.shape[1:] != input.shape[1:]:
        raise ValueError(f"all_to_all_single: output and input must have the same dtype and "
                         f"row shape (got {output.dtype} {tuple(output.shape)} and "
                         f"{input.dtype} {tuple(input.shape)})")
    if output.dim() == 0:
        raise ValueError("all_to_all_single: tensors must have at least one dimension")


def all_to_all_layout(output: Tensor, input: Tensor,
                      output_split_sizes: Optional[Sequence[int]],
                      input_split_sizes: Optional[Sequence[int]],
                      world_size: int) -> tuple[list[int], list[int], int]:
    """Checked ``(send rows per rank, recv rows per rank, bytes per row)`` of an all-to-all."""
    check_all_to_all(output, input)
    send_rows = check_splits("input", input_split_sizes, input.shape[0], world_size)
    recv_rows = check_splits("output", output_split_sizes, output.shape[0], world_size)
    return send_rows, recv_rows, row_bytes(input)


def encode(obj: Any) -> bytes:
    try:
        return json.dumps(obj).encode()
    except TypeError as e:
        raise ValueError(f"allgather_object: object must be JSON-serialisable ({e})") from None


class Work(ABC):
    """Handle of a non-blocking operation."""

    @abstractmethod
    def wait(self, timeout: Optional[float] = None) -> Optional[Tensor]:
        """Block until done (at most ``timeout`` seconds, the communicator's by default);
        returns the tensor the operation wrote (``irecv``) or read (``isend``).

        Raises:
            CommTimeout: past the deadline.
            CommError: the backend failed.
        """

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
        observer: a :class:`WaitObserver` of every wait, or ``None``.
        stats / traffic: byte counters the engine fills (:class:`CommStats`,
            :class:`~pyg_sar.distributed.traffic.TrafficLedger`).
    """

    backend: str = ""
    progresses_in_background: bool = True

    def __init__(self, rank: int, world_size: int, timeout: float) -> None:
        self.rank = rank
        self.world_size = world_size
        self.timeout = float(timeout)
        self.observer: Optional[WaitObserver] = None
        self.stats = CommStats()
        self.traffic = TrafficLedger()

    def _check_peer(self, peer: int, op: str) -> None:
        if not isinstance(peer, int) or not 0 <= peer < self.world_size:
            raise ValueError(f"pyg_sar: {op} peer must be a rank in [0, {self.world_size}) "
                             f"(got {peer!r})")

    def _deadline(self, timeout: Optional[float]) -> float:
        return self.timeout if timeout is None else float(timeout)

    # The observer's four calls, for the backends' wait loops (no-ops without an observer).
    def _begin(self, where: str) -> None:
        if self.observer is not None:
            self.observer.begin(where)

    def _poll(self) -> None:
        if self.observer is not None:
            self.observer.poll()

    def _end(self) -> None:
        if self.observer is not None:
            self.observer.end()

    def _failed(self, error: CommError) -> BaseException:
        better = self.observer.failed(error) if self.observer is not None else None
        return better if better is not None else error

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
