"""``python process_footprint.py OUT_DIR SUPERVISE``: what ``pyg_sar`` leaves in the
process (run under ``mpiexec -n 2`` by test_init_footprint.py). Writes
``OUT_DIR/rank<r>.json`` with the process's hooks (torch's global module hooks and torch
function modes included), threads, children and signal handlers before ``import pyg_sar``,
after init, one all-reduce and a converted model's training step over a DistGraph, and after
``pyg_sar.shutdown()``."""
import atexit
import json
import os
import signal
import sys
import threading
import time
import warnings
from pathlib import Path

import mpi4py  # noqa: F401 - its import adds its own finder to sys.meta_path: not pyg_sar's
import torch
import torch.nn.modules.module as torch_module
from torch_geometric.nn import GCN

_SIGNALS = [s for s in signal.valid_signals() if s not in (signal.SIGKILL, signal.SIGSTOP)]


def _children() -> list[str]:
    """Command lines of this process's live child processes."""
    me, found = str(os.getpid()), []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            text = stat.read_text()
            if text[text.rindex(")") + 2:].split()[1] == me and text[text.rindex(")") + 2] \
                    not in "ZX":
                found.append((stat.parent / "cmdline").read_bytes().replace(b"\0", b" ")
                             .decode().strip())
        except (OSError, ValueError, IndexError):
            continue
    return sorted(found)


def _torch_hooks() -> dict:
    """Sizes of torch's process-wide hook tables (``register_module_forward_pre_hook`` and
    the like) and of the torch-function mode stack."""
    tables = {name: len(getattr(torch_module, name)) for name in dir(torch_module)
              if name.startswith("_global_") and isinstance(getattr(torch_module, name), dict)}
    tables["torch_function_modes"] = torch._C._len_torch_function_stack()
    return tables


def snapshot() -> dict:
    return {
        "torch_hooks": _torch_hooks(),
        "sys_hooks": [repr(h) for h in (sys.displayhook, sys.unraisablehook,
                                        threading.excepthook, sys.gettrace(), sys.getprofile())],
        "meta_path": [repr(f) for f in sys.meta_path],
        "path_hooks": [repr(h) for h in sys.path_hooks],
        "warning_filters": len(warnings.filters),
        "excepthook_is_default": sys.excepthook is sys.__excepthook__,
        "python_threads": sorted(t.name for t in threading.enumerate()),
        "tasks": len(os.listdir("/proc/self/task")),
        "children": _children(),
        "signals": {int(s): repr(signal.getsignal(s)) for s in _SIGNALS},
        "atexit": atexit._ncallbacks() if hasattr(atexit, "_ncallbacks") else None,
    }


def main() -> None:
    out, supervise = Path(sys.argv[1]), sys.argv[2] == "1"
    before = snapshot()
    import pyg_sar
    from pyg_sar.datasets import sbm
    ctx = pyg_sar.init(supervise=True if supervise else None)
    total = ctx.comm.all_reduce(torch.ones(2)).tolist()
    # A converted model's training step over the rank's part: its checks live on the model.
    data = pyg_sar.distribute(sbm(num_nodes=40, num_classes=2, avg_degree=3.0,
                                  num_features=4, seed=0))
    model = pyg_sar.convert(GCN(4, 8, num_layers=2, out_channels=2))
    loss = pyg_sar.nn.functional.cross_entropy(model(data.x, data.edge_index), data.y)
    loss.backward()
    after = snapshot()
    after["supervised"], after["has_supervisor"] = ctx.supervised, ctx.supervisor is not None
    rank, supervisor = ctx.rank, ctx.supervisor
    pyg_sar.shutdown()
    if supervise:
        # The watchdog's Python thread is joined by shutdown; its OS thread may take a moment
        # longer to leave /proc/self/task on a loaded machine.
        deadline = time.monotonic() + 5.0
        while len(os.listdir("/proc/self/task")) >= after["tasks"] and \
                time.monotonic() < deadline:
            time.sleep(0.05)
    ended = snapshot()
    ended["exit_hooks_installed"] = supervisor.exit_hooks.installed if supervisor else None
    (out / f"rank{rank}.json").write_text(json.dumps(
        {"before": before, "after": after, "shutdown": ended, "sum": total}))


if __name__ == "__main__":
    main()
