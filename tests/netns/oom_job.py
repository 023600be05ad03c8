"""``python oom_job.py RANK``: supervised ranks all-reduce once; then rank RANK allocates (and
touches) memory until the kernel's OOM killer ends it, while the others wait in a second
all-reduce. The job must end within seconds, naming rank RANK, its host and its memory limit."""
import sys

import torch

import pyg_sar

victim = int(sys.argv[1])
ctx = pyg_sar.init(supervise=True)
ctx.comm.all_reduce(torch.ones(4))
print(f"rank {ctx.rank} ready", flush=True)
if ctx.rank == victim:
    hog = []
    while True:  # 64 MiB at a time, every page written
        hog.append(torch.ones(8 << 20, dtype=torch.float64))
ctx.comm.all_reduce(torch.ones(4))
print(f"rank {ctx.rank} finished", flush=True)  # never: the victim never gets here
pyg_sar.shutdown()
