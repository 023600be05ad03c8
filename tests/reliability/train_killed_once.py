"""``python train_killed_once.py MODE EPOCH TRAIN_ARGS...``: ``python -m pyg_sar.train`` under
``torchrun``, whose rank 1 kills itself (SIGKILL) in the launcher's first attempt only
(``TORCHELASTIC_RESTART_COUNT`` 0; under ``srun``, a Slurm job's first run:
``SLURM_RESTART_COUNT`` unset or 0), at the checkpoint of EPOCH:

* ``MODE=rank``: before it writes anything, once rank 0 has recorded EPOCH as finished
  (``progress.json``), so the epochs to compute again are known exactly;
* ``MODE=write``: halfway through writing its rank file (the temporary file holds half the
  bytes), so the snapshot of EPOCH is never committed.

The launcher then restarts every rank with the same command (``--resume auto``)."""
import json
import os
import signal
import sys
import time
from pathlib import Path

import pyg_sar
import pyg_sar.checkpoint

mode, kill_epoch, argv = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
# torchrun's restart count, or a requeued Slurm job's (srun: the rank is SLURM_PROCID)
first_attempt = os.environ.get("TORCHELASTIC_RESTART_COUNT",
                               os.environ.get("SLURM_RESTART_COUNT", "0")) == "0"
victim = first_attempt and os.environ.get("RANK", os.environ.get("SLURM_PROCID")) == "1"
save, write = pyg_sar.checkpoint.save_checkpoint, pyg_sar.checkpoint._write_atomic
folder = Path(argv[argv.index("--checkpoint") + 1])
state = {"epoch": None}


def _finished(epoch: int) -> bool:
    try:
        return json.loads((folder / "progress.json").read_text())["epoch"] >= epoch
    except (OSError, ValueError):
        return False


def save_or_die(path, model, optimizer=None, epoch=0, **kwargs):
    state["epoch"] = epoch
    if victim and mode == "rank" and epoch == kill_epoch:
        deadline = time.monotonic() + 300
        while not _finished(epoch) and time.monotonic() < deadline:  # rank 0's record
            time.sleep(0.01)
        os.kill(os.getpid(), signal.SIGKILL)
    return save(path, model, optimizer, epoch, **kwargs)


def write_or_die(path, data):
    if victim and mode == "write" and state["epoch"] == kill_epoch and path.name == "rank1.pt":
        tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
        with open(tmp, "wb") as out:
            out.write(data[:len(data) // 2])
            out.flush()
            os.fsync(out.fileno())
        os.kill(os.getpid(), signal.SIGKILL)
    return write(path, data)


pyg_sar.save_checkpoint = pyg_sar.checkpoint.save_checkpoint = save_or_die
pyg_sar.checkpoint._write_atomic = write_or_die
from pyg_sar.train import main  # noqa: E402 - after the patch, whatever train imports

sys.exit(main(argv))
