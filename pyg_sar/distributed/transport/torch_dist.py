"""What the gloo and NCCL backends share: torch.distributed on a dedicated process group."""
from __future__ import annotations

import json
import time
from collections.abc import Callable
from datetime import timedelta
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
from pyg_sar.distributed.transport.staging import Staging


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
        comm = self._comm
        seconds = comm._deadline(timeout)
        start = time.monotonic()
        where = describe(self._op, self._peer, self._tag)
        comm._begin(where)
        # Collectives progress in the backend's threads: poll, so that the observer may end
        # the wait. gloo's point-to-point work completes only inside wait(): block there.
        if self._op not in ("isend", "irecv"):
            delay = 0.0
            while not self._work.is_completed() and time.monotonic() - start < seconds:
                comm._poll()
                time.sleep(delay)
                delay = min(max(delay * 2, 1e-5), 1e-3)
        try:
            self._work.wait(timedelta(seconds=max(0.001, seconds - (time.monotonic() - start))))
        except Exception as e:  # noqa: BLE001 - re-raised typed, with rank, peer, operation
            # The backend's errors are untyped; the wait was given our deadline, so one that
            # ends near it is the deadline passing (a dead peer breaks the connection sooner).
            first = str(e).splitlines()[0] if str(e) else type(e).__name__
            if time.monotonic() - start >= 0.9 * seconds:
                error: CommError = timeout_error(comm.rank, seconds, where, detail=first)
            else:
                error = CommError(f"pyg_sar: rank {comm.rank} failed in {where}: {first}",
                                  comm.rank, where)
            raise comm._failed(error) from e
        comm._end()
        self._done = True
        if self._finish is not None:
            self._finish()
        self._keep = ()
        return self._result


class TorchCommunicator(Communicator):
    """torch.distributed (gloo or nccl) on a dedicated process group.

    The backend sees tensors on ``device`` only (host memory for gloo, this rank's GPU for
    nccl); a tensor elsewhere is staged there and back
    (:class:`~pyg_sar.distributed.transport.staging.Staging`, attribute ``staging``).

    Args:
        group: the process group SAR traffic uses (e.g. from ``dist.new_group()``); destroyed
            by :meth:`close` when ``owns_group``.
        timeout: default deadline of blocking waits, in seconds.
        device: the memory the backend carries, where helper tensors live (``cpu`` for gloo,
            ``cuda:<i>`` for nccl).
    """

    def __init__(self, group, timeout: float = 120.0, device: torch.device | str = "cpu",
                 owns_group: bool = True) -> None:
        import torch.distributed as dist
        super().__init__(dist.get_rank(group), dist.get_world_size(group), timeout)
        self.group = group
        self.backend = str(dist.get_backend(group))
        self.device = torch.device(device)
        self._owns_group = owns_group
        self.staging = Staging(self.device)

    def _run(self, work, op: str, timeout: Optional[float], keep: tuple = ()) -> None:
        _TorchWork(self, work, op, None, None, None, keep).wait(timeout)

    def isend(self, tensor: Tensor, dst: int, tag: int = 0) -> Work:
        import torch.distributed as dist
        self._check_peer(dst, "isend")
        buf = self.staging.outgoing(tensor)
        work = dist.isend(byte_view(buf), group=self.group, tag=tag, group_dst=dst)
        return _TorchWork(self, work, "isend", dst, tag, tensor, keep=(buf,))

    def irecv(self, tensor: Tensor, src: int, tag: int = 0) -> Work:
        import torch.distributed as dist
        self._check_peer(src, "irecv")
        buf, finish = self.staging.incoming(tensor)
        work = dist.irecv(byte_view(buf), group=self.group, tag=tag, group_src=src)
        return _TorchWork(self, work, "irecv", src, tag, tensor, keep=(buf,), finish=finish)

    def all_reduce(self, tensor, op="sum", *, timeout=None):
        import torch.distributed as dist
        check_reduce(op)
        work, work_op = reducible(tensor, op)
        buf = self.staging.outgoing(work)
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
        buf, finish = self.staging.incoming(tensor)
        if finish is not None and self.rank == src:
            buf.copy_(tensor.detach())
        self._run(dist.broadcast(byte_view(buf), group=self.group, group_src=src,
                                 async_op=True), "broadcast", timeout)
        if finish is not None and self.rank != src:
            finish()
        return tensor

    def all_to_all_single(self, output, input, output_split_sizes=None, input_split_sizes=None,
                          *, timeout=None):
        import torch.distributed as dist
        send_rows, recv_rows, row = all_to_all_layout(output, input, output_split_sizes,
                                                      input_split_sizes, self.world_size)
        send = self.staging.outgoing(input)
        recv, finish = self.staging.incoming(output)
        if row == 0:  # rows without bytes (e.g. shape [n, 0]): nothing crosses
            return output
        # Rows as bytes: [rows, row_bytes] uint8 views, so any dtype crosses unchanged.
        work = dist.all_to_all_single(byte_view(recv).view(-1, row),
                                      byte_view(send).view(-1, row), recv_rows, send_rows,
                                      group=self.group, async_op=True)
        self._run(work, "all_to_all_single", timeout, keep=(send, recv))
        if finish is not None:
            finish()
        return output

    def allgather_object(self, obj, *, timeout=None):
        import torch.distributed as dist
        data = torch.frombuffer(bytearray(encode(obj)), dtype=torch.uint8).to(self.device)
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
