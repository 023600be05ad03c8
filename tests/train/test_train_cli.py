"""The main job (`python -m pyg_sar.train`) under mpiexec, torchrun and alone."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from pyg_sar.testing import find_mpiexec

ROOT = Path(__file__).resolve().parents[2]


def _run(cmd: list[str], tmp_path: Path, timeout: float = 600) -> subprocess.CompletedProcess:
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONPATH=str(ROOT))
    proc = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=timeout)
    assert proc.returncode == 0, f"{cmd} failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    return proc


def _train(*extra: str) -> list[str]:
    return ["-m", "pyg_sar.train", "--dataset", "cora", "--log-every", "10", *extra]


def test_one_rank_matches_plain_pyg_step_for_step(tmp_path):
    """P = 1 through the engine follows exactly the curve of the unconverted PyG model."""
    curves = {}
    for name, extra in (("pyg", ["--reference"]), ("sar", [])):
        metrics = tmp_path / f"{name}.json"
        _run([sys.executable, *_train("--epochs", "15", "--dtype", "float64", "--metrics",
                                      str(metrics), *extra)], tmp_path)
        curves[name] = json.loads(metrics.read_text())["history"]
        streamed = (tmp_path / f"{name}.epochs.jsonl").read_text().splitlines()
        assert [json.loads(line) for line in streamed] == curves[name]  # as the run went
    for a, b in zip(curves["pyg"], curves["sar"], strict=True):
        assert abs(a["loss"] - b["loss"]) <= 1e-10 * abs(a["loss"]), (a, b)
        assert a["val_acc"] == b["val_acc"]


@pytest.mark.skipif(find_mpiexec() is None, reason="needs mpiexec (the mpich wheel)")
def test_two_ranks_under_mpiexec_learn_cora(tmp_path):
    metrics = tmp_path / "m.json"
    proc = _run([find_mpiexec(), "-n", "2", sys.executable,
                 *_train("--epochs", "60", "--metrics", str(metrics))], tmp_path)
    out = json.loads(metrics.read_text())
    assert out["world_size"] == 2 and out["backend"] == "mpi"
    assert len(out["history"]) == 60
    assert out["history"][-1]["loss"] < 0.5 * out["history"][0]["loss"]
    assert out["final_test_acc"] > 0.7  # a 2-layer GCN reaches ~0.80 on Cora
    assert "final test accuracy" in proc.stdout


def test_two_ranks_under_torchrun(tmp_path):
    metrics = tmp_path / "m.json"
    _run([sys.executable, "-m", "torch.distributed.run", "--standalone", "--nnodes=1",
          "--nproc-per-node=2", *_train("--epochs", "5", "--model", "sage", "--metrics",
                                        str(metrics))], tmp_path)
    out = json.loads(metrics.read_text())
    assert out["world_size"] == 2 and out["backend"] == "gloo"
    assert out["history"][-1]["loss"] < out["history"][0]["loss"]


def _two_ranks() -> list[str]:
    mpiexec = find_mpiexec()
    if mpiexec is not None:
        return [mpiexec, "-n", "2", sys.executable]
    return [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nnodes=1",
            "--nproc-per-node=2"]


def test_two_ranks_with_bf16_on_the_wire_and_bf16_mixed_precision(tmp_path):
    """--wire-dtype bfloat16 halves every epoch's bytes exactly (float32 rows as bf16) and
    still learns Cora; with --precision bf16-mixed (autocast) too. Each run is partitioned
    alike (METIS, seed 0), so the bytes per epoch only depend on the dtypes."""
    runs = {"f32": ("--epochs", "2"),
            "wire": ("--epochs", "30", "--wire-dtype", "bfloat16"),
            "mixed": ("--epochs", "30", "--wire-dtype", "bfloat16", "--precision",
                      "bf16-mixed")}
    out, stdout = {}, {}
    for name, extra in runs.items():
        metrics = tmp_path / f"{name}.json"
        proc = _run([*_two_ranks(), *_train("--metrics", str(metrics), "--parts-dir",
                                            str(tmp_path / f"parts-{name}"), *extra)],
                    tmp_path)
        out[name], stdout[name] = json.loads(metrics.read_text()), proc.stdout
    full = out["f32"]["history"][0]["bytes_sent"]
    assert full > 0
    for name in ("wire", "mixed"):
        got = out[name]
        assert got["world_size"] == 2
        assert got["config"]["wire_dtype"] == "bfloat16"
        assert all(2 * r["bytes_sent"] == full for r in got["history"]), (name, full)
        assert got["history"][-1]["loss"] < 0.6 * got["history"][0]["loss"], name
        assert got["final_test_acc"] > 0.7, (name, got["final_test_acc"])  # float32: ~0.8
    assert out["mixed"]["config"]["precision"] == "bf16-mixed"
    assert "precision bf16-mixed (storage float32), wire bfloat16" in stdout["mixed"]
    assert "precision 32 (storage float32), wire float32" in stdout["f32"]


def test_one_rank_bf16_true_learns_and_resumes_bit_identically(tmp_path):
    """--precision bf16-true (bf16 parameters, optimizer state and features): the loss falls,
    and a run resumed from its checkpoint follows the uninterrupted one exactly."""
    common = ("--epochs", "4", "--precision", "bf16-true", "--parts-dir", str(tmp_path / "p"))
    _run([sys.executable, *_train(*common[:1], "2", *common[2:], "--checkpoint", "ck",
                                  "--checkpoint-every", "1")], tmp_path)
    _run([sys.executable, *_train(*common, "--checkpoint", "ck", "--resume", "--metrics",
                                  "resumed.json")], tmp_path)
    proc = _run([sys.executable, *_train(*common, "--metrics", "straight.json")], tmp_path)
    assert "precision bf16-true (storage float32), wire float32" in proc.stdout
    resumed, straight = (json.loads((tmp_path / f"{n}.json").read_text())
                         for n in ("resumed", "straight"))
    assert straight["config"]["precision"] == "bf16-true"
    assert [r["loss"] for r in resumed["history"]] == [r["loss"] for r in straight["history"]]
    assert straight["history"][-1]["loss"] < 0.9 * straight["history"][0]["loss"]
