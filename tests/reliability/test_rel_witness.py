"""The witness process (``pyg_sar/distributed/witness.py``), driven directly through the
rank-side client (``witness_link.Witness``): the rank that ended first is named by every witness,
whatever order the witnesses run in.

The test process plays every rank. A rank "dies" when it closes its links and its state stream
(``Witness.close(clean=False)``, what the kernel does for a killed process); the order of
deaths is the order of those calls, so nothing here depends on how fast a witness runs. The
clean-up window is widened to a hang detector (``WIDE``) where the ends form one burst, and the
one test of an end outside the window waits until the witness has provably seen the first end.
"""
from __future__ import annotations

import json
import os
import select
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pyg_sar.distributed.operations import OperationTracker
from pyg_sar.distributed.witness_link import Witness, link_witnesses

KILLED = "its process exited or was killed (connection closed without a clean shutdown)"
WIDE = {"cleanup_s": 600.0}  # every end in a test is one burst, however slow the machine
HANG_S = 60.0  # hang detector for a witness's output


def _job(n: int, options: dict = WIDE, **kw) -> list[Witness]:
    """``n`` ranks' witnesses (their stderr captured), each rank linked to all of them."""
    ws = [Witness(r, options=options, stderr=subprocess.PIPE, **kw)
          for r in range(n)]
    for w in ws:
        w.link({v.rank: v.token for v in ws}, timeout=HANG_S)
    return ws


def _said(w: Witness) -> str:
    """What the witness printed on stderr, once it has exited (successfully)."""
    _, err = w.process.communicate(timeout=HANG_S)
    assert w.process.returncode == 0, err
    return err.decode()


def _kill(*ranks: Witness) -> None:
    """The ranks die in this order."""
    for w in ranks:
        w.close(clean=False)


OPS = ["all_to_all", "computation (last communication: all_reduce)", "irecv from rank 1"]


def _check_rank_1_named(said: list[str]) -> None:
    assert said[1].strip() == ("pyg_sar: rank 1 failed in computation (last communication: "
                               f"all_reduce): {KILLED}")
    for r in (0, 2):
        assert said[r].strip() == (f"pyg_sar: rank {r} stops: rank 1 failed in computation "
                                   f"(last communication: all_reduce): {KILLED}"), said[r]


def test_killed_rank_is_named_by_every_witness():
    ws = _job(3)
    for w, op in zip(ws, OPS):
        w.send({"op": op})
    _kill(ws[1], ws[0], ws[2])
    _check_rank_1_named([_said(w) for w in ws])


def test_order_is_the_kernels_not_the_witnesses():
    """The witnesses are stopped while the ranks die and resumed in another order (a busy
    host): each still sees the ends in the order they happened."""
    ws = _job(3)
    for w, op in zip(ws, OPS):
        w.send({"op": op})
    for w in ws:
        os.kill(w.process.pid, signal.SIGSTOP)
    try:
        _kill(ws[1], ws[0], ws[2])
    finally:
        for r in (2, 0, 1):
            os.kill(ws[r].process.pid, signal.SIGCONT)
    _check_rank_1_named([_said(w) for w in ws])


def test_a_link_is_ordered_by_its_end_not_by_when_it_was_registered():
    """In process, no scheduling involved: rank 2 links before rank 1, both are registered,
    then rank 1 ends before rank 2. A link registered while its first line was still unread
    would sit on epoll's ready list from then on and be seen to end first."""
    from pyg_sar.distributed import witness as process
    token = os.urandom(8).hex()
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(process.address(token))
    listener.listen(8)
    read_end, write_end = os.pipe()
    links = {}
    try:
        witness = process._Witness({"rank": 0, "listen_fd": listener.detach()}, b"",
                                   stdin=read_end)
        for rank in (2, 1):
            links[rank] = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            links[rank].connect(process.address(token))
            links[rank].sendall(json.dumps({"link": rank, "witness": None}).encode() + b"\n")
        witness._accept()  # both first lines are there: both registered
        assert sorted(witness.witnesses) == [1, 2]
        links.pop(1).close()
        links.pop(2).close()
        while len(witness.ended) < 2:
            witness._step(HANG_S)
        assert [rank for rank, _ in witness.ended] == [1, 2]
    finally:
        for sock in links.values():
            sock.close()
        os.close(read_end)
        os.close(write_end)


def test_raising_rank_is_named_with_its_error():
    w0, w1 = _job(2)
    w0.send({"op": "all_reduce"})
    w1.send({"own": True, "op": "computation (last communication: all_to_all)",
             "error": "ValueError: boom"})
    _kill(w1, w0)
    assert _said(w1) == ""  # the rank printed its own traceback
    assert _said(w0).strip() == ("pyg_sar: rank 0 stops: rank 1 failed in computation (last "
                                 "communication: all_to_all): ValueError: boom")


def test_silent_after_a_clean_end_or_a_printed_message():
    (w,) = _job(1)
    w.send({"op": "all_reduce"})
    w.close(clean=True)
    assert _said(w) == ""
    (w,) = _job(1)
    message = "pyg_sar: rank 0 stops: rank 2 failed in all_reduce: ValueError: x"
    w.send({"failure": message, "failed_rank": 2, "failed_op": "all_reduce",
            "failed_error": "ValueError: x"})
    w.send({"printed": True})
    _kill(w)
    assert _said(w) == ""


def test_a_known_failure_not_yet_printed_is_printed():
    """The rank learnt of the failure but was killed before it could print it."""
    w0, w1 = _job(2)
    message = "pyg_sar: rank 0 stops: rank 2 failed in all_reduce: ValueError: x"
    w0.send({"failure": message, "failed_rank": 2, "failed_op": "all_reduce",
             "failed_error": "ValueError: x"})
    w1.send({"op": "all_reduce"})
    _kill(w0, w1)
    assert _said(w0).strip() == message
    # w0 passed on what it knew: rank 2 (on another host) failed, not rank 0.
    assert _said(w1).strip() == "pyg_sar: rank 1 stops: rank 2 failed in all_reduce: ValueError: x"


@pytest.mark.skipif(not hasattr(os, "memfd_create"), reason="needs os.memfd_create (Linux)")
def test_rank_publishes_its_operation_to_the_witness():
    """The Witness client shares the current operation through memory: the witness names the
    operation at the moment of death, not the last one a message carried."""
    tracker = OperationTracker()
    witness = Witness(3, tracker=tracker, stderr=subprocess.PIPE)
    try:
        witness.link({3: witness.token}, timeout=HANG_S)
        tracker.begin("all_to_all")
        tracker.end()
        tracker.begin("isend to rank 5")
    finally:
        witness.close(clean=False)
    tracker.begin("after the end")  # no longer shared: must not raise
    assert _said(witness).strip() == f"pyg_sar: rank 3 failed in isend to rank 5: {KILLED}"


def test_a_clean_end_that_stops_the_others_is_named():
    """A rank that shut pyg_sar down cleanly and then exited with an error status: mpiexec
    kills the others, which must not be blamed."""
    w0, w1 = _job(2)
    w1.send({"op": "all_reduce"})
    w0.send({"op": "all_reduce"})
    w1.close(clean=True)
    _kill(w0)
    assert _said(w1) == ""
    assert _said(w0).strip() == ("pyg_sar: rank 0 stops: rank 1 ended first (it shut pyg_sar "
                                 "down cleanly, then its process exited: see its exit status)")


def _readline(stream, timeout: float) -> str:
    ready, _, _ = select.select([stream], [], [], timeout)
    assert ready, f"no line within {timeout} s"
    return stream.readline().decode()


def test_a_later_death_is_a_failure_of_its_own():
    """Ending beyond the clean-up window after the first rank is not blamed on it. Rank 0 dies
    only once its witness has seen rank 1 end and the window has provably passed since."""
    window = 0.3
    w0, w1 = _job(2, options={"cleanup_s": window, "trace": True}, stdout=subprocess.PIPE)
    w1.send({"op": "all_reduce"})
    w0.send({"op": "isend to rank 2"})
    w1.close(clean=True)
    assert _readline(w0.process.stdout, HANG_S).strip() == "witness 0: rank 1 ended"
    seen = time.monotonic()  # after the witness took the time of rank 1's end
    while time.monotonic() <= seen + window:  # a lower bound: load only makes it longer
        time.sleep(window)
    _kill(w0)
    assert _said(w1) == ""
    assert _said(w0).strip() == f"pyg_sar: rank 0 failed in isend to rank 2: {KILLED}"


def test_a_rank_without_a_witness_is_still_seen_first():
    """A rank whose witness could not start still links to the others: its end is ordered."""
    w0 = Witness(0, options=WIDE, stderr=subprocess.PIPE)
    w0.link({0: w0.token}, timeout=HANG_S)
    links = link_witnesses(1, None, {0: w0.token}, timeout=HANG_S)
    w0.send({"op": "all_reduce"})
    for sock in links:  # rank 1 dies
        sock.close()
    _kill(w0)
    assert _said(w0).strip() == ("pyg_sar: rank 0 stops: rank 1 ended first (it has no "
                                 "witness to say how)")


RANK_CODE = r"""
import json, subprocess, sys, threading
from pyg_sar.distributed.operations import OperationTracker
from pyg_sar.distributed.witness_link import Witness
rank, err, op = int(sys.argv[1]), sys.argv[2], sys.argv[3]
tracker = OperationTracker()
with open(err, "wb") as f:
    w = Witness(rank, options={"cleanup_s": 600.0}, tracker=tracker, stdout=subprocess.DEVNULL,
                stderr=f)
tracker.begin(op)
print(json.dumps({"token": w.token, "witness": w.process.pid}), flush=True)
w.link({int(r): t for r, t in json.loads(sys.stdin.readline()).items()}, timeout=60)
print("linked", flush=True)
threading.Event().wait()
"""


def _gone(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] in ("Z", "X")
    except OSError:
        return True


def test_killed_processes_are_ordered_by_their_end(tmp_path):
    """Real processes, SIGKILLed as a launcher does: rank 1 first, rank 0 once rank 1 is
    reaped; their witnesses stopped meanwhile and resumed the other way round. The kernel
    closed rank 1's links first, so both witnesses name rank 1."""
    root = Path(__file__).resolve().parents[2]
    env = dict(os.environ, PYTHONPATH=str(root))
    ops = {0: "irecv from rank 1", 1: "all_reduce"}
    ranks = {r: subprocess.Popen([sys.executable, "-c", RANK_CODE, str(r),
                                  str(tmp_path / f"witness{r}.err"), ops[r]], env=env,
                                 stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                 start_new_session=True) for r in (0, 1)}
    witnesses: dict[int, int] = {}
    try:
        info = {r: json.loads(_readline(p.stdout, HANG_S)) for r, p in ranks.items()}
        witnesses = {r: i["witness"] for r, i in info.items()}
        peers = json.dumps({r: i["token"] for r, i in info.items()}) + "\n"
        for p in ranks.values():
            p.stdin.write(peers.encode())
            p.stdin.flush()
        for p in ranks.values():
            assert _readline(p.stdout, HANG_S).strip() == "linked"
        for pid in witnesses.values():
            os.kill(pid, signal.SIGSTOP)
        ranks[1].kill()
        ranks[1].wait(timeout=HANG_S)  # the launcher learns of rank 1's end ...
        ranks[0].kill()  # ... and kills the others
        ranks[0].wait(timeout=HANG_S)
    finally:
        for p in ranks.values():
            if p.poll() is None:
                p.kill()
                p.wait()
        for r in (0, 1):
            if r in witnesses:
                os.kill(witnesses[r], signal.SIGCONT)
    deadline = time.monotonic() + HANG_S
    while not all(_gone(pid) for pid in witnesses.values()):  # not our children: no wait()
        assert time.monotonic() < deadline, "the witnesses did not finish"
        time.sleep(0.05)
    said = {r: (tmp_path / f"witness{r}.err").read_text().strip() for r in (0, 1)}
    assert said[1] == f"pyg_sar: rank 1 failed in all_reduce: {KILLED}"
    assert said[0] == f"pyg_sar: rank 0 stops: rank 1 failed in all_reduce: {KILLED}"
