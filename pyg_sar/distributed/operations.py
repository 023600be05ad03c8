r"""Operation tracking for failure supervision: what this rank is doing right now.

A supervised communicator's waits record the operation they wait for; the watchdog's
heartbeats carry it to the other ranks, and the witness process reads it from shared memory,
so a rank that fails or is killed is reported with the operation it was in.
"""
from __future__ import annotations

import mmap
from typing import Optional

OP_BYTES = 256  # size of the shared record (2 bytes of length, then UTF-8); as in witness.py


class OperationTracker:
    """The operation of one rank, optionally published to a shared-memory record.

    Between two waits a rank computes; :meth:`current` then says so and names the last
    communication (``"computation (last communication: all_reduce)"``).
    """

    def __init__(self) -> None:
        self.operation = "starting"
        self.waiting = False
        self._shared: Optional[mmap.mmap] = None

    def begin(self, operation: str, waiting: bool = True) -> None:
        """Record the operation this rank is in (what peers report if it fails)."""
        self.operation, self.waiting = operation, waiting
        self._publish()

    def end(self) -> None:
        """The wait in progress finished; the rank computes until its next operation."""
        self.waiting = False
        self._publish()

    def current(self) -> str:
        """The operation as failure reports name it."""
        if self.waiting:
            return self.operation
        return f"computation (last communication: {self.operation})"

    def share(self, record: Optional[mmap.mmap]) -> None:
        """Publish every change to ``record`` (``None``: stop publishing)."""
        self._shared = record
        self._publish()

    def unshare(self, record: mmap.mmap) -> None:
        """Stop publishing to ``record`` if it is the one in use."""
        if self._shared is record:
            self._shared = None

    def _publish(self) -> None:
        shared = self._shared
        if shared is None:
            return
        text = self.current().encode()[:OP_BYTES - 2]
        try:
            shared[2:2 + len(text)] = text
            shared[0:2] = len(text).to_bytes(2, "little")
        except ValueError:  # closed by a concurrent shutdown: nothing left to tell
            pass
