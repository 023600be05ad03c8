r"""A rank's witness: a tiny process that outlives its rank and says what happened to it.

Why: MPICH's ``mpiexec`` (hydra) SIGKILLs every rank within about a millisecond of one rank
being killed, and torchrun SIGTERMs them within its monitor interval, before the survivors'
hubs can print which rank failed. So each rank starts a witness (this file, run by path
with ``python -I -S``, standard library only, in its own session so the launcher's kill does
not reach it).

Which rank ended first comes from the kernel, not from which witness happened to run first.
Every rank holds a silent connection (a *link*) to every witness on its host; the kernel closes
a process's sockets as it exits, and each witness's epoll ready list keeps those ends in the
order they happened. A launcher kills the other ranks only after it saw the first one end, and
a rank's links (opened late, so closed first among its files) are closed before the launcher
can see that: every witness sees the same order, however late it is scheduled.

Protocol. The rank creates the witness's listening Unix socket (abstract name
``\0pyg_sar-witness-TOKEN``) and shared memory in which it publishes its current operation at
every change, passes both, and streams its state to the witness's stdin as JSON lines:

* ``{"rank": R, "listen_fd": FD, "op_fd": FD}`` first (``op_fd`` may be null; optional
  ``cleanup_s``, ``wait_s``, ``trace``: see :class:`_Witness`);
* ``{"op": OP}`` at every change where there is no shared memory;
* ``{"hub": [HOST, PORT]}``: the failure hub of rank 0 (:mod:`pyg_sar.distributed.hub`);
* ``{"failure": MESSAGE, "failed_rank": F, "failed_op": OP, "failed_error": E}`` when the rank
  learnt that another rank failed, then ``{"printed": true}`` once it printed the message;
* ``{"own": true, "op": OP, "error": ERROR}`` when the rank itself failed (it prints its own
  traceback);
* ``{"bye": true}`` on a clean shutdown.

A connection to the listening socket starts with one JSON line: ``{"link": R, "witness": TOKEN}``
from rank R (answered ``ok``, then silent until rank R ends), or ``{"record": {...}}`` from the
witness of a rank that ended, saying how it ended.

When its own rank has ended (its link and its stdin closed), a witness sends its record to every
other witness on the host and, if its rank died without a word (killed, say by the kernel's OOM
killer), tells the hub why: ``{"type": "why", "rank": R, "op": OP, "error": E}`` over TCP, so
that rank 0 relays the cause to the ranks on other hosts, which no witness here can reach. Then
it decides. Let F be the first rank, in the kernel's order, of those
that ended at most ``cleanup_s`` before its own (a launcher's clean-up follows the end that
caused it within that). A rank that ended cleanly, printed its own error, or printed the failure
it learnt of says nothing more; one that learnt of a failure but was killed before printing it
prints it; if F is its own rank, it prints ``pyg_sar: rank R failed in OP: its process exited or
was killed ...``; otherwise it waits for F's record and prints ``pyg_sar: rank R stops: rank F
failed in OP: ERROR`` as the watchdog would have (or that rank F ended first, if F shut down
cleanly and then exited with an error status).
"""
from __future__ import annotations

import errno
import importlib.util
import json
import mmap
import os
import select
import socket
import sys
import time

CLEANUP_S = 3.0  # a launcher's clean-up kills follow the end that caused them within this
WAIT_S = 30.0  # hang detector: how long to wait for the first rank's record
OP_BYTES = 256  # as in operations.py
KILLED = "its process exited or was killed (connection closed without a clean shutdown)"
INTERRUPTED = "interrupted (KeyboardInterrupt)"  # as in hub.py: the program reports it
PREFIX = "\0pyg_sar-witness-"
OOM = "killed by the kernel's OOM killer"


def _memory_module():
    """:mod:`pyg_sar.distributed.memory` loaded by path (the witness runs without the package
    on its path); ``None`` if it cannot be loaded."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "memory.py")
    try:
        spec = importlib.util.spec_from_file_location("_pyg_sar_witness_memory", path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module  # dataclasses looks the module up by name
        spec.loader.exec_module(module)
        return module
    except Exception:  # noqa: BLE001 - a witness without OOM naming still works
        return None


class _MemoryWatch:
    """This process's cgroup memory limit and OOM-kill counter at start (the rank's: the witness
    inherited its cgroup); :meth:`killed` tells whether the counter rose since."""

    def __init__(self, enabled: bool = True) -> None:
        self.limit = self.start = None
        self.host = os.uname().nodename
        memory = _memory_module() if enabled else None
        if memory is None:
            return
        self.describe = memory.describe_limit
        try:
            self.limit = memory.cgroup_limit()
            self.start = self.limit.oom_kills() if self.limit is not None else None
        except OSError:
            self.limit = None

    def killed(self) -> str | None:
        """``memory limit X GiB of cgroup PATH`` when the counter rose, else ``None``."""
        if self.limit is None or self.start is None:
            return None
        now = self.limit.oom_kills()
        if now is None or now <= self.start:
            return None
        return self.describe(self.limit)


def address(token: str) -> str:
    """The abstract socket name of the witness with this token."""
    return PREFIX + token


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


def _lines(buf: bytes) -> tuple[list[dict], bytes]:
    """The complete JSON lines of ``buf`` (objects only) and the incomplete rest."""
    *lines, rest = buf.split(b"\n")
    out = []
    for line in lines:
        try:
            msg = json.loads(line)
        except ValueError:
            continue
        if isinstance(msg, dict):
            out.append(msg)
    return out, rest


def _push(token: str, record: dict) -> None:
    """Send ``record`` to the witness with ``token`` (gone already: nothing to do)."""
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.settimeout(5.0)
            sock.connect(address(token))
            sock.sendall((json.dumps({"record": record}) + "\n").encode())
    except OSError:
        pass


def _tell_hub(hub, record: dict) -> None:
    """Send rank 0's failure hub at ``hub`` (``[host, port]``) why this rank ended (gone or
    unreachable: nothing to do; the hub then names the rank as killed)."""
    try:
        host, port = str(hub[0]), int(hub[1])
        msg = {"type": "why", "rank": record["rank"], "op": record["op"],
               "error": record["error"]}
        with socket.create_connection((host, port), timeout=2.0) as sock:
            sock.sendall((json.dumps(msg) + "\n").encode())
    except (OSError, TypeError, ValueError, IndexError, KeyError):
        pass


def _first_line(sock: socket.socket) -> dict:
    """The JSON line a connection starts with (sent right after connecting), read to its end
    and no further; ``{}`` if there is none."""
    sock.settimeout(5.0)
    data = b""
    try:
        while not data.endswith(b"\n"):
            byte = sock.recv(1)
            if not byte:
                break
            data += byte
        msg = json.loads(data)
    except (OSError, ValueError):
        return {}
    return msg if isinstance(msg, dict) else {}


class _Conn:
    def __init__(self, sock: socket.socket) -> None:
        self.sock, self.rank = sock, None


class _Witness:
    """One witness. ``cleanup_s`` (:data:`CLEANUP_S`) and ``wait_s`` (:data:`WAIT_S`, a hang
    detector) may be set in the first message; with ``trace``, each rank's end it sees is
    written to stdout as ``witness R: rank X ended`` (for tests that must order events)."""

    def __init__(self, hello: dict, rest: bytes, stdin: int = 0) -> None:
        self.rank = int(hello["rank"])
        self.cleanup_s = float(hello.get("cleanup_s", CLEANUP_S))
        self.wait_s = float(hello.get("wait_s", WAIT_S))
        self.trace = bool(hello.get("trace"))
        self.op_fd = hello.get("op_fd")
        self.memory = _MemoryWatch(bool(hello.get("memory", True)))
        self.oom: str | None = None  # the limit it hit, if the OOM killer ended the rank
        self.state: dict = {"op": "starting"}
        self.listener = socket.socket(fileno=int(hello["listen_fd"]))
        self.listener.setblocking(False)
        self.poll = select.epoll()
        self.poll.register(self.listener.fileno(), select.EPOLLIN)
        self.stdin = stdin
        os.set_blocking(stdin, False)
        self.poll.register(stdin, select.EPOLLIN)
        self.stdin_buf, self.stdin_open = rest, True
        self.conns: dict[int, _Conn] = {}
        self.ended: list[tuple[int, float]] = []  # (rank, when seen), in the kernel's order
        self.witnesses: dict[int, str | None] = {}  # linked rank -> token of its witness
        self.records: dict[int, dict] = {}  # rank -> how it ended, from its witness

    # ------------------------------------------------------------------------- events
    def _step(self, timeout: float) -> None:
        for fd, _ in self.poll.poll(timeout):
            if fd == self.stdin:
                self._read_stdin()
            elif fd == self.listener.fileno():
                self._accept()
            elif fd in self.conns:
                self._read_conn(self.conns[fd])

    def _read_stdin(self) -> None:
        while self.stdin_open:
            try:
                data = os.read(self.stdin, 65536)
            except BlockingIOError:
                return
            except OSError:
                data = b""
            if not data:
                self.stdin_open = False
                self.poll.unregister(self.stdin)
                data = b"\n"
            msgs, self.stdin_buf = _lines(self.stdin_buf + data)
            for msg in msgs:
                self.state.update(msg)
            if self._silent() and not self.trace:
                self._close_output()

    def _accept(self) -> None:
        while True:
            try:
                sock, _ = self.listener.accept()
            except OSError:  # BlockingIOError: none left
                return
            msg = _first_line(sock)
            if isinstance(msg.get("record"), dict):  # a witness says how its rank ended
                self.records[int(msg["record"].get("from", -1))] = msg["record"]
                sock.close()
            elif "link" in msg:
                conn = _Conn(sock)
                conn.rank = int(msg["link"])
                self.witnesses[conn.rank] = msg.get("witness")
                # Registered with nothing left to read, edge-triggered: the link joins the
                # ready list only when it closes, behind the ends that happened before. (Were
                # it registered readable, it would sit on the list from that moment on.) Then
                # the rank learns it is registered: it cannot end before.
                sock.setblocking(False)
                self.conns[sock.fileno()] = conn
                self.poll.register(sock, select.EPOLLIN | select.EPOLLRDHUP | select.EPOLLET)
                try:
                    sock.sendall(b"ok\n")
                except OSError:
                    pass
            else:
                sock.close()

    def _read_conn(self, conn: _Conn) -> None:
        """A link is silent after its first line: anything it reports is its end."""
        while True:
            try:
                data = conn.sock.recv(65536)
            except (BlockingIOError, InterruptedError):
                return
            except OSError:
                data = b""
            if not data:
                self._close_conn(conn)
                return

    def _close_conn(self, conn: _Conn) -> None:
        if conn.rank is not None:
            self.ended.append((conn.rank, time.monotonic()))
            if self.trace:
                sys.stdout.write(f"witness {self.rank}: rank {conn.rank} ended\n")
                sys.stdout.flush()
        self.conns.pop(conn.sock.fileno(), None)
        try:
            self.poll.unregister(conn.sock)
        except (OSError, ValueError):
            pass
        conn.sock.close()

    def _silent(self) -> bool:
        """Whether this witness has nothing to say, whatever happens next."""
        return bool(self.state.get("bye") or self.state.get("own") or self.state.get("printed"))

    def _close_output(self) -> None:
        """Stop holding the launcher's output pipes: while a witness holds them, the launcher
        does not see its rank end (and hydra may then report other ranks as killed). They are
        replaced by /dev/null, not closed: fds 1 and 2 stay taken, so no socket opened later
        gets their numbers (and a second call cannot close one)."""
        try:
            null = os.open(os.devnull, os.O_WRONLY)
        except OSError:
            return
        for fd in (1, 2):
            try:
                os.dup2(null, fd)
            except OSError:
                pass
        os.close(null)

    def _own_end(self) -> float | None:
        return next((t for r, t in self.ended if r == self.rank), None)

    # ---------------------------------------------------------------------- decision
    def _record(self) -> dict:
        """How this rank ended, as the others will tell it."""
        state = self.state
        if state.get("bye"):
            return {"from": self.rank, "clean": True}
        if state.get("failure"):  # learnt from the watchdog (possibly from another host)
            return {"from": self.rank, "rank": state.get("failed_rank", "?"),
                    "op": state.get("failed_op", "?"), "error": state.get("failed_error", "?")}
        if state.get("own"):
            return {"from": self.rank, "rank": self.rank, "op": state.get("op"),
                    "error": state.get("error")}
        if self.oom:
            return {"from": self.rank, "rank": self.rank, "op": state["op"],
                    "error": f"{OOM} on host {self.memory.host} ({self.oom})"}
        return {"from": self.rank, "rank": self.rank, "op": state["op"], "error": KILLED}

    def _first(self, own_end: float) -> int:
        """The first rank to end at most ``cleanup_s`` before this witness's rank."""
        return next(r for r, t in self.ended if own_end - t <= self.cleanup_s)

    def _message(self, first: int) -> str | None:
        state, rank = self.state, self.rank
        if self._silent():
            return None
        if state.get("failure"):
            return None if state.get("failed_error") == INTERRUPTED else str(state["failure"])
        if first == rank:
            if self.oom:
                return (f"pyg_sar: rank {rank} on host {self.memory.host} was {OOM} "
                        f"({self.oom}) in {state['op']}")
            return f"pyg_sar: rank {rank} failed in {state['op']}: {KILLED}"
        if self.witnesses.get(first) is None:
            return (f"pyg_sar: rank {rank} stops: rank {first} ended first (it has no witness "
                    f"to say how)")
        deadline = time.monotonic() + self.wait_s
        while first not in self.records and time.monotonic() < deadline:
            self._step(max(0.0, deadline - time.monotonic()))
        record = self.records.get(first)
        if record is None:
            return (f"pyg_sar: rank {rank} stops: rank {first} ended first (its witness did "
                    f"not say how within {self.wait_s:.0f} s)")
        if record.get("clean"):
            return (f"pyg_sar: rank {rank} stops: rank {first} ended first (it shut pyg_sar "
                    f"down cleanly, then its process exited: see its exit status)")
        if record.get("error") == INTERRUPTED:  # Ctrl-C, not a failure: nothing to add
            return None
        return (f"pyg_sar: rank {rank} stops: rank {record.get('rank')} failed in "
                f"{record.get('op')}: {record.get('error')}")

    def run(self) -> None:
        linked_self = False
        while self.stdin_open or self._own_end() is None:
            self._step(-1)
            linked_self = linked_self or self.rank in self.witnesses
            if not self.stdin_open and not linked_self and self._own_end() is None:
                # The rank never linked to its own witness: its stdin closing is its end.
                self.ended.append((self.rank, time.monotonic()))
        op = _shared_operation(self.op_fd)
        if op:
            self.state["op"] = op
        if not self._silent() and not self.state.get("failure"):
            self.oom = self.memory.killed()
        record = self._record()
        if self.state.get("hub") and not self._silent() and not self.state.get("failure"):
            _tell_hub(self.state["hub"], record)  # it died without a word: say why
        for r, token in self.witnesses.items():
            if r != self.rank and token:
                _push(token, record)
        message = self._message(self._first(self._own_end()))
        if message:
            sys.stderr.write(message + "\n")
            sys.stderr.flush()


def main() -> None:
    data = b""
    while b"\n" not in data:  # the first line, unbuffered: the rest is read through epoll
        chunk = os.read(0, 4096)
        if not chunk:
            return
        data += chunk
    line, rest = data.split(b"\n", 1)
    try:
        hello = json.loads(line)
        int(hello["rank"]), int(hello["listen_fd"])
    except (ValueError, KeyError, TypeError):
        return
    try:
        _Witness(hello, rest).run()
    except OSError as e:
        if e.errno != errno.EPIPE:
            raise


if __name__ == "__main__":
    main()
