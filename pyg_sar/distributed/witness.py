r"""A rank's witness: a tiny process that outlives its rank and says what happened to it.

Why: MPICH's ``mpiexec`` (hydra) SIGKILLs every rank within about a millisecond of one rank
being killed, before the survivors' watchdogs can print which rank failed. So each rank starts
a witness (this file, run by path with ``python -I -S``, standard library only, in its own
session so the launcher's kill does not reach it) and streams its state to the witness's stdin
as JSON lines:

* ``{"job": ID, "rank": R, "op_fd": FD}`` first, where FD is shared memory in which the rank
  publishes its current operation at every change (``{"op": OP}`` lines where there is none);
* ``{"failure": MESSAGE}`` when the rank learnt that another rank failed, then
  ``{"printed": true}`` once it printed the message itself;
* ``{"own": true, "op": OP, "error": ERROR}`` when the rank itself failed (it prints its own
  traceback);
* ``{"bye": true}`` on a clean shutdown.

When the pipe closes, the rank is gone. The first witness of a job on this host to see that
claims an abstract Unix socket named after the job: its rank ended first (a launcher's clean-up
kills come later), and without a goodbye that is the failure. It answers the others' questions
on that socket for ``LINGER_S`` seconds. Every witness whose rank ended without a goodbye, within
``CLEANUP_S`` of the first and without having printed the news, prints
``pyg_sar: rank R stops: rank F failed in OP: ERROR`` as the watchdog would have (or that rank F
ended first, if F shut down cleanly and then exited with an error status); one that ended later
reports its own failure.
"""
from __future__ import annotations

import json
import mmap
import os
import socket
import sys
import time

LINGER_S = 1.0
CLEANUP_S = 0.5  # a launcher's clean-up kills follow the first end within this
OP_BYTES = 256  # as in watchdog.py
KILLED = "its process exited or was killed (connection closed without a clean shutdown)"


def _read_state(stream) -> dict:
    state = {"op": "starting", "rank": "?", "job": None}
    for line in stream:
        try:
            msg = json.loads(line)
        except ValueError:
            continue
        if isinstance(msg, dict):
            state.update(msg)
    return state


def _serve(server: socket.socket, answer: dict) -> None:
    """Answer every witness that asks, until ``LINGER_S`` seconds have passed."""
    server.settimeout(0.05)
    deadline = time.monotonic() + LINGER_S
    while time.monotonic() < deadline:
        try:
            conn, _ = server.accept()
        except (TimeoutError, OSError):
            continue
        with conn:
            try:
                conn.sendall((json.dumps(answer) + "\n").encode())
            except OSError:
                pass


def _ask(name: str) -> dict | None:
    for _ in range(20):
        try:
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
                sock.settimeout(1.0)
                sock.connect(name)
                data = b""
                while not data.endswith(b"\n"):
                    chunk = sock.recv(4096)
                    if not chunk:
                        break
                    data += chunk
                return json.loads(data)
        except (OSError, ValueError):
            time.sleep(0.01)
    return None


def _shared_operation(fd) -> str | None:
    """The operation the rank published last in the shared memory it passed (``op_fd``)."""
    if fd is None:
        return None
    try:
        with mmap.mmap(int(fd), OP_BYTES, access=mmap.ACCESS_READ) as shared:
            size = int.from_bytes(shared[0:2], "little")
            return shared[2:2 + size].decode(errors="replace") if size else None
    except (OSError, ValueError):
        return None


def _print(message: str) -> None:
    sys.stderr.write(message + "\n")
    sys.stderr.flush()


def _claim(name: str) -> socket.socket | None:
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        server.bind(name)
        server.listen(64)
        return server
    except OSError:
        server.close()
        return None


def main() -> None:
    state = _read_state(sys.stdin)
    ended = time.monotonic()  # when the rank's pipe closed (CLOCK_MONOTONIC: host-wide)
    op = _shared_operation(state.get("op_fd"))
    if op:
        state["op"] = op
    if state["job"] is None:
        return
    rank, clean = state["rank"], bool(state.get("bye"))
    if clean:  # nothing to say; do not hold the launcher's output pipes open
        for fd in (1, 2):
            try:
                os.close(fd)
            except OSError:
                pass
    if state.get("failure"):  # learnt from the watchdog (possibly from another host)
        record = {"rank": state.get("failed_rank", "?"), "op": state.get("failed_op", "?"),
                  "error": state.get("failed_error", "?")}
    elif state.get("own"):
        record = {"rank": rank, "op": state.get("op"), "error": state.get("error")}
    else:
        record = {"rank": rank, "op": state["op"], "error": KILLED}
    record.update(clean=clean, ended=ended)
    name = f"\0pyg_sar-witness-{state['job']}"
    server = _claim(name)
    if server is not None:  # the first rank of this job on this host to end
        with server:
            if not clean and not state.get("own") and not state.get("printed"):
                _print(state.get("failure") or
                       f"pyg_sar: rank {rank} failed in {record['op']}: {KILLED}")
            _serve(server, record)
        return
    # Another rank ended first. If this one ended within CLEANUP_S of it, the launcher (or
    # that failure) stopped it; later, its end is a failure of its own.
    answer = _ask(name)
    if clean or state.get("own") or state.get("printed"):
        return
    if state.get("failure"):
        _print(state["failure"])
    elif answer is None or ended - float(answer.get("ended", ended)) > CLEANUP_S:
        _print(f"pyg_sar: rank {rank} failed in {record['op']}: {KILLED}")
    elif answer.get("clean"):
        _print(f"pyg_sar: rank {rank} stops: rank {answer['rank']} ended first (it shut "
               f"pyg_sar down cleanly, then its process exited: see its exit status)")
    else:
        _print(f"pyg_sar: rank {rank} stops: rank {answer['rank']} failed in {answer['op']}: "
               f"{answer['error']}")


if __name__ == "__main__":
    main()
