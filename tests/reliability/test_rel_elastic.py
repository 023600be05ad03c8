"""Elastic restart: ``torchrun --max-restarts 1`` runs ``python -m pyg_sar.train ...
--checkpoint DIR --resume auto``; rank 1 is killed (SIGKILL) in the first attempt, either
between two checkpoints or halfway through writing its checkpoint file. The launcher restarts
both ranks with the same command, they resume from the last committed checkpoint, and the run
ends with parameters, RNG states and loss history bit-identical to an uninterrupted run's
(float64, dropout on, 2 ranks, gloo); the log says the restart and the epochs computed again."""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.reliability.checkpoints import (
    assert_same_losses,
    assert_same_states,
    final_rank_states,
)

ROOT = Path(__file__).resolve().parents[2]
KILLED_ONCE = str(Path(__file__).with_name("train_killed_once.py"))
EPOCHS, EVERY, KILL_AT = 12, 4, 8
HANG_S = 600


def _train_args(ck: Path, parts: Path) -> list[str]:
    return ["--parts", str(parts), "--dtype", "float64", "--epochs", str(EPOCHS),
            "--model", "sage", "--dropout", "0.5", "--checkpoint", str(ck),
            "--checkpoint-every", str(EVERY), "--log-every", "100", "--resume", "auto"]


def _torchrun(*script: str) -> list[str]:
    return [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nnodes=1",
            "--nproc-per-node=2", "--max-restarts=1", "--monitor-interval=0.2", *script]


def _run(cmd: list[str]) -> subprocess.CompletedProcess:
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONPATH=str(ROOT))
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=HANG_S)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return done


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    from pyg_sar.datasets import load_dataset
    from pyg_sar.partition import partition_graph
    tmp = tmp_path_factory.mktemp("elastic")
    parts = partition_graph(load_dataset("cora"), 2, tmp / "parts", method="metis")
    done = _run(_torchrun("-m", "pyg_sar.train", *_train_args(tmp / "full", parts)))
    assert "no checkpoint in" in done.stdout and "starting at epoch 1" in done.stdout
    return parts, final_rank_states(tmp / "full", EPOCHS)


@pytest.mark.parametrize("mode", ["rank", "write"])
def test_killed_rank_restarts_and_ends_as_uninterrupted(tmp_path, reference, mode):
    """Rank 1 dies at the checkpoint of epoch 8, before writing (``rank``) or halfway through
    its file (``write``): the snapshot of epoch 8 is never committed, so the restarted run
    resumes after epoch 4 and computes epochs 5-8 again."""
    parts, full = reference
    ck = tmp_path / "ck"
    done = _run(_torchrun(KILLED_ONCE, mode, str(KILL_AT), *_train_args(ck, parts)))
    found = re.search(r"resumed from \S+ after epoch (\d+) \(restart 1 by the launcher\); "
                      r"(\d+) epoch\(s\) done before are computed again", done.stdout)
    assert found, done.stdout[-3000:] + done.stderr[-3000:]
    assert (int(found[1]), int(found[2])) == (KILL_AT - EVERY, EVERY)
    got = final_rank_states(ck, EPOCHS)
    assert_same_states(full, got)
    assert_same_losses(full, got, EPOCHS)
