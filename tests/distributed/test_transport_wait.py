"""The MPI transport's wait, in one process (mpi4py singleton, COMM_SELF): a timeout is a typed
CommTimeout naming the operation, a WaitObserver sees the wait and can end it, and the transport
works without any observer (failure supervision is a layer of its own)."""
import subprocess
import sys
import textwrap

import pytest

from pyg_sar.testing import has_mpi

SCRIPT = textwrap.dedent("""
    import json, time
    import torch
    from mpi4py import MPI
    from pyg_sar.distributed.transport import CommTimeout, MPICommunicator

    comm = MPICommunicator(MPI.COMM_SELF.Dup(), timeout=5.0)
    out = {}
    # A message to self arrives: no observer needed.
    got = torch.zeros(4)
    r = comm.irecv(got, 0, tag=1); comm.isend(torch.arange(4.0), 0, tag=1).wait(); r.wait()
    out["roundtrip"] = got.tolist()
    # Nothing is sent: a typed timeout.
    t = time.monotonic()
    try:
        comm.irecv(torch.zeros(2), 0, tag=2).wait(timeout=0.3)
    except CommTimeout as e:
        out["timeout"] = [type(e).__name__, e.operation, e.seconds, str(e)]
    out["timeout_s"] = time.monotonic() - t

    class Observer:
        def __init__(self):
            self.calls = []
        def begin(self, op):
            self.calls.append(("begin", op))
        def poll(self):
            self.calls.append(("poll",))
            if sum(c[0] == "poll" for c in self.calls) >= 5:
                raise KeyError("peer failed")
        def end(self):
            self.calls.append(("end",))
        def failed(self, error):
            return ValueError("diagnosed: " + str(error))

    comm.observer = Observer()
    try:
        comm.irecv(torch.zeros(2), 0, tag=3).wait(timeout=30)
    except KeyError as e:
        out["ended_by_observer"] = str(e)
    out["calls"] = [c[0] for c in comm.observer.calls][:2] + [comm.observer.calls[0][1]]
    comm.observer.calls.clear()
    comm.all_reduce(torch.ones(3))
    out["collective"] = [c[0] for c in comm.observer.calls if c[0] != "poll"]
    comm.observer = Observer()
    comm.observer.poll = lambda: None
    try:
        comm.irecv(torch.zeros(2), 0, tag=4).wait(timeout=0.2)
    except ValueError as e:
        out["failed_hook"] = str(e)
    comm.close()
    print("RESULT" + json.dumps(out))
""")


@pytest.fixture(scope="module")
def result():
    if not has_mpi():
        pytest.skip("needs mpi4py and an MPI library")
    proc = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True,
                          timeout=300)
    line = next((x for x in proc.stdout.splitlines() if x.startswith("RESULT")), None)
    assert line is not None, proc.stdout + proc.stderr
    import json
    return json.loads(line[len("RESULT"):])


def test_roundtrip_without_observer(result):
    assert result["roundtrip"] == [0.0, 1.0, 2.0, 3.0]


def test_timeout_is_typed_and_names_the_operation(result):
    name, operation, seconds, text = result["timeout"]
    assert (name, operation, seconds) == ("CommTimeout", "irecv from rank 0 (tag 2)", 0.3)
    assert text.startswith("pyg_sar: rank 0 timed out after 0.3 s in irecv from rank 0 (tag 2)")
    assert result["timeout_s"] < 30  # the deadline, not the communicator's 5 s x many


def test_observer_sees_and_can_end_a_wait(result):
    assert result["ended_by_observer"] == "'peer failed'"
    assert result["calls"] == ["begin", "poll", "irecv from rank 0 (tag 3)"]
    assert result["collective"] == ["begin", "end"]
    assert result["failed_hook"].startswith("diagnosed: pyg_sar: rank 0 timed out")


def test_spin_budget_grows_with_the_bytes_a_request_moves():
    """A wait spins (MPI_Test back to back) for SPIN_S plus the transfer's time at SPIN_RATE:
    MPICH moves a large message only inside MPI calls, so a big all-to-all must not fall back
    to 0.1 ms polling after a fixed second."""
    from pyg_sar.distributed.transport import mpi
    assert mpi.spin_budget(0) == mpi.SPIN_S
    assert mpi.spin_budget(-5) == mpi.SPIN_S
    assert mpi.spin_budget(int(4 * mpi.SPIN_RATE)) == pytest.approx(mpi.SPIN_S + 4.0)
    assert mpi.spin_budget(10**6) < mpi.spin_budget(10**8) < mpi.spin_budget(10**9)
