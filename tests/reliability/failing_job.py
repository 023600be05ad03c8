"""A small training job that fails on purpose (run as a script by the failure tests).

``python failing_job.py --parts DIR --log-dir DIR --fail-rank R --how raise|kill|hang|none
[--supervise 1|0] [--timeout S]``: every rank trains a converted GCN, with failure supervision
asked for (``init(supervise=True)``, the default here) or not; at epoch 3, between forward and
backward, rank R raises, SIGKILLs itself or hangs (after writing ``failed_at`` with the time). Each
rank's stdout and stderr go to ``<log-dir>/rank<r>.log``.
"""
from __future__ import annotations

import argparse
import os
import signal
import sys
import time
from pathlib import Path


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--parts", required=True)
    p.add_argument("--log-dir", required=True, type=Path)
    p.add_argument("--fail-rank", type=int, default=1)
    p.add_argument("--how", choices=("raise", "kill", "hang", "none"), default="raise")
    p.add_argument("--epochs", type=int, default=6)
    p.add_argument("--supervise", type=int, choices=(0, 1), default=1)
    p.add_argument("--timeout", type=float, default=None)
    args = p.parse_args()
    rank = int(next((os.environ[v] for v in ("PMI_RANK", "RANK") if v in os.environ), 0))
    log = os.open(args.log_dir / f"rank{rank}.log", os.O_WRONLY | os.O_CREAT | os.O_APPEND)
    os.dup2(log, 1)
    os.dup2(log, 2)

    import torch
    from torch_geometric.nn import GCN

    import pyg_sar
    from pyg_sar.nn.functional import cross_entropy
    ctx = pyg_sar.init(supervise=bool(args.supervise), timeout=args.timeout)
    part = pyg_sar.load_partition(args.parts, ctx.rank)
    torch.manual_seed(0)
    model = pyg_sar.convert(GCN(part.x.shape[1], 16, 2, int(part.meta["num_classes"])))
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
    for epoch in range(1, args.epochs + 1):
        optimizer.zero_grad()
        loss = cross_entropy(model(part.x, part.graph), part.y, part.train_mask)
        if epoch == 3 and ctx.rank == args.fail_rank and args.how != "none":
            (args.log_dir / "failed_at").write_text(str(time.time()))
            if args.how == "kill":
                os.kill(os.getpid(), signal.SIGKILL)
            if args.how == "hang":  # alive but silent: only the others' timeout finds it
                time.sleep(3600)
            raise ValueError(f"injected failure on rank {ctx.rank} at epoch {epoch}")
        loss.backward()
        pyg_sar.all_reduce_gradients(model)
        optimizer.step()
        print(f"epoch {epoch} loss {float(loss):.4f}", flush=True)
    print(f"rank {ctx.rank} finished", flush=True)
    sys.exit(0)


if __name__ == "__main__":
    main()
