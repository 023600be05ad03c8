"""``python join_job.py LATE_RANK TIMEOUT [mpi]``: rank LATE_RANK never calls pyg_sar.init (it
sleeps, then exits; with ``mpi`` it starts MPI first); the others call it with TIMEOUT and print
what it raised and when."""
import os
import sys
import time

late, timeout = int(sys.argv[1]), float(sys.argv[2])
rank = int(next((os.environ[v] for v in ("PMI_RANK", "RANK") if v in os.environ), 0))
if rank == late:
    if sys.argv[3:] == ["mpi"]:
        from mpi4py import MPI  # noqa: F401 - MPI is up, pyg_sar.init is never called
    time.sleep(timeout + 3)
    sys.exit(0)
import pyg_sar  # noqa: E402

start = time.monotonic()
try:
    pyg_sar.init(timeout=timeout)
except RuntimeError as e:
    print(f"JOIN-ERROR rank {rank} after {time.monotonic() - start:.1f} s: {e}", flush=True)
    sys.exit(3)
print(f"rank {rank} joined", flush=True)
