"""The witness process (``pyg_sar/distributed/witness.py``), driven directly: the rank that
died first is named by every witness, whatever order the launcher's kills come in."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid

import pytest

from pyg_sar.distributed import watchdog

SCRIPT = os.path.join(os.path.dirname(watchdog.__file__), "witness.py")
KILLED = "exited or was killed"


def _start(job: str, rank: int, *msgs: dict) -> subprocess.Popen:
    proc = subprocess.Popen([sys.executable, "-I", "-S", SCRIPT], stdin=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    for msg in ({"job": job, "rank": rank}, *msgs):
        proc.stdin.write((json.dumps(msg) + "\n").encode())
    proc.stdin.flush()
    return proc


def _end(proc: subprocess.Popen) -> str:
    """The rank 'dies' (its pipe closes); returns what its witness printed."""
    proc.stdin.close()
    return _collect(proc)


def _collect(proc: subprocess.Popen) -> str:
    err = proc.stderr.read()
    assert proc.wait(timeout=30) == 0, err
    return err.decode()


@pytest.fixture
def job() -> str:
    return uuid.uuid4().hex


def _end_in_order(first: subprocess.Popen, *rest: subprocess.Popen) -> list[str]:
    """Close ``first`` and, a moment later (as a launcher's clean-up would), the others."""
    first.stdin.close()
    time.sleep(0.05)
    for proc in rest:
        proc.stdin.close()
    return [_collect(proc) for proc in (first, *rest)]


def test_killed_rank_is_named_by_every_witness(job):
    w0 = _start(job, 0, {"op": "all_to_all"})
    w1 = _start(job, 1, {"op": "computation (last communication: all_reduce)"})
    w2 = _start(job, 2, {"op": "irecv from rank 1"})
    dead, *stopped = _end_in_order(w1, w0, w2)
    assert dead.strip() == (f"pyg_sar: rank 1 failed in computation (last communication: "
                            f"all_reduce): its process {KILLED} (connection closed without a "
                            f"clean shutdown)")
    for r, text in zip((0, 2), stopped):
        assert text.startswith(f"pyg_sar: rank {r} stops: rank 1 failed in computation (last "
                               f"communication: all_reduce): its process {KILLED}"), text


def test_raising_rank_is_named_with_its_error(job):
    w0 = _start(job, 0, {"op": "all_reduce"})
    w1 = _start(job, 1, {"own": True, "op": "computation (last communication: all_to_all)",
                         "error": "ValueError: boom"})
    dead, stopped = _end_in_order(w1, w0)
    assert dead == ""  # the rank printed its own traceback
    assert stopped.strip() == ("pyg_sar: rank 0 stops: rank 1 failed in computation (last "
                               "communication: all_to_all): ValueError: boom")


def test_silent_after_a_clean_end_or_a_printed_message(job):
    assert _end(_start(job, 0, {"op": "all_reduce"}, {"bye": True})) == ""
    message = "pyg_sar: rank 0 stops: rank 2 failed in all_reduce: ValueError: x"
    assert _end(_start(job, 0, {"failure": message, "failed_rank": 2, "failed_op": "all_reduce",
                                "failed_error": "ValueError: x"}, {"printed": True})) == ""


def test_a_known_failure_not_yet_printed_is_printed(job):
    """The rank learnt of the failure but was killed before it could print it."""
    message = "pyg_sar: rank 0 stops: rank 2 failed in all_reduce: ValueError: x"
    w0 = _start(job, 0, {"failure": message, "failed_rank": 2, "failed_op": "all_reduce",
                         "failed_error": "ValueError: x"})
    w1 = _start(job, 1, {"op": "all_reduce"})
    first, second = _end_in_order(w0, w1)
    assert first.strip() == message
    # w0 passed on what it knew: rank 2 (on another host) failed, not rank 0.
    assert second.strip() == ("pyg_sar: rank 1 stops: rank 2 failed in all_reduce: "
                              "ValueError: x")


@pytest.mark.skipif(not hasattr(os, "memfd_create"), reason="needs os.memfd_create (Linux)")
def test_rank_publishes_its_operation_to_the_witness(job, capfd):
    """The Witness client shares the current operation through memory: the witness names the
    operation at the moment of death, not the last one a heartbeat carried."""
    witness = watchdog.Witness(job, 3)
    try:
        watchdog.set_operation("all_to_all")
        watchdog.done_operation()
        watchdog.set_operation("isend to rank 5")
    finally:
        witness.close(clean=False)
        witness._proc.wait(timeout=30)
        watchdog.set_operation("starting", waiting=False)
    err = capfd.readouterr().err
    assert f"pyg_sar: rank 3 failed in isend to rank 5: its process {KILLED}" in err, err


def test_a_clean_end_that_stops_the_others_is_named(job):
    """A rank that shut pyg_sar down cleanly and then exited with an error status: mpiexec
    kills the others, which must not be blamed."""
    w3 = _start(job, 3, {"op": "all_reduce"}, {"bye": True})
    w0 = _start(job, 0, {"op": "all_reduce"})
    first, second = _end_in_order(w3, w0)
    assert first == ""
    assert second.strip() == ("pyg_sar: rank 0 stops: rank 3 ended first (it shut pyg_sar down "
                              "cleanly, then its process exited: see its exit status)")


def test_a_later_death_is_a_failure_of_its_own(job):
    """Ending well after the first rank (beyond a launcher's clean-up window) is not blamed on
    it."""
    from pyg_sar.distributed.witness import CLEANUP_S, LINGER_S
    w1 = _start(job, 1, {"op": "all_reduce"}, {"bye": True})
    w0 = _start(job, 0, {"op": "isend to rank 2"})
    w1.stdin.close()
    time.sleep((CLEANUP_S + LINGER_S) / 2)  # w1 still holds the claim
    assert w1.poll() is None
    assert _end(w0).strip() == (f"pyg_sar: rank 0 failed in isend to rank 2: its process "
                                f"{KILLED} (connection closed without a clean shutdown)")
    assert _collect(w1) == ""
