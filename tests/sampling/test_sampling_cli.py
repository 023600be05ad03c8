"""`python -m pyg_sar.train --sampler sage|ladies` trains a GraphSAGE on sampled minibatches
under mpiexec (1.5D rows, and the replicated structure)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from pyg_sar.testing import find_mpiexec

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.skipif(find_mpiexec() is None, reason="needs mpiexec (the mpich wheel)")
@pytest.mark.parametrize("extra", [["--sampler", "sage", "--fanout", "10,5", "--replication",
                                    "2"],
                                   ["--sampler", "ladies", "--fanout", "256,256",
                                    "--replicate-graph"]])
def test_minibatch_training_under_mpiexec_learns_cora(tmp_path, extra):
    metrics = tmp_path / "m.json"
    cmd = [find_mpiexec(), "-n", "2", sys.executable, "-m", "pyg_sar.train", "--dataset", "cora",
           "--model", "sage", "--batch-size", "32", "--bulk", "4", "--epochs", "10",
           "--eval-every", "5", "--parts-dir", str(tmp_path / "parts"), "--metrics",
           str(metrics), *extra]
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONPATH=str(ROOT))
    proc = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    out = json.loads(metrics.read_text())
    assert out["world_size"] == 2 and len(out["history"]) == 10
    assert out["history"][-1]["loss"] < 0.5 * out["history"][0]["loss"]
    assert out["final_test_acc"] > 0.65, out["final_test_acc"]  # 2-layer SAGE: ~0.71-0.77
    assert "minibatch training" in proc.stdout
