"""`python -m pyg_sar.train --resume`: a run killed with SIGKILL after a checkpoint and resumed
ends with parameters bit-identical to a run that was never interrupted (float64, 2 ranks)."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from pyg_sar.testing import find_mpiexec

ROOT = Path(__file__).resolve().parents[2]
EPOCHS = 40


def _cmd(ck: Path, parts: Path, *extra: str) -> list[str]:
    return [find_mpiexec(), "-n", "2", sys.executable, "-m", "pyg_sar.train", "--parts",
            str(parts), "--dtype", "float64", "--epochs", str(EPOCHS), "--model", "sage",
            "--dropout", "0.5", "--checkpoint", str(ck), "--checkpoint-every", "5",
            "--log-every", "100", *extra]


def _env() -> dict:
    return dict(os.environ, OMP_NUM_THREADS="1", PYTHONPATH=str(ROOT))


def _latest_epoch(ck: Path) -> int:
    try:
        return json.loads((ck / "latest.json").read_text())["epoch"]
    except (OSError, ValueError):
        return 0


def _kill_tree(proc: subprocess.Popen) -> None:
    from pyg_sar.testing.launcher import _descendants
    for pid in [proc.pid, *_descendants(proc.pid)]:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    proc.wait(timeout=30)


def _final_state(ck: Path) -> list[dict]:
    latest = json.loads((ck / "latest.json").read_text())
    assert latest["epoch"] == EPOCHS
    return [torch.load(ck / latest["snapshot"] / f"rank{r}.pt", weights_only=True)
            for r in range(2)]


@pytest.mark.skipif(find_mpiexec() is None, reason="needs mpiexec (the mpich wheel)")
def test_killed_and_resumed_run_is_bit_identical(tmp_path):
    from pyg_sar.datasets import load_dataset
    from pyg_sar.partition import partition_graph
    parts = partition_graph(load_dataset("cora"), 2, tmp_path / "parts", method="metis")

    full = tmp_path / "full"
    done = subprocess.run(_cmd(full, parts), env=_env(), capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]

    # Killed run: every process of the launch gets SIGKILL once a checkpoint is committed.
    killed = tmp_path / "killed"
    proc = subprocess.Popen(_cmd(killed, parts), env=_env(), stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)
    deadline = time.monotonic() + 240
    while _latest_epoch(killed) < 10 and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    _kill_tree(proc)
    at_kill = _latest_epoch(killed)
    assert 10 <= at_kill < EPOCHS, f"kill landed at checkpoint epoch {at_kill}"

    resumed = subprocess.run(_cmd(killed, parts, "--resume"), env=_env(), capture_output=True,
                             text=True, timeout=300)
    assert resumed.returncode == 0, resumed.stdout[-2000:] + resumed.stderr[-2000:]
    assert f"after epoch {at_kill}" in resumed.stdout

    for a, b in zip(_final_state(full), _final_state(killed), strict=True):
        assert a["model"].keys() == b["model"].keys()
        for key in a["model"]:
            assert torch.equal(a["model"][key], b["model"][key]), key
        assert torch.equal(a["rng"]["torch"], b["rng"]["torch"])
        losses = [h["loss"] for h in json.loads(a["extra_json"])["history"]]
        assert losses == [h["loss"] for h in json.loads(b["extra_json"])["history"]]
        assert len(losses) == EPOCHS

