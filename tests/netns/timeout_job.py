"""``python timeout_job.py MARKER_DIR TIMEOUT_S``: supervised ranks (``init(supervise=True)``)
with a communication timeout of TIMEOUT_S seconds (shorter than the watchdog's heartbeat
deadline) all-reduce once, write ``MARKER_DIR/rank<r>``, wait until ``MARKER_DIR/go`` exists
(a test cuts a link meanwhile), then all-reduce again. ``PYG_SAR_TEST_PAUSE_S`` (default
600 s) bounds the wait for ``go`` as a hang detector only."""
import sys
from pathlib import Path

import torch
from pause_point import mark_and_wait  # tests/netns, the script's folder

import pyg_sar

markers, timeout = Path(sys.argv[1]), float(sys.argv[2])
ctx = pyg_sar.init(timeout=timeout, supervise=True)
ctx.comm.all_reduce(torch.ones(4))
mark_and_wait(markers, ctx.rank, "timeout_job")
ctx.comm.all_reduce(torch.ones(4))
print(f"rank {ctx.rank} finished", flush=True)
pyg_sar.shutdown()
