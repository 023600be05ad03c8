"""A failure report names a rank on another host by that host's name and address (issue 13:
a cut link must end the job with an error naming the unreachable rank and host); ranks on
this rank's own host are named as before. In-process: the failure hub's rendezvous between
threads over loopback, with the host identities each rank publishes rewritten."""
import sys
import threading
from pathlib import Path

from pyg_sar.distributed.hub import FailureHub

sys.path.insert(0, str(Path(__file__).resolve().parent))
from thread_allgather import ThreadComm  # noqa: E402 - tests/distributed


def _separate_hosts(everyone):
    """Every rank on a host of its own, named node<r>."""
    if isinstance(everyone[0], dict) and "hostname" in everyone[0]:
        return [dict(e, host=f"node{r}/1", hostname=f"node{r}") for r, e in enumerate(everyone)]
    return everyone


def _connected(world_size, tamper):
    comm = ThreadComm(world_size, tamper)
    dogs = [FailureHub(r, world_size, 2.0, 45.0) for r in range(world_size)]
    errors = []

    def connect(r):
        try:
            dogs[r]._connect(comm.view(r), "127.0.0.1", 60.0, None)
        except BaseException as e:  # noqa: BLE001 - reported by the assertion below
            errors.append(e)
    threads = [threading.Thread(target=connect, args=(r,)) for r in range(world_size)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not errors and not any(t.is_alive() for t in threads), errors
    return dogs


def _close(dogs):
    for dog in dogs:
        dog.close()
        assert not dog._peers and dog._server is None


def test_failure_names_host_and_address_of_a_rank_on_another_host():
    dogs = _connected(3, _separate_hosts)
    try:
        assert dogs[0].describe(2) == "rank 2 (host node2, 127.0.0.1)"
        assert dogs[2].describe(0) == "rank 0 (host node0, 127.0.0.1)"
        assert dogs[1].describe(2) == "rank 2 (host node2, 127.0.0.1)"  # learnt over comm
        dogs[0]._declare(2, "all_reduce", "no heartbeat for 9 s")  # prints it; no exit hooks
        assert dogs[0].failure == ("pyg_sar: rank 0 stops: rank 2 (host node2, 127.0.0.1) "
                                   "failed in all_reduce: no heartbeat for 9 s")
    finally:
        _close(dogs)


def test_ranks_on_the_same_host_are_named_as_before():
    dogs = _connected(2, None)
    try:
        assert dogs[0].describe(1) == "rank 1"
        assert dogs[1].describe(0) == "rank 0"
    finally:
        _close(dogs)


def test_a_timeout_names_a_silent_peer_on_another_host():
    """A communication timeout shorter than the heartbeat deadline (a cut link): the peer
    heard from least recently, silent for SILENT_BEATS heartbeats, is named with its host;
    while every peer beats, a timeout is left to the transport's own message."""
    import time
    dogs = _connected(2, _separate_hosts)
    try:
        now = time.monotonic()
        dogs[0]._last_seen = {1: now - 1.0}  # heard a second ago: alive
        assert dogs[0].diagnose(seconds=0.05, timed_out=True) is None
        assert dogs[0].failure is None
        dogs[0]._last_seen = {1: now - 30.0}  # silent past SILENT_BEATS * 2 s
        assert dogs[0].diagnose(seconds=0.05, timed_out=False) is None  # closed
        got = dogs[0].diagnose(seconds=0.05, timed_out=True)
        assert got is not None and got.startswith(
            "pyg_sar: rank 0 stops: rank 1 (host node1, 127.0.0.1) failed in ")
        assert "no heartbeat for 30 s (unreachable: host down, link cut" in got
    finally:
        _close(dogs)
