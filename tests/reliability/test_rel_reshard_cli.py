"""A restart onto another number of ranks through the train CLI alone: `python -m pyg_sar.train
--checkpoint DIR --resume auto` on 4 ranks (torchrun) loses rank 1 (SIGKILL, at the checkpoint
of epoch 8, so the last committed one is epoch 4's) and the same command resumes on 2 ranks,
on the partition for 2 either on disk (`--parts`) or made by the CLI from the dataset
(`--dataset cora --parts-dir`). It ends as the uninterrupted 4-rank run does (float64, no
dropout), as the API path does (test_rel_reshard): the losses and parameters within 1e-10,
the accuracies equal; rank 0 counts the 4 epochs computed again, and the metrics' traffic
totals cover the epochs of both sizes."""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from tests.closeness import assert_close

ROOT = Path(__file__).resolve().parents[2]
KILLED_ONCE = str(Path(__file__).with_name("train_killed_once.py"))
EPOCHS, EVERY, KILL_AT = 8, 4, 8
HANG_S = 600
TOL = 1e-10


def _train(ck: Path, metrics: Path, *data: str) -> list[str]:
    return [*data, "--dtype", "float64", "--epochs", str(EPOCHS), "--hidden", "16",
            "--dropout", "0", "--progress", "log", "--log-every", "100", "--checkpoint",
            str(ck), "--checkpoint-every", str(EVERY), "--resume", "auto", "--metrics",
            str(metrics)]


def _torchrun(nproc: int, *script: str) -> list[str]:
    return [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nnodes=1",
            f"--nproc-per-node={nproc}", "--monitor-interval=0.2", *script]


def _run(cmd: list[str], cwd: Path, ok: bool = True) -> subprocess.CompletedProcess:
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONPATH=str(ROOT))
    for k in ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT", "LOCAL_RANK"):
        env.pop(k, None)
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=HANG_S,
                          cwd=cwd)
    assert (done.returncode == 0) == ok, \
        f"exit {done.returncode}:\n{done.stdout[-3000:]}{done.stderr[-3000:]}"
    return done


def _final_model(ck: Path) -> dict:
    latest = json.loads((ck / "latest.json").read_text())
    assert latest["epoch"] == EPOCHS
    return torch.load(ck / latest["snapshot"] / "rank0.pt", weights_only=True)["model"]


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """The partitions for 4 and 2 on disk, the uninterrupted 4-rank run (metrics, final
    model) and the checkpoint folder the killed 4-rank run left."""
    from pyg_sar.datasets import load_dataset
    from pyg_sar.partition import partition_graph
    tmp = tmp_path_factory.mktemp("reshard_cli")
    data = load_dataset("cora")
    parts = {p: partition_graph(data, p, tmp / f"parts{p}") for p in (4, 2)}
    _run(_torchrun(4, "-m", "pyg_sar.train", *_train(tmp / "full", tmp / "full.json", "--parts",
                                                     str(parts[4]))), tmp)
    killed = _run(_torchrun(4, KILLED_ONCE, "rank", str(KILL_AT), *_train(
        tmp / "ck", tmp / "killed.json", "--parts", str(parts[4]))), tmp, ok=False)
    assert json.loads((tmp / "ck" / "latest.json").read_text())["epoch"] == KILL_AT - EVERY, \
        killed.stdout[-3000:] + killed.stderr[-3000:]
    return tmp, parts, json.loads((tmp / "full.json").read_text()), _final_model(tmp / "full")


@pytest.mark.parametrize("partition", ["disk", "made"])
def test_resumed_on_two_ranks_through_the_cli_ends_as_on_four(runs, partition, tmp_path):
    tmp, parts, want, want_model = runs
    ck = tmp_path / "ck"
    shutil.copytree(tmp / "ck", ck)
    data = (["--parts", str(parts[2])] if partition == "disk" else
            ["--dataset", "cora", "--parts-dir", str(tmp_path / "parts2")])
    done = _run(_torchrun(2, "-m", "pyg_sar.train", *_train(ck, tmp_path / "m.json", *data)),
                tmp_path)
    found = re.search(r"resumed from \S+ after epoch (\d+); (\d+) epoch\(s\) done before are "
                      r"computed again", done.stdout)
    assert found, done.stdout[-3000:] + done.stderr[-3000:]
    assert (int(found[1]), int(found[2])) == (KILL_AT - EVERY, EVERY)
    assert "on 2 rank(s)" in done.stdout
    if partition == "made":
        assert "partitioned cora into 2 part(s)" in done.stdout
    got = json.loads((tmp_path / "m.json").read_text())
    assert got["world_size"] == 2 and len(got["history"]) == EPOCHS
    assert_close(torch.tensor([h["loss"] for h in got["history"]]),
                 torch.tensor([h["loss"] for h in want["history"]]), atol=TOL, what="losses")
    for key in ("train_acc", "val_acc"):
        assert [h[key] for h in got["history"]] == [h[key] for h in want["history"]], key
    assert got["final_test_acc"] == want["final_test_acc"]
    model = _final_model(ck)
    assert model.keys() == want_model.keys()
    for name in model:
        assert_close(model[name], want_model[name], atol=TOL, what=name)
    # Traffic: the first 4 epochs' ledgers are of 4 ranks, the others of 2.
    assert [len(h["traffic"]) for h in got["history"]] == [4] * (EPOCHS - EVERY) + [2] * EVERY
    assert len(got["traffic"]["per_rank"]) == 4
    assert got["traffic"]["bytes_sent"] == sum(h["bytes_sent"] for h in got["history"])
