"""`python -m pyg_sar.train --resume`: a run killed with SIGKILL after a checkpoint and resumed
ends with parameters bit-identical to a run that was never interrupted (float64, 2 ranks).

The run to kill holds every rank just before it saves the checkpoint of epoch 15
(``train_until.py``), so the kill lands at a known point however fast the machine is: epochs
11-15 computed, epoch 10 the last committed checkpoint. The run is repeated with a decaying
random-subset compression, whose subsets are keyed by the schedule's step: resuming restores
the step from the checkpoint."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pyg_sar.testing import find_mpiexec
from tests.reliability.checkpoints import (
    assert_same_losses,
    assert_same_states,
    final_rank_states,
)

ROOT = Path(__file__).resolve().parents[2]
UNTIL = str(Path(__file__).with_name("train_until.py"))
EPOCHS = 40
HANG_S = 300.0
COMPRESSED = ("--compression", "subset", "--schedule", "linear", "--ratio-max", "8",
              "--decay-steps", "30", "--compress-last-layer")


def _cmd(ck: Path, parts: Path, *extra: str, until: tuple[str, ...] = ()) -> list[str]:
    run = [UNTIL, *until] if until else ["-m", "pyg_sar.train"]
    return [find_mpiexec(), "-n", "2", sys.executable, *run, "--parts",
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


@pytest.mark.skipif(find_mpiexec() is None, reason="needs mpiexec (the mpich wheel)")
@pytest.mark.parametrize("extra", [(), COMPRESSED], ids=["plain", "compressed"])
def test_killed_and_resumed_run_is_bit_identical(tmp_path, extra):
    from pyg_sar.datasets import load_dataset
    from pyg_sar.partition import partition_graph
    parts = partition_graph(load_dataset("cora"), 2, tmp_path / "parts", method="metis")

    full = tmp_path / "full"
    done = subprocess.run(_cmd(full, parts, *extra), env=_env(), capture_output=True, text=True,
                          timeout=HANG_S)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]

    # Killed run: every process of the launch gets SIGKILL once both ranks wait before the
    # checkpoint of epoch 15 (the one of epoch 10 is committed by then).
    killed, markers = tmp_path / "killed", tmp_path / "markers"
    markers.mkdir()
    log = tmp_path / "killed.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen(_cmd(killed, parts, *extra, until=("15", str(markers))),
                                env=_env(),
                                stdout=out, stderr=out, start_new_session=True)
    deadline = time.monotonic() + HANG_S
    try:
        while len(list(markers.glob("rank*"))) < 2:
            assert proc.poll() is None, f"the run ended before epoch 15:\n{log.read_text()}"
            assert time.monotonic() < deadline, f"epoch 15 not reached within {HANG_S} s"
            time.sleep(0.05)
    finally:
        _kill_tree(proc)
    at_kill = _latest_epoch(killed)
    assert at_kill == 10, f"the last committed checkpoint is of epoch {at_kill}"

    resumed = subprocess.run(_cmd(killed, parts, *extra, "--resume"), env=_env(),
                             capture_output=True, text=True, timeout=HANG_S)
    assert resumed.returncode == 0, resumed.stdout[-2000:] + resumed.stderr[-2000:]
    assert f"after epoch {at_kill}" in resumed.stdout

    want, got = final_rank_states(full, EPOCHS), final_rank_states(killed, EPOCHS)
    assert_same_states(want, got)
    assert_same_losses(want, got, EPOCHS)
    for a, b in zip(want, got, strict=True):
        sent = [h["bytes_sent"] for h in json.loads(a["extra_json"])["history"]]
        assert sent == [h["bytes_sent"] for h in json.loads(b["extra_json"])["history"]]
        assert a["compression"] == b["compression"]
        if extra:  # the schedule ran to its end: compressed first, lossless last
            assert a["compression"]["convs.0"]["t"] == EPOCHS
            assert sent[0] < sent[-1]
        else:
            assert a["compression"] == {}

