"""``python train_cut_once.py EPOCH MARKER_DIR TRAIN_ARGS...``: ``python -m pyg_sar.train``
under ``torchrun`` whose ranks, in the launcher's first attempt only
(``TORCHELASTIC_RESTART_COUNT`` 0), stop at the gradient all-reduce of EPOCH (epoch EPOCH - 1
finished and recorded by rank 0 in ``progress.json``), each write ``MARKER_DIR/rank<r>`` and
wait until ``MARKER_DIR/go`` exists, then train on.

The test cuts a host's link while they wait, then writes ``go``: the all-reduce crosses the
cut link, every rank fails, and the launchers restart the same command (``--resume auto``),
which runs through without pausing."""
import os
import sys
from pathlib import Path

from pause_point import mark_and_wait  # tests/netns, the script's folder

import pyg_sar

pause_epoch, markers, argv = int(sys.argv[1]), Path(sys.argv[2]), sys.argv[3:]
first_attempt = os.environ.get("TORCHELASTIC_RESTART_COUNT", "0") == "0"
reduce = pyg_sar.all_reduce_gradients
calls = {"n": 0}


def reduce_after_pause(model, ctx=None, *args, **kwargs):
    calls["n"] += 1  # one all-reduce per epoch, from the first epoch of this attempt
    if first_attempt and calls["n"] == pause_epoch:
        mark_and_wait(markers, os.environ.get("RANK", "0"), "train_cut_once")
    return reduce(model, ctx, *args, **kwargs)


pyg_sar.all_reduce_gradients = reduce_after_pause
from pyg_sar.train import main  # noqa: E402 - after the patch, whatever train imports

sys.exit(main(argv))
