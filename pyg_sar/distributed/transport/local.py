"""World size 1: collectives are identities; messages to self are matched by tag."""
from __future__ import annotations

import json
from collections.abc import Callable
from typing import Optional

from torch import Tensor

from pyg_sar.distributed.transport.base import (
    Communicator,
    Work,
    check_all_to_all,
    check_reduce,
    check_splits,
    encode,
    timeout_error,
)


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
    """One process: collectives are identities, a message to self is matched by its tag."""

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
        check_reduce(op)
        return tensor

    def broadcast(self, tensor, src=0, *, timeout=None):
        self._check_peer(src, "broadcast")
        return tensor

    def all_to_all_single(self, output, input, output_split_sizes=None, input_split_sizes=None,
                          *, timeout=None):
        check_all_to_all(output, input)
        check_splits("input", input_split_sizes, input.shape[0], 1)
        check_splits("output", output_split_sizes, output.shape[0], 1)
        if output.shape != input.shape:
            raise ValueError(f"all_to_all_single: output shape {tuple(output.shape)} must equal "
                             f"input shape {tuple(input.shape)} on one rank")
        output.copy_(input)
        return output

    def allgather_object(self, obj, *, timeout=None):
        return [json.loads(encode(obj))]

    def barrier(self, *, timeout=None):
        return None
