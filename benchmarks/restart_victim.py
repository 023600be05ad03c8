"""``python restart_victim.py STAMPS KILL_EPOCH TRAIN_ARGS...``: ``python -m pyg_sar.train``
for ``benchmarks/restart.py``. Every process appends timestamped events to ``STAMPS/<pid>``:
``start`` (interpreter up, before torch is imported), ``resumed`` (after ``load_checkpoint``
returned), ``kill`` (rank 1 of the launcher's first attempt, just before it SIGKILLs itself at
the checkpoint of KILL_EPOCH, once rank 0 has finished that epoch); KILL_EPOCH 0: no kill.

With ``RESTART_FAULT=cut`` (``restart.py --hosts``) no rank kills itself: at the checkpoint of
KILL_EPOCH of the first attempt every rank stamps ``paused`` and waits (at most 600 s) until
the file ``STAMPS/../go`` exists; the benchmark cuts a host's link in the meantime, so the
checkpoint's communication crosses the cut link."""
import json
import os
import signal
import sys
import time
from pathlib import Path

stamps, kill_epoch, argv = Path(sys.argv[1]), int(sys.argv[2]), sys.argv[3:]
attempt = os.environ.get("TORCHELASTIC_RESTART_COUNT", "0")
rank = os.environ.get("RANK", "0")


def stamp(event: str) -> None:
    with open(stamps / str(os.getpid()), "a") as out:
        out.write(json.dumps({"event": event, "t": time.time(), "attempt": attempt,
                              "rank": rank}) + "\n")


stamp("start")
import pyg_sar  # noqa: E402
import pyg_sar.checkpoint  # noqa: E402

save, load = pyg_sar.checkpoint.save_checkpoint, pyg_sar.checkpoint.load_checkpoint
folder = Path(argv[argv.index("--checkpoint") + 1])


def _finished(epoch: int) -> bool:
    try:
        return json.loads((folder / "progress.json").read_text())["epoch"] >= epoch
    except (OSError, ValueError):
        return False


cut = os.environ.get("RESTART_FAULT") == "cut"


def save_or_die(path, model, optimizer=None, epoch=0, **kwargs):
    if cut and kill_epoch and epoch == kill_epoch and attempt == "0":
        stamp("paused")
        go, deadline = stamps.parent / "go", time.monotonic() + 600
        while not go.exists() and time.monotonic() < deadline:
            time.sleep(0.005)
    elif kill_epoch and epoch == kill_epoch and attempt == "0" and rank == "1":
        while not _finished(epoch):
            time.sleep(0.005)
        stamp("kill")
        os.kill(os.getpid(), signal.SIGKILL)
    return save(path, model, optimizer, epoch, **kwargs)


def load_and_stamp(*args, **kwargs):
    state = load(*args, **kwargs)
    stamp("resumed")
    return state


pyg_sar.save_checkpoint = pyg_sar.checkpoint.save_checkpoint = save_or_die
pyg_sar.load_checkpoint = pyg_sar.checkpoint.load_checkpoint = load_and_stamp
from pyg_sar.train import main  # noqa: E402 - after the patches

sys.exit(main(argv))
