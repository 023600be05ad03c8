"""``python join_job.py LATE_RANK TIMEOUT RELEASE [mpi]``: rank LATE_RANK never calls
pyg_sar.init (with ``mpi`` it starts MPI first); it stays alive until the file RELEASE exists
(the test creates it once the others have reported), then exits. The others import pyg_sar,
wait for one another (files next to RELEASE), so that their deadlines start together however
long the imports took, then call init with TIMEOUT and print what it raised and when."""
import os
import sys
import time

late, timeout, release = int(sys.argv[1]), float(sys.argv[2]), sys.argv[3]
rank = int(next((os.environ[v] for v in ("PMI_RANK", "RANK") if v in os.environ), 0))
if rank == late:
    if sys.argv[4:] == ["mpi"]:
        from mpi4py import MPI  # noqa: F401 - MPI is up, pyg_sar.init is never called
    deadline = time.monotonic() + 300  # hang detector only: the test releases it
    while not os.path.exists(release) and time.monotonic() < deadline:
        time.sleep(0.05)
    sys.exit(0)
import pyg_sar  # noqa: E402

size = int(next((os.environ[v] for v in ("PMI_SIZE", "WORLD_SIZE") if v in os.environ), 1))
present = [r for r in range(size) if r != late]
folder = os.path.dirname(os.path.abspath(release))
open(os.path.join(folder, f"imported-{rank}"), "w").close()
deadline = time.monotonic() + 300  # hang detector only
while not all(os.path.exists(os.path.join(folder, f"imported-{r}")) for r in present):
    assert time.monotonic() < deadline, "the other ranks never imported pyg_sar"
    time.sleep(0.02)
start = time.monotonic()
try:
    pyg_sar.init(timeout=timeout)
except RuntimeError as e:
    print(f"JOIN-ERROR rank {rank} after {time.monotonic() - start:.1f} s: {e}", flush=True)
    sys.exit(3)
print(f"rank {rank} joined", flush=True)
