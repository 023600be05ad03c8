r"""The watchdog's TCP hub: how every rank learns at once that another rank failed.

A side channel independent of the data communicator (so it works the same under ``mpiexec``,
``torchrun`` and plain processes): every rank keeps one TCP connection to rank 0, which relays.
A background thread on each rank

* sends a heartbeat with the operation the rank is in (an
  :class:`~pyg_sar.distributed.operations.OperationTracker`) every ``heartbeat`` seconds;
* notices a peer that died: its connection closes at once (the kernel closes the sockets of a
  killed process), or, for a lost host, no heartbeat for ``dead_after`` seconds;
* relays a rank's own failure (:meth:`FailureHub.report_own_failure`) to every rank with the
  operation it was in;
* rank 0: learns *why* a rank with a witness ended from that witness
  (:mod:`pyg_sar.distributed.witness`), which connects to the hub once its rank is gone (say,
  killed by the kernel's OOM killer on its host): rank 0 waits up to :data:`WHY_S` for it
  before declaring the failure, so that every rank, on every host, names the cause.

A rank that learns of a failure prints one line naming the failed rank and its operation
(and, for a rank on another host, that host's name and the address it connected from); then
:meth:`FailureHub.check` raises :class:`PeerFailure` with that message. Timeouts are generous
and heartbeats come from a thread, so a rank that is merely slow (an oversubscribed host) is
never declared dead. An interrupt (Ctrl-C) travels the same way but quietly: no rank prints it
and :meth:`~FailureHub.check` raises :class:`PeerInterrupted` (a ``KeyboardInterrupt``).

The hub only detects and relays: what a process does about a failure (ending itself after a
grace period, skipping MPI finalisation) is :mod:`pyg_sar.distributed.exit_hooks`'s job, and
:mod:`pyg_sar.distributed.supervision` puts the pieces together.
"""
from __future__ import annotations

import json
import os
import select
import socket
import sys
import threading
import time
from collections.abc import Callable
from typing import Optional

from pyg_sar.distributed.operations import OperationTracker
from pyg_sar.distributed.witness_link import Witness, close_all, link_witnesses

HEARTBEAT_S = 2.0
DEAD_AFTER_S = 45.0
DIAGNOSIS_S = 30.0  # hang detector: after a broken connection, the news of why comes at once
TIMEOUT_DIAGNOSIS_S = 3.0  # after a timeout, which live peers cause too
SILENT_BEATS = 5  # after a timeout, a peer silent this many heartbeats is unreachable
# Rank 0: how long to wait, after a witnessed rank's connection closed, for its witness to say
# why (it does within milliseconds: it sees the same close; this bounds a lost message).
WHY_S = 1.0
KILLED = "exited or was killed (connection closed without a clean shutdown)"

# The error a rank reports when it was interrupted: its peers stop without printing anything.
INTERRUPTED = "interrupted (KeyboardInterrupt)"


class PeerFailure(RuntimeError):
    """Another rank failed; this rank cannot go on. The message names the rank and operation."""


class PeerInterrupted(PeerFailure, KeyboardInterrupt):
    """Another rank was interrupted (Ctrl-C): this one stops as if it had been interrupted too."""


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



class FailureHub:
    """The side channel of one rank (rank 0 hosts the relay); see the module docstring.

    Args:
        rank, world_size: this rank and the number of ranks.
        heartbeat: seconds between heartbeats.
        dead_after: a peer silent this long is declared lost.
        tracker: the operation this rank is in (sent with every heartbeat).
        on_peer_failure: called with the message once another rank's failure is declared
            (after it was printed and relayed), from whichever thread declared it.
    """

    def __init__(self, rank: int, world_size: int, heartbeat: float = HEARTBEAT_S,
                 dead_after: float = DEAD_AFTER_S, *,
                 tracker: Optional[OperationTracker] = None,
                 on_peer_failure: Optional[Callable[[str], None]] = None) -> None:
        self.rank, self.world_size = rank, world_size
        self.heartbeat, self.dead_after = heartbeat, dead_after
        self.tracker = tracker if tracker is not None else OperationTracker()
        self.on_peer_failure = on_peer_failure
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
        self.exiting_with_error = False  # set by the exit hooks: no clean goodbye
        self._declared = False  # a failure is being or has been declared
        self.witness: Optional[Witness] = None
        self._links: list[socket.socket] = []  # to this host's witnesses, if it has none
        self._accepting_stop = False  # rank 0: stop accepting (set-up failed elsewhere)
        self._accepting: Optional[threading.Thread] = None
        self._released = threading.Event()  # rank 0 reported an interrupt, or has ended
        # Rank 0: ranks that have a witness, what their witnesses said, closed connections
        # waiting for it (rank -> deadline), and the witnesses' connections.
        self._witnessed: set[int] = set()
        self._why: dict[int, tuple[str, str]] = {}
        self._pending: dict[int, float] = {}
        self._reporters: dict[socket.socket, _Lines] = {}

    # ---------------------------------------------------------------- set-up and teardown
    def connect(self, comm, host: str, timeout: float,
                witness: Optional[Witness] = None) -> None:
        """Rendezvous over ``comm`` (collective): rank 0 listens at ``host``, the others
        connect to it; then link this rank to every witness on its host (``witness`` is this
        rank's own, started before, or ``None``) and start the heartbeat thread."""
        try:
            self._connect(comm, host, timeout, witness)
        except BaseException:
            close_all(self._links)
            self._close_sockets()
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
            self._accepting = accepting
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
        self._witnessed = {r for r, e in enumerate(everyone) if e["witness"]}
        if witness is not None:
            if self.rank != 0:  # where to say why its rank ended (rank 0's hub ends with it)
                witness.send({"hub": [endpoint[0], int(endpoint[1])]})
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
        """Say goodbye (a clean end, unless a failure is known), end the witness, stop the
        thread and close every socket. Idempotent."""
        if self._thread is None:
            self._close_sockets()
            return
        with self._lock:
            clean = not self._declared and not self.exiting_with_error
            if clean:
                for sock in self._peers.values():
                    _send(sock, {"type": "bye", "rank": self.rank})
        if self.witness is not None:
            self.witness.close(clean)
        close_all(self._links)
        self._stop.set()
        self._thread.join(timeout=5)
        self._thread = None
        self._close_sockets()

    def _close_sockets(self) -> None:
        self._accepting_stop = True
        if self._accepting is not None:
            self._accepting.join(timeout=5)
            self._accepting = None
        for sock in [*self._peers.values(), *self._reporters]:
            try:
                sock.close()
            except OSError:
                pass
        self._reporters.clear()
        if self._server is not None:
            self._server.close()
            self._server = None
        self._peers.clear()

    def describe(self, rank: int) -> str:
        """``rank N``, with its hostname and address when it runs on another host than this
        rank (what a user needs to find an unreachable host)."""
        where = self._where.get(rank)
        return f"rank {rank} ({where})" if where else f"rank {rank}"

    # ------------------------------------------------------------- what a rank asks of it
    def check(self) -> None:
        """Raise :class:`PeerFailure` (or :class:`PeerInterrupted`) if another rank has failed
        (cheap: reads one attribute)."""
        if self.failure is not None and self.failed_rank != self.rank:
            raise (PeerInterrupted if self.interrupted else PeerFailure)(self.failure)

    def diagnose(self, seconds: Optional[float] = None,
                 timed_out: bool = True) -> Optional[str]:
        """After a communication error, wait for the news of which rank failed.

        A broken connection (``timed_out=False``) means a peer ended, which the hub learns of
        through its own connection (closed, or a relayed failure), so the wait ends on that
        news; :data:`DIAGNOSIS_S` bounds it as a hang detector. A timeout (``timed_out=True``)
        can happen with every peer alive: then it waits :data:`TIMEOUT_DIAGNOSIS_S` only (or
        ``seconds`` when given). If no news came by then, a peer silent for
        :data:`SILENT_BEATS` heartbeats is declared unreachable: a communication timeout
        shorter than ``dead_after`` still names the lost host. Returns the failure message,
        or ``None``.
        """
        if seconds is None:
            seconds = TIMEOUT_DIAGNOSIS_S if timed_out else DIAGNOSIS_S
        deadline = time.monotonic() + seconds
        while self.failure is None and time.monotonic() < deadline:
            time.sleep(0.02)
        if self.failure is None and timed_out:
            self.declare_silent(SILENT_BEATS * self.heartbeat)
        return self.failure if self.failure is not None and self.failed_rank != self.rank \
            else None

    def report_interrupt(self) -> None:
        """Tell every rank that this one was interrupted (unless a failure is already known)."""
        if not self._declared:
            self.report_own_failure(INTERRUPTED)

    def release_others(self) -> None:
        """Rank 0: tell every rank that it may exit now (after an interrupt)."""
        with self._lock:
            for sock in self._peers.values():
                _send(sock, {"type": "release"})

    def wait_released(self, seconds: float) -> bool:
        """Wait until rank 0 released this rank or ended (at most ``seconds``)."""
        return self._released.wait(seconds)

    # ---------------------------------------------------------------------- failures
    def _declare(self, failed_rank: int, op: str, error: str) -> None:
        """Record a failure of ``failed_rank`` (first one wins), relay it, print it, and call
        :attr:`on_peer_failure` (which may end this process). The failure becomes visible to
        this rank's main thread (which then stops and may exit at once) only after all of that
        is done."""
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
        if failed_rank != self.rank and self.on_peer_failure is not None:
            self.on_peer_failure(message)

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
        op = self.tracker.current()
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
            op = self.tracker.current()
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
            server = self._server if self.rank == 0 else None
            extra = ([server] if server is not None else []) + list(self._reporters)
            try:
                ready, _, _ = select.select(socks + extra, [], [], min(0.1, self.heartbeat))
            except (OSError, ValueError):
                return  # closed under us: shutting down
            for r, sock in list(self._peers.items()):
                if sock in ready:
                    self._receive(r)
            if server is not None and server in ready:
                self._accept_reporter(server)
            for sock in list(self._reporters):
                if sock in ready:
                    self._read_reporter(sock)
            now = time.monotonic()
            for r, deadline in list(self._pending.items()):
                if now >= deadline:  # its witness said nothing: as without a witness
                    del self._pending[r]
                    self._declare(r, self._ops.get(r, "?"), f"its process {KILLED}")
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
                if r in self._why:  # its witness was quicker than the close
                    self._declare(r, *self._why.pop(r))
                elif self.rank == 0 and r in self._witnessed:
                    self._await_why(r)
                else:
                    who = "the relay" if r == 0 and self.rank != 0 else "its process"
                    self._declare(r, self._ops.get(r, "?"), f"{who} {KILLED}")
            return
        self._last_seen[r] = time.monotonic()
        for msg in msgs:
            kind = msg.get("type")
            if kind == "beat":
                self._ops[int(msg["rank"])] = str(msg.get("op"))
            elif kind == "fail":
                self._declare(int(msg["rank"]), str(msg.get("op")), str(msg.get("error")))
            elif kind == "lost":  # rank 0 waits for the cause (see _await_why)
                self._provisional(int(msg["rank"]), str(msg.get("op")))
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

    # ------------------------------------------------- rank 0: why a witnessed rank ended
    def _await_why(self, r: int) -> None:
        """Rank ``r`` ended without a word: wait up to :data:`WHY_S` for its witness. Meanwhile
        every rank's witness holds the plain news (``lost``), printed should its rank be killed
        (by a launcher's clean-up) before the wait ends, as it would have been without it."""
        self._pending[r] = time.monotonic() + WHY_S
        op = self._ops.get(r, "?")
        with self._lock:
            for q, sock in self._peers.items():
                if q != r:
                    _send(sock, {"type": "lost", "rank": r, "op": op})
        self._provisional(r, op)

    def _provisional(self, r: int, op: str) -> None:
        """Tell this rank's witness that rank ``r`` ended, cause still unknown."""
        if self.witness is not None and not self._declared:
            self.witness.send({"failure": f"pyg_sar: rank {self.rank} stops: "
                                          f"{self.describe(r)} failed in {op}: its process "
                                          f"{KILLED}",
                               "failed_rank": r, "failed_op": op,
                               "failed_error": f"its process {KILLED}"})

    def _accept_reporter(self, server: socket.socket) -> None:
        try:
            conn, _ = server.accept()
        except OSError:  # BlockingIOError / timeout: nobody after all
            return
        conn.setblocking(False)
        self._reporters[conn] = _Lines(conn)

    def _read_reporter(self, sock: socket.socket) -> None:
        """A witness's line ``{"type": "why", "rank": R, "op": OP, "error": E}``."""
        msgs = self._reporters[sock].read()
        for msg in msgs or []:
            try:
                kind, r = msg.get("type"), int(msg["rank"])
            except (AttributeError, KeyError, TypeError, ValueError):
                continue
            if kind != "why" or r not in self._witnessed or r == self.rank:
                continue
            why = (str(msg.get("op") or self._ops.get(r, "?")), str(msg.get("error")))
            if self._pending.pop(r, None) is not None:
                self._declare(r, *why)
            elif r not in self._left:  # the close is still to come
                self._why[r] = why
        if msgs is None:
            del self._reporters[sock]
            sock.close()


def _unheard(seconds: float) -> str:
    """The error of a peer lost for want of heartbeats."""
    return (f"no heartbeat for {seconds:.0f} s (unreachable: host down, link cut, or process "
            f"stopped)")
