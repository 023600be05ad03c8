"""A failure report names a rank on another host by that host's name and address (issue 13:
a cut link must end the job with an error naming the unreachable rank and host); ranks on
this rank's own host are named as before. In-process: the failure hub's rendezvous between
threads over loopback, with the host identities each rank publishes rewritten."""
import threading

from pyg_sar.distributed.hub import FailureHub
from tests.distributed.thread_allgather import ThreadComm


def _separate_hosts(everyone):
    """Every rank on a host of its own, named node<r>."""
    if isinstance(everyone[0], dict) and "hostname" in everyone[0]:
        return [dict(e, host=f"node{r}/1", hostname=f"node{r}") for r, e in enumerate(everyone)]
    return everyone


def _connect_all(dogs, connect):
    """``connect(r)`` for every rank at once (each in a thread, as ranks do), checked."""
    errors = []

    def run(r):
        try:
            connect(r)
        except BaseException as e:  # noqa: BLE001 - reported by the assertion below
            errors.append(e)
    threads = [threading.Thread(target=run, args=(r,)) for r in range(len(dogs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not errors and not any(t.is_alive() for t in threads), errors
    return dogs


def _connected(world_size, tamper):
    comm = ThreadComm(world_size, tamper)
    dogs = [FailureHub(r, world_size, 2.0, 45.0) for r in range(world_size)]
    return _connect_all(dogs, lambda r: dogs[r]._connect(comm.view(r), "127.0.0.1", 60.0, None))


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


# Rank 0 learns why a rank with a witness ended from that witness (it connects to the hub when
# its rank is gone), and relays the cause to every rank, on every host.
OOM_ERROR = ("killed by the kernel's OOM killer on host node2 (memory limit 1.00 GiB of cgroup "
             "/sys/fs/cgroup/memory/job)")


def _running(world_size, tamper, witnesses=None):
    """Hubs as :func:`_connected`, with their heartbeat threads running."""
    comm = ThreadComm(world_size, tamper)
    dogs = [FailureHub(r, world_size, 0.2, 45.0) for r in range(world_size)]
    return _connect_all(dogs, lambda r: dogs[r].connect(comm.view(r), "127.0.0.1", 60.0,
                                                        (witnesses or {}).get(r)))


def _dies(dog):
    """The rank's process ends without a word: its hub's connection just closes."""
    dog._stop.set()
    dog._thread.join(5)
    dog._peers[0].close()


def _wait_failure(dog, seconds=30.0):
    _wait_until(lambda: dog.failure is not None, seconds)
    return dog.failure


def _wait_until(condition, seconds=30.0) -> bool:
    """Poll ``condition`` until it holds (or ``seconds`` pass): events, not fixed sleeps, so a
    loaded machine only makes the test slower."""
    import time
    deadline = time.monotonic() + seconds
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.01)
    return bool(condition())


def _heartbeat_reached_rank_0(dogs, rank: int, op: str) -> bool:
    """Rank 0's hub has heard ``rank``'s heartbeat naming ``op``."""
    return _wait_until(lambda: dogs[0]._ops.get(rank) == op)


def _witnessed_rank_2(everyone):
    """Separate hosts, and rank 2 has a witness (on its own host: not reachable from here)."""
    everyone = _separate_hosts(everyone)
    if isinstance(everyone[0], dict) and "witness" in everyone[0]:
        everyone[2] = dict(everyone[2], witness="0" * 24)
    return everyone


def test_a_witness_tells_rank_0_why_its_rank_ended_and_rank_0_relays_it():
    """The witness's report comes first here (the close right after): the hub keeps it and
    names the cause, with the host, on rank 0 and on rank 1."""
    from pyg_sar.distributed.witness import _tell_hub
    dogs = _running(3, _witnessed_rank_2)
    try:
        endpoint = ["127.0.0.1", dogs[0]._server.getsockname()[1]]
        _tell_hub(endpoint, {"rank": 2, "op": "all_to_all (layer 2)", "error": OOM_ERROR})
        _dies(dogs[2])
        for r in (0, 1):
            assert _wait_failure(dogs[r]) == (
                f"pyg_sar: rank {r} stops: rank 2 (host node2, 127.0.0.1) failed in "
                f"all_to_all (layer 2): {OOM_ERROR}")
    finally:
        _close(dogs)


def test_without_word_from_its_witness_the_rank_is_named_as_killed():
    """No report within WHY_S: the failure is declared as without a witness (the operation
    from the heartbeats)."""
    import time
    dogs = _running(3, _witnessed_rank_2)
    try:
        dogs[2].tracker.begin("all_reduce")
        assert _heartbeat_reached_rank_0(dogs, 2, "all_reduce")
        _dies(dogs[2])
        start = time.monotonic()
        got = _wait_failure(dogs[1])
        assert time.monotonic() - start >= 0.5  # it waited for the witness (WHY_S = 1 s)
        assert got == ("pyg_sar: rank 1 stops: rank 2 (host node2, 127.0.0.1) failed in "
                       "all_reduce: its process exited or was killed (connection closed "
                       "without a clean shutdown)")
    finally:
        _close(dogs)


def test_a_real_witness_learns_the_hub_and_reports_its_rank_s_end():
    """Rank 2's witness (a process) gets the hub's address at connect time; when rank 2 ends
    unannounced it says why, with the operation it last heard of (not the heartbeats')."""
    import subprocess

    from pyg_sar.distributed.witness_link import Witness
    w2 = Witness(2, options={"memory": False}, stderr=subprocess.PIPE)
    try:
        dogs = _running(3, _separate_hosts, {2: w2})
        try:
            # after rank 0's hub has heard rank 2 beat once (an event, not a fixed sleep)
            connected = dogs[0]._last_seen[2]
            assert _wait_until(lambda: dogs[0]._last_seen[2] > connected)
            w2.send({"op": "gather of layer 1"})
            _dies(dogs[2])
            w2.close(clean=False)
            killed = ("its process exited or was killed (connection closed without a clean "
                      "shutdown)")
            assert _wait_failure(dogs[1]) == (
                f"pyg_sar: rank 1 stops: rank 2 (host node2, 127.0.0.1) failed in gather of "
                f"layer 1: {killed}")
        finally:
            _close(dogs)
        _, err = w2.process.communicate(timeout=60)
        assert err.decode().strip() == f"pyg_sar: rank 2 failed in gather of layer 1: {killed}"
    finally:
        w2.close(clean=False)


def test_while_rank_0_waits_every_witness_holds_the_plain_news(monkeypatch):
    """A launcher may kill the other ranks while rank 0 waits for the cause (mpiexec does at
    once): rank 0 has told every rank's witness that rank 2 ended, so a rank killed in the
    wait still has it named by its witness, as it was before rank 0 waited."""
    import subprocess

    from pyg_sar.distributed import hub
    from pyg_sar.distributed.witness_link import Witness
    monkeypatch.setattr(hub, "WHY_S", 60.0)  # rank 0 is still waiting when rank 1 is killed
    w1 = Witness(1, options={"memory": False}, stderr=subprocess.PIPE)
    try:
        dogs = _running(3, _witnessed_rank_2, {1: w1})
        try:
            dogs[2].tracker.begin("all_reduce")
            assert _heartbeat_reached_rank_0(dogs, 2, "all_reduce")
            told = threading.Event()  # rank 1's hub handed the plain news to its witness
            provisional = dogs[1]._provisional

            def spy(r, op):
                provisional(r, op)
                told.set()

            dogs[1]._provisional = spy
            _dies(dogs[2])
            assert told.wait(30), "rank 0 did not pass rank 2's end on to rank 1"
            assert dogs[0].failure is None and dogs[1].failure is None
            _dies(dogs[1])
            w1.close(clean=False)
            _, err = w1.process.communicate(timeout=60)
        finally:
            _close(dogs)
        assert err.decode().strip() == (
            "pyg_sar: rank 1 stops: rank 2 (host node2, 127.0.0.1) failed in all_reduce: its "
            "process exited or was killed (connection closed without a clean shutdown)")
    finally:
        w1.close(clean=False)
