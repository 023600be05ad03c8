"""``python train_until.py STOP_EPOCH MARKER_DIR TRAIN_ARGS...``: ``python -m pyg_sar.train``
whose ranks, when they are about to save the checkpoint of epoch STOP_EPOCH, each write
``MARKER_DIR/rank<r>`` and wait there until they are killed. A test that kills the job once
every marker exists kills it at a known point: after the previous checkpoint was committed,
with later epochs computed but not saved."""
import os
import sys
import threading
from pathlib import Path

import pyg_sar
import pyg_sar.checkpoint

stop_epoch, markers, argv = int(sys.argv[1]), Path(sys.argv[2]), sys.argv[3:]
save = pyg_sar.checkpoint.save_checkpoint


def save_or_stop(path, model, optimizer=None, epoch=0, **kwargs):
    if epoch == stop_epoch:
        rank = next((os.environ[v] for v in ("PMI_RANK", "RANK") if v in os.environ), "0")
        tmp = markers / f".rank{rank}.tmp"
        tmp.write_text(str(os.getpid()))
        os.replace(tmp, markers / f"rank{rank}")
        threading.Event().wait()  # until killed
    return save(path, model, optimizer, epoch, **kwargs)


pyg_sar.save_checkpoint = pyg_sar.checkpoint.save_checkpoint = save_or_stop
from pyg_sar.train import main  # noqa: E402 - after the patch, whatever train imports

sys.exit(main(argv))
