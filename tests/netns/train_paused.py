"""``python train_paused.py PAUSE_EPOCH MARKER_DIR TRAIN_ARGS...``: ``python -m pyg_sar.train``
whose ranks, right after the checkpoint of epoch PAUSE_EPOCH is committed, each write
``MARKER_DIR/rank<r>`` and wait until ``MARKER_DIR/go`` exists, then train on.

A fault test waits for every marker, injects its fault (cuts a link, kills a host), then writes
``go``: the fault lands at a known point (the checkpoint of PAUSE_EPOCH committed, the next
epoch's communication not yet started) however slow the machine is. The wait for ``go`` is
bounded by ``PYG_SAR_TEST_PAUSE_S`` (default 600 s) as a hang detector only.
"""
import os
import sys
from pathlib import Path

from pause_point import mark_and_wait  # tests/netns, the script's folder

import pyg_sar
import pyg_sar.checkpoint

pause_epoch, markers, argv = int(sys.argv[1]), Path(sys.argv[2]), sys.argv[3:]
save = pyg_sar.checkpoint.save_checkpoint


def save_then_pause(path, model, optimizer=None, epoch=0, **kwargs):
    snapshot = save(path, model, optimizer, epoch, **kwargs)  # rank 0: latest.json committed
    if epoch == pause_epoch:
        rank = next((os.environ[v] for v in ("PMI_RANK", "RANK") if v in os.environ), "0")
        mark_and_wait(markers, rank, "train_paused")
    return snapshot


pyg_sar.save_checkpoint = pyg_sar.checkpoint.save_checkpoint = save_then_pause
from pyg_sar.train import main  # noqa: E402 - after the patch, whatever train imports

sys.exit(main(argv))
