r"""Failure detection: when one rank dies or raises, every other rank stops promptly and says
which rank failed and what it was doing.

A side channel independent of the data communicator (so it works the same under ``mpiexec``,
``torchrun`` and plain processes): every rank keeps one TCP connection to rank 0, which relays.
A background thread on each rank

* sends a heartbeat with the operation the rank is in (set by the communicator's waits)
  every ``heartbeat`` seconds;
* notices a peer that died: its connection closes at once (the kernel closes the sockets of a
  killed process), or, for a lost host, no heartbeat for ``dead_after`` seconds;
* relays a rank's own failure: an uncaught exception in the main thread is sent to every
  rank with the operation it was in (:func:`report_failure` does it by hand).

A rank that learns of a failure prints one line naming the failed rank and its operation
(and, for a rank on another host, that host's name and the address it connected from);
its communicator waits then raise that message (``PeerFailure``) instead of waiting out
their timeout, and if the process has not ended ``grace`` seconds later it is ended with exit
status 1. A failing process skips MPI finalisation and process-group teardown at exit (both
can block on a dead peer). Timeouts are generous and heartbeats come from a thread, so a
rank that is merely slow (an oversubscribed host) is never declared dead.

An interrupt (Ctrl-C, :func:`report_interrupt`) travels the same way but quietly: no rank
prints it, the others' waits raise :class:`PeerInterrupted` (a ``KeyboardInterrupt``), and
the process exits with status 130.
"""
from __future__ import annotations

import atexit
import json
import mmap
import os
import select
import socket
import subprocess
import sys
import threading
import time
import traceback
from typing import Optional

from pyg_sar.distributed import witness as witness_process

HEARTBEAT_S = 2.0
DEAD_AFTER_S = 45.0
GRACE_S = 10.0
DIAGNOSIS_S = 30.0  # hang detector: after a broken connection, the news of why comes at once
TIMEOUT_DIAGNOSIS_S = 3.0  # after a timeout, which live peers cause too
SILENT_BEATS = 5  # after a timeout, a peer silent this many heartbeats is unreachable


class PeerFailure(RuntimeError):
    """Another rank failed; this rank cannot go on. The message names the rank and operation."""


class PeerInterrupted(PeerFailure, KeyboardInterrupt):
    """Another rank was interrupted (Ctrl-C): this one stops as if it had been interrupted too."""


# The error a rank reports when it was interrupted: its peers stop without printing anything.
INTERRUPTED = "interrupted (KeyboardInterrupt)"


# What this process is doing, for the heartbeats (written by the communicator's waits).
_state = {"op": "starting", "waiting": False}
_ACTIVE: Optional[Watchdog] = None
_HOOKS_INSTALLED = False


# Shared with the witness process (see Witness): the current operation, published on every
# change so that a killed rank's witness names the operation it really died in.
_published: Optional[mmap.mmap] = None
OP_BYTES = 256


def _publish() -> None:
    shared = _published
    if shared is not None:
        text = current_operation().encode()[:OP_BYTES - 2]
        try:
            shared[2:2 + len(text)] = text
            shared[0:2] = len(text).to_bytes(2, "little")
        except ValueError:  # closed by a concurrent shutdown: nothing left to tell
            pass


def set_operation(op: str, waiting: bool = True) -> None:
    """Record the operation this rank is in (what peers report if it fails)."""
    _state["op"] = op
    _state["waiting"] = waiting
    _publish()


def done_operation() -> None:
    """The wait in progress finished; the rank computes until its next operation."""
    _state["waiting"] = False
    _publish()


def current_operation() -> str:
    op = _state["op"]
    return op if _state["waiting"] else f"computation (last communication: {op})"


def failure() -> Optional[str]:
    """The failure message this rank learnt of, or ``None``."""
    return _ACTIVE.failure if _ACTIVE is not None else None


def check_peers() -> None:
    """Raise :class:`PeerFailure` if another rank has failed (cheap: reads one attribute)."""
    dog = _ACTIVE
    if dog is not None and dog.failure is not None and dog.failed_rank != dog.rank:
        raise (PeerInterrupted if dog.interrupted else PeerFailure)(dog.failure)


def wait_for_diagnosis(seconds: Optional[float] = None,
                       timed_out: bool = True) -> Optional[str]:
    """After a communication error, wait for the watchdog to name the failed rank.

    A broken connection (``timed_out=False``) means a peer ended, which the watchdog learns of
    through its own connection (closed, or a relayed failure), so the wait ends on that news;
    :data:`DIAGNOSIS_S` bounds it as a hang detector. A timeout (``timed_out=True``, e.g. a
    :class:`~pyg_sar.distributed.transport.CommTimeout`) can happen with every peer alive:
    then it waits :data:`TIMEOUT_DIAGNOSIS_S` only (or ``seconds`` when given). If no news
    came by then, a peer silent for :data:`SILENT_BEATS` heartbeats is declared unreachable:
    a communication timeout shorter than ``dead_after`` still names the lost host.
    """
    dog = _ACTIVE
    if dog is None:
        return None
    if seconds is None:
        seconds = TIMEOUT_DIAGNOSIS_S if timed_out else DIAGNOSIS_S
    deadline = time.monotonic() + seconds
    while dog.failure is None and time.monotonic() < deadline:
        time.sleep(0.02)
    if dog.failure is None and timed_out:
        dog.declare_silent(SILENT_BEATS * dog.heartbeat)
    return dog.failure if dog.failure is not None and dog.failed_rank != dog.rank else None


def report_failure(exc: BaseException) -> None:
    """Tell every rank that this one failed with ``exc`` (also called for uncaught
    exceptions). Harnesses that catch a rank's exception themselves should call it."""
    dog = _ACTIVE
    if dog is None:
        return
    error = "".join(traceback.format_exception_only(type(exc), exc)).strip().splitlines()
    dog.report_own_failure(error[-1] if error else type(exc).__name__)


def report_interrupt() -> None:
    """Tell every rank that this one was interrupted (also done for an uncaught
    ``KeyboardInterrupt``): they stop at their next wait with :class:`PeerInterrupted`, and no
    rank or witness reports it as a failure."""
    dog = _ACTIVE
    if dog is not None and not dog._declared:
        dog.report_own_failure(INTERRUPTED)


def release_after_interrupt() -> None:
    """After an interrupt, the order of exits: rank 0 calls this once it has reported the
    interrupt; every other rank calls it to wait for that (or for rank 0's end; at most half
    the failure grace period, a hang detector), so that all exit together right after.

    mpiexec and torchrun end every rank once one exits: a rank that exited first could cut
    rank 0's report short, and one still running when the launcher kills it is reported as
    killed (MPICH: "BAD TERMINATION ... signal 9")."""
    dog = _ACTIVE
    if dog is None:
        return
    if dog.rank == 0:
        with dog._lock:
            for sock in dog._peers.values():
                _send(sock, {"type": "release"})
    else:
        dog._released.wait(dog.grace / 2)


def _send(sock: socket.socket, msg: dict) -> bool:
    try:
        sock.sendall((json.dumps(msg) + "\n").encode())
        return True
    except OSError:
        return False


class _Lines:
    """Newline-delimited JSON messages from a socket."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.buf = b""

    def read(self) -> Optional[list[dict]]:
        """The messages now available, or ``None`` when the peer closed the connection."""
        try:
            data = self.sock.recv(65536)
        except (BlockingIOError, InterruptedError):
            return []
        except OSError:
            return None
        if not data:
            return None
        self.buf += data
        *lines, self.buf = self.buf.split(b"\n")
        out = []
        for line in lines:
            try:
                out.append(json.loads(line))
            except ValueError:
                continue
        return out


class Witness:
    """The rank's side of :mod:`pyg_sar.distributed.witness` (a process that outlives the
    rank, for launchers that kill every rank the moment one dies). Writes never raise.

    Start it before the ranks meet, so that its listening socket exists when they exchange
    tokens; then :meth:`link` this rank to every witness on its host (its own included).

    Args:
        rank: this rank.
        options: extra fields of the first message (``cleanup_s``, ``wait_s``, ``trace``).
        publish: share :func:`current_operation` with the witness through memory (one witness
            per process does).
        stdout, stderr: the witness's (default: this process's).
    """

    def __init__(self, rank: int, *, options: Optional[dict] = None, publish: bool = True,
                 stdout=None, stderr=None) -> None:
        global _published
        self.rank = rank
        self.token = os.urandom(12).hex()
        self.links: list[socket.socket] = []
        self._lock = threading.Lock()
        self._shared: Optional[mmap.mmap] = None
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        fd = os.memfd_create("pyg_sar-operation") if publish and hasattr(os, "memfd_create") \
            else -1
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
        if publish:
            _published = self._shared
            _publish()

    @property
    def process(self) -> subprocess.Popen:
        """The witness process."""
        return self._proc

    def link(self, peers: dict[int, str], timeout: float) -> None:
        """Link this rank to the witnesses ``peers`` (rank -> token, on this host)."""
        self.links += link_witnesses(self.rank, self.token, peers, timeout)

    def send(self, msg: dict) -> None:
        with self._lock:
            if self._proc.stdin is None:
                return
            try:
                self._proc.stdin.write((json.dumps(msg) + "\n").encode())
                self._proc.stdin.flush()
            except (OSError, ValueError):
                pass

    def close(self, clean: bool) -> None:
        """This rank's end as the witnesses see it: the links close, then the state stream."""
        if clean:
            self.send({"bye": True})
        _close_all(self.links)
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
        global _published
        if _published is self._shared:
            _published = None
        if self._shared is not None:
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


def _close_all(socks: list[socket.socket]) -> None:
    for sock in socks:
        try:
            sock.close()
        except OSError:
            pass
    socks.clear()


def _witness_wanted() -> bool:
    """On by default under PMI launchers (MPICH's mpiexec kills all ranks when one dies) and
    torchrun (its agent SIGTERMs the others within its monitor interval); ``PYG_SAR_WITNESS=1/0``
    forces it on or off."""
    flag = os.environ.get("PYG_SAR_WITNESS")
    if flag is not None:
        return flag.strip().lower() not in ("0", "false", "no", "off", "")
    return "PMI_RANK" in os.environ or "TORCHELASTIC_RUN_ID" in os.environ


def _local_address(sock: Optional[socket.socket]) -> Optional[str]:
    """The local address of a connected socket (``None`` when there is none)."""
    try:
        return sock.getsockname()[0] if sock is not None else None
    except OSError:
        return None


def _host_key() -> str:
    """Ranks with the same key can reach each other's abstract Unix sockets."""
    try:
        netns = os.stat("/proc/self/ns/net").st_ino
    except OSError:
        netns = 0
    return f"{socket.gethostname()}/{netns}"


class Watchdog:
    """The side channel of one rank (rank 0 hosts the relay). Use :func:`start_watchdog`."""

    def __init__(self, rank: int, world_size: int, heartbeat: float, dead_after: float,
                 grace: float) -> None:
        self.rank, self.world_size = rank, world_size
        self.heartbeat, self.dead_after, self.grace = heartbeat, dead_after, grace
        self.failure: Optional[str] = None
        self.failed_rank: Optional[int] = None
        self.interrupted = False  # the failure is an interrupt (INTERRUPTED)
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._thread: Optional[threading.Thread] = None
        self._server: Optional[socket.socket] = None
        self._peers: dict[int, socket.socket] = {}  # rank 0: every other rank; else: {0: hub}
        self._readers: dict[int, _Lines] = {}
        self._last_seen: dict[int, float] = {}
        self._ops: dict[int, str] = {}
        self._where: dict[int, str] = {}  # ranks on other hosts: "host NAME, ADDRESS"
        self._left: set[int] = set()  # ranks no longer watched (gone, or said goodbye)
        self._bye: set[int] = set()  # ranks that ended cleanly
        self._exiting_with_error = False
        self._declared = False  # a failure is being or has been declared
        self.witness: Optional[Witness] = None
        self._links: list[socket.socket] = []  # to this host's witnesses, if it has none
        self._accepting_stop = False  # rank 0: stop accepting (set-up failed elsewhere)
        self._released = threading.Event()  # rank 0 reported an interrupt, or has ended

    # ---------------------------------------------------------------- set-up and teardown
    def connect(self, comm, host: str, timeout: float) -> None:
        """Rendezvous over ``comm``: rank 0 listens, the others connect to it. Where wanted,
        each rank starts its witness first and links to every witness on its host."""
        witness = None
        if _witness_wanted():
            try:
                witness = Witness(self.rank)
            except OSError as e:  # failure reports still come from the watchdog itself
                print(f"pyg_sar: rank {self.rank}: could not start the failure witness ({e}); "
                      f"continuing without it", file=sys.stderr, flush=True)
        try:
            self._connect(comm, host, timeout, witness)
        except BaseException:
            if witness is not None:
                witness.close(clean=True)
            _close_all(self._links)
            raise
        self.witness = witness
        now = time.monotonic()
        for r, sock in self._peers.items():
            self._readers.setdefault(r, _Lines(sock))
            self._last_seen[r] = now
            self._ops[r] = "starting"
        self._thread = threading.Thread(target=self._run, name="pyg_sar-watchdog", daemon=True)
        self._thread.start()

    def _connect(self, comm, host: str, timeout: float, witness: Optional[Witness]) -> None:
        if self.rank == 0:
            server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            server.bind(("0.0.0.0" if host != "127.0.0.1" else host, 0))
            server.listen(self.world_size)
            self._server = server
            endpoint = [host, server.getsockname()[1]]
        else:
            endpoint = None
        # Every witness listens before this exchange, so each rank can link to all of them.
        mine = {"endpoint": endpoint, "host": _host_key(), "hostname": socket.gethostname(),
                "witness": witness.token if witness is not None else None}
        everyone = comm.allgather_object(mine)
        endpoint = everyone[0]["endpoint"]
        # Rank 0 accepts in a thread while every rank reports its outcome over `comm`: a rank
        # that cannot reach the hub is named on every rank at once, instead of rank 0 waiting
        # out its timeout in accept(). Every wait ends by `deadline`.
        deadline = time.monotonic() + timeout
        error: Optional[str] = None
        if self.rank == 0:
            accepting = threading.Thread(target=self._accept_peers, args=(deadline,),
                                         name="pyg_sar-watchdog-accept", daemon=True)
            accepting.start()
        else:
            error = self._connect_hub(endpoint, deadline)
        # With the outcome, the address each rank reaches the hub from: a failure report names
        # a rank on another host by its hostname and address (hostnames may resolve nowhere).
        address = endpoint[0] if self.rank == 0 else _local_address(self._peers.get(0))
        outcomes = comm.allgather_object({"error": error, "address": address},
                                         timeout=timeout)
        failed = [o["error"] for o in outcomes if o["error"]]
        for r, (e, o) in enumerate(zip(everyone, outcomes)):
            if e["host"] != mine["host"]:
                self._where[r] = ", ".join(x for x in (f"host {e.get('hostname')}",
                                                       o["address"]) if x)
        if self.rank == 0:
            if failed:
                self._accepting_stop = True
            accepting.join(max(0.0, deadline - time.monotonic()) + 2.0)
            self._accepting_stop = True
            missing = sorted(set(range(1, self.world_size)) - set(self._peers))
            if missing and not failed:
                failed = [f"rank(s) {missing} connected to no hub at {endpoint[0]}:"
                          f"{endpoint[1]} within {timeout:.1f} s"]
        if failed:
            raise RuntimeError("pyg_sar.init: the failure watchdog could not be set up: "
                               + "; ".join(failed))
        peers = {r: e["witness"] for r, e in enumerate(everyone)
                 if e["witness"] and e["host"] == mine["host"]}
        if witness is not None:
            witness.link(peers, timeout)
        elif peers:  # no witness of its own, but the others must see it end
            self._links = link_witnesses(self.rank, None, peers, timeout)

    def _accept_peers(self, deadline: float) -> None:
        """Rank 0: accept the other ranks' connections until all are in, ``deadline``, or
        :meth:`_connect` gives up (``_accepting_stop``)."""
        self._server.settimeout(0.1)
        while len(self._peers) < self.world_size - 1 and not self._accepting_stop and \
                time.monotonic() < deadline:
            try:
                conn, _ = self._server.accept()
            except (TimeoutError, BlockingIOError):
                continue
            except OSError:
                return
            conn.settimeout(max(0.1, deadline - time.monotonic()))
            data = b""
            try:
                while b"\n" not in data:
                    chunk = conn.recv(256)
                    if not chunk:
                        break
                    data += chunk
            except OSError:
                pass
            if b"\n" not in data:  # not a rank of ours, or it gave up: keep waiting
                conn.close()
                continue
            hello, rest = data.split(b"\n", 1)
            try:
                peer = int(json.loads(hello)["hello"])
            except (ValueError, KeyError, TypeError):
                conn.close()
                continue
            conn.setblocking(False)
            self._readers[peer] = _Lines(conn)
            self._readers[peer].buf = rest  # beats that came with the hello
            self._peers[peer] = conn

    def _connect_hub(self, endpoint: list, deadline: float) -> Optional[str]:
        """A rank other than 0: connect to rank 0's hub; returns ``None`` or what went wrong
        (naming this rank, its host and the address it tried)."""
        try:
            sock = socket.create_connection((endpoint[0], int(endpoint[1])),
                                            timeout=max(0.1, deadline - time.monotonic()))
            sock.sendall((json.dumps({"hello": self.rank}) + "\n").encode())
        except OSError as e:
            return (f"rank {self.rank} (host {socket.gethostname()}) could not connect to "
                    f"rank 0 at {endpoint[0]}:{endpoint[1]}: {e}")
        sock.setblocking(False)
        self._peers[0] = sock
        return None

    def close(self) -> None:
        """Say goodbye (a clean end, unless a failure is known) and stop the thread."""
        if self._thread is None:
            return
        with self._lock:
            clean = not self._declared and not self._exiting_with_error
            if clean:
                for sock in self._peers.values():
                    _send(sock, {"type": "bye", "rank": self.rank})
        if self.witness is not None:
            self.witness.close(clean)
        _close_all(self._links)
        self._stop.set()
        self._thread.join(timeout=5)
        self._thread = None
        for sock in self._peers.values():
            try:
                sock.close()
            except OSError:
                pass
        if self._server is not None:
            self._server.close()
        self._peers.clear()

    def describe(self, rank: int) -> str:
        """``rank N``, with its hostname and address when it runs on another host than this
        rank (what a user needs to find an unreachable host)."""
        where = self._where.get(rank)
        return f"rank {rank} ({where})" if where else f"rank {rank}"

    # ---------------------------------------------------------------------- failures
    def _declare(self, failed_rank: int, op: str, error: str) -> None:
        """Record a failure of ``failed_rank`` (first one wins), relay it, print it, and arm
        the grace timer that ends this process. The failure becomes visible to this rank's
        main thread (which then stops and may exit at once) only after all of that is done."""
        message = (f"pyg_sar: rank {self.rank} stops: {self.describe(failed_rank)} failed in "
                   f"{op}: {error}")
        quiet = error == INTERRUPTED  # the user's Ctrl-C, reported once by the program
        with self._lock:
            if self._declared:
                return
            self._declared = True
            if self.rank == 0:
                for r, sock in self._peers.items():
                    if r != failed_rank:
                        _send(sock, {"type": "fail", "rank": failed_rank, "op": op,
                                     "error": error})
            witness = self.witness
            if failed_rank == self.rank:
                if witness is not None:
                    witness.send({"own": True, "op": op, "error": error})
            else:
                if witness is not None:
                    witness.send({"failure": message, "failed_rank": failed_rank,
                                  "failed_op": op, "failed_error": error})
                if not quiet:
                    print(message, file=sys.stderr, flush=True)
                if witness is not None:  # nothing (more) for the witness to say
                    witness.send({"printed": True})
            self.failed_rank, self.failure, self.interrupted = failed_rank, message, quiet
        if failed_rank != self.rank:
            timer = threading.Timer(self.grace, _hard_exit, args=(message, self.grace))
            timer.daemon = True
            timer.start()

    def declare_silent(self, silence: float) -> None:
        """Declare lost the peer heard from least recently, if it has been silent for at least
        ``silence`` seconds (a live peer beats every ``heartbeat`` s from a thread). Ranks
        other than 0 hear only from rank 0, the relay."""
        now = time.monotonic()
        silent = {r: now - seen for r, seen in list(self._last_seen.items())
                  if r not in self._left and now - seen >= silence}
        if silent:
            r = max(silent, key=silent.get)
            self._left.add(r)
            self._declare(r, self._ops.get(r, "?"), _unheard(silent[r]))

    def report_own_failure(self, error: str) -> None:
        op = current_operation()
        if self.rank != 0:
            with self._lock:
                _send(self._peers[0], {"type": "fail", "rank": self.rank, "op": op,
                                       "error": error})
        self._declare(self.rank, op, error)

    # ------------------------------------------------------------------------ thread
    def _run(self) -> None:
        next_beat, sent = 0.0, None
        while not self._stop.is_set():
            now = time.monotonic()
            op = current_operation()
            # A beat every `heartbeat` s, and soon after the operation changes, so that the
            # operation named for a killed rank is the one it was in (at most 10 beats/s).
            if now >= next_beat or op != sent:
                with self._lock:
                    for sock in self._peers.values():
                        _send(sock, {"type": "beat", "rank": self.rank, "op": op})
                if op != sent and self.witness is not None:
                    self.witness.send({"op": op})
                next_beat, sent = now + self.heartbeat, op
            socks = [s for r, s in self._peers.items() if r not in self._left]
            try:
                ready, _, _ = select.select(socks, [], [], min(0.1, self.heartbeat))
            except (OSError, ValueError):
                return  # closed under us: shutting down
            for r, sock in list(self._peers.items()):
                if sock in ready:
                    self._receive(r)
            now = time.monotonic()
            for r, seen in self._last_seen.items():
                if r not in self._left and now - seen > self.dead_after:
                    self._left.add(r)
                    self._declare(r, self._ops.get(r, "?"), _unheard(now - seen))

    def _receive(self, r: int) -> None:
        msgs = self._readers[r].read()
        if msgs is None:
            self._left.add(r)
            if r == 0:
                self._released.set()
            if not self._stop.is_set() and not self._said_bye(r):
                who = "the relay" if r == 0 and self.rank != 0 else "its process"
                self._declare(r, self._ops.get(r, "?"),
                              f"{who} exited or was killed (connection closed without a clean "
                              f"shutdown)")
            return
        self._last_seen[r] = time.monotonic()
        for msg in msgs:
            kind = msg.get("type")
            if kind == "beat":
                self._ops[int(msg["rank"])] = str(msg.get("op"))
            elif kind == "fail":
                self._declare(int(msg["rank"]), str(msg.get("op")), str(msg.get("error")))
            elif kind == "release":
                self._released.set()
            elif kind == "bye":
                self._bye.add(int(msg["rank"]))
                if int(msg["rank"]) == r:
                    self._left.add(r)
                if self.rank == 0:  # relay: others must not mistake its exit for a failure
                    with self._lock:
                        for q, sock in self._peers.items():
                            if q != r:
                                _send(sock, {"type": "bye", "rank": int(msg["rank"])})

    def _said_bye(self, r: int) -> bool:
        return r in self._bye


def _unheard(seconds: float) -> str:
    """The error of a peer lost for want of heartbeats."""
    return (f"no heartbeat for {seconds:.0f} s (unreachable: host down, link cut, or process "
            f"stopped)")


def _hard_exit(message: str, grace: float) -> None:
    sys.stderr.write(f"{message}\npyg_sar: the process did not end within {grace:.0f} s of "
                     f"the failure; exiting with status 1\n")
    sys.stderr.flush()
    os._exit(1)


def _excepthook(exc_type, exc, tb) -> None:
    if issubclass(exc_type, KeyboardInterrupt) and not issubclass(exc_type, PeerFailure):
        try:
            report_interrupt()  # interrupted, not failed
        except Exception:  # noqa: BLE001 - never hide the original error
            pass
    if _ACTIVE is not None and not issubclass(exc_type, (KeyboardInterrupt, PeerFailure)):
        try:
            report_failure(exc)
        except Exception:  # noqa: BLE001 - never hide the original error
            pass
    _ORIGINAL_HOOK(exc_type, exc, tb)
    if _ACTIVE is not None:
        _ACTIVE._exiting_with_error = True


_ORIGINAL_HOOK = sys.excepthook


def _exit_fast_after_failure() -> None:
    """At exit of a failed job, skip what can block on a dead peer (MPI_Finalize, gloo
    teardown). Registered after mpi4py's own handler, so it runs before it."""
    dog = _ACTIVE
    if dog is not None and (dog.failure is not None or dog._exiting_with_error):
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(130 if dog.interrupted else 1)  # 128 + SIGINT after an interrupt


def start_watchdog(comm, host: str, timeout: float, heartbeat: float = HEARTBEAT_S,
                   dead_after: float = DEAD_AFTER_S, grace: float = GRACE_S) -> Watchdog:
    """Start this rank's watchdog (collective over ``comm``); see the module docstring."""
    global _ACTIVE, _HOOKS_INSTALLED
    dog = Watchdog(comm.rank, comm.world_size, heartbeat, dead_after, grace)
    dog.connect(comm, host, timeout)
    _ACTIVE = dog
    set_operation("init", waiting=False)
    if not _HOOKS_INSTALLED:
        sys.excepthook = _excepthook
        atexit.register(_exit_fast_after_failure)
        _HOOKS_INSTALLED = True
    return dog


def stop_watchdog() -> None:
    """Stop this rank's watchdog after a clean end (called by :func:`pyg_sar.shutdown`)."""
    global _ACTIVE
    dog, _ACTIVE = _ACTIVE, None
    if dog is not None:
        dog.close()
