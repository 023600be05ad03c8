r"""The rank's side of the witness process (:mod:`pyg_sar.distributed.witness`).

A witness outlives its rank, for launchers that kill every rank the moment one dies: it says
which rank ended first and how. This module starts a rank's witness, streams the rank's state
to it, and opens the rank's silent *links* to every witness on its host (the kernel closes them
when the rank ends, in the order the ranks end).
"""
from __future__ import annotations

import json
import mmap
import os
import socket
import subprocess
import sys
import threading
import time
from typing import Optional

from pyg_sar.distributed import witness as witness_process
from pyg_sar.distributed.operations import OP_BYTES, OperationTracker


def witness_wanted() -> bool:
    """On by default under PMI launchers (MPICH's mpiexec kills all ranks when one dies) and
    torchrun (its agent SIGTERMs the others within its monitor interval); ``PYG_SAR_WITNESS=1/0``
    forces it on or off."""
    flag = os.environ.get("PYG_SAR_WITNESS")
    if flag is not None:
        return flag.strip().lower() not in ("0", "false", "no", "off", "")
    return "PMI_RANK" in os.environ or "TORCHELASTIC_RUN_ID" in os.environ


class Witness:
    """A rank's witness process and the rank's end of it. Writes never raise.

    Start it before the ranks meet, so that its listening socket exists when they exchange
    tokens; then :meth:`link` this rank to every witness on its host (its own included).

    Args:
        rank: this rank.
        options: extra fields of the first message (``cleanup_s``, ``wait_s``, ``trace``).
        tracker: publish its operation to the witness through shared memory (so that a killed
            rank's witness names the operation it really died in); ``None``: no sharing.
        stdout, stderr: the witness's (default: this process's).
    """

    def __init__(self, rank: int, *, options: Optional[dict] = None,
                 tracker: Optional[OperationTracker] = None, stdout=None, stderr=None) -> None:
        self.rank = rank
        self.token = os.urandom(12).hex()
        self.links: list[socket.socket] = []
        self._lock = threading.Lock()
        self._shared: Optional[mmap.mmap] = None
        self._tracker = tracker
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        fd = os.memfd_create("pyg_sar-operation") \
            if tracker is not None and hasattr(os, "memfd_create") else -1
        try:
            listener.bind(witness_process.address(self.token))
            listener.listen(1024)
            if fd >= 0:
                os.ftruncate(fd, OP_BYTES)
                self._shared = mmap.mmap(fd, OP_BYTES)
            self._proc = subprocess.Popen(
                [sys.executable, "-I", "-S", witness_process.__file__], stdin=subprocess.PIPE,
                stdout=stdout, stderr=stderr, start_new_session=True,
                pass_fds=(listener.fileno(),) + ((fd,) if fd >= 0 else ()))
            hello = {"rank": rank, "listen_fd": listener.fileno(),
                     "op_fd": fd if self._shared is not None else None, **(options or {})}
        except BaseException:
            if self._shared is not None:
                self._shared.close()
            raise
        finally:
            listener.close()
            if fd >= 0:
                os.close(fd)
        self.send(hello)
        if tracker is not None and self._shared is not None:
            tracker.share(self._shared)

    @property
    def process(self) -> subprocess.Popen:
        """The witness process."""
        return self._proc

    @property
    def shares_operation(self) -> bool:
        """Whether the witness reads the operation from shared memory (else: send it)."""
        return self._shared is not None

    def link(self, peers: dict[int, str], timeout: float) -> None:
        """Link this rank to the witnesses ``peers`` (rank -> token, on this host)."""
        self.links += link_witnesses(self.rank, self.token, peers, timeout)

    def send(self, msg: dict) -> None:
        """One JSON line of state to the witness (dropped if it is gone)."""
        with self._lock:
            if self._proc.stdin is None:
                return
            try:
                self._proc.stdin.write((json.dumps(msg) + "\n").encode())
                self._proc.stdin.flush()
            except (OSError, ValueError):
                pass

    def close(self, clean: bool) -> None:
        """This rank's end as the witnesses see it: the links close, then the state stream.
        After a clean end, wait for the witness to exit (it has nothing to say)."""
        if clean:
            self.send({"bye": True})
        close_all(self.links)
        with self._lock:
            stdin, self._proc.stdin = self._proc.stdin, None
        if stdin is not None:
            try:
                stdin.close()
            except OSError:
                pass
        if clean:
            try:
                self._proc.wait(timeout=30)  # hang detector: it only sends its record
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
        if self._shared is not None:
            if self._tracker is not None:
                self._tracker.unshare(self._shared)
            self._shared.close()
            self._shared = None


def link_witnesses(rank: int, token: Optional[str], peers: dict[int, str],
                   timeout: float) -> list[socket.socket]:
    """Open this rank's silent connections to the witnesses ``peers`` (rank -> token) and wait
    until each has registered its connection, so that they see this rank's end in order with
    the others'. ``token`` names this rank's own witness (``None``: it has none)."""
    hello = (json.dumps({"link": rank, "witness": token}) + "\n").encode()
    links: list[tuple[int, socket.socket]] = []
    for r, peer in sorted(peers.items()):
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(timeout)
        try:
            sock.connect(witness_process.address(peer))
            sock.sendall(hello)
            links.append((r, sock))
        except OSError:
            sock.close()
    deadline = time.monotonic() + timeout
    for r, sock in links:
        answer = b""
        try:
            while not answer.endswith(b"\n"):
                sock.settimeout(max(0.001, deadline - time.monotonic()))
                chunk = sock.recv(16)
                if not chunk:
                    break
                answer += chunk
        except OSError:
            pass
        if answer != b"ok\n":
            print(f"pyg_sar: rank {rank}: the failure witness of rank {r} did not answer within "
                  f"{timeout:.1f} s; a failure may be reported less precisely", file=sys.stderr,
                  flush=True)
    return [sock for _, sock in links]


def close_all(socks: list[socket.socket]) -> None:
    """Close every socket of ``socks`` and empty the list."""
    for sock in socks:
        try:
            sock.close()
        except OSError:
            pass
    socks.clear()
