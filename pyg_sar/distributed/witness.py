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

When the pipe closes without a goodbye the rank is gone. The first witness of a job on this host
to see that claims an abstract Unix socket named after the job: its rank is the one that failed
(a launcher's clean-up kills come later). It answers the others' questions on that socket for
``LINGER_S`` seconds; every witness whose rank had not already printed the news prints
``pyg_sar: rank R stops: rank F failed in OP: ERROR``, as the watchdog would have.
"""
from __future__ import annotations

import json
import mmap
import socket
import sys
import time

LINGER_S = 1.0
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


def main() -> None:
    state = _read_state(sys.stdin)
    op = _shared_operation(state.get("op_fd"))
    if op:
        state["op"] = op
    if state.get("bye") or state["job"] is None:
        return
    rank = state["rank"]
    if state.get("own"):
        failed = {"rank": rank, "op": state.get("op"), "error": state.get("error")}
    else:
        failed = {"rank": rank, "op": f"{state['op']}", "error": KILLED}
    name = f"\0pyg_sar-witness-{state['job']}"
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        server.bind(name)
        server.listen(64)
    except OSError:
        server.close()
        server = None
    if server is None:  # another rank went first: this one was stopped because of it
        answer = _ask(name)
        if state.get("printed"):
            return
        if state.get("failure"):
            message = state["failure"]
        elif answer is not None:
            message = (f"pyg_sar: rank {rank} stops: rank {answer['rank']} failed in "
                       f"{answer['op']}: {answer['error']}")
        else:
            return
        sys.stderr.write(message + "\n")
        sys.stderr.flush()
        return
    with server:
        if not state.get("own") and not state.get("printed"):
            # This rank died first (or learnt of a failure no witness here claimed).
            sys.stderr.write((state.get("failure") or
                              f"pyg_sar: rank {rank} failed in {failed['op']}: {KILLED}") + "\n")
            sys.stderr.flush()
        if state.get("failure"):  # the failure came from another host: pass it on
            failed = {"rank": state.get("failed_rank", "?"), "op": state.get("failed_op", "?"),
                      "error": state.get("failed_error", "?")}
        _serve(server, failed)


if __name__ == "__main__":
    main()
