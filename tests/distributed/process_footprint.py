"""``python process_footprint.py OUT_DIR SUPERVISE``: what ``pyg_sar.init`` leaves in the
process (run under ``mpiexec -n 2`` by test_init_footprint.py). Writes
``OUT_DIR/rank<r>.json`` with the process's hooks, threads, children and signal handlers
before init, after init (and one all-reduce), and after ``pyg_sar.shutdown()``."""
import atexit
import json
import os
import signal
import sys
import threading
import time
from pathlib import Path

import torch

import pyg_sar

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


def snapshot() -> dict:
    return {
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
    ctx = pyg_sar.init(supervise=True if supervise else None)
    total = ctx.comm.all_reduce(torch.ones(2)).tolist()
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
