"""``model, data = pyg_sar.convert(model), pyg_sar.distribute(data)`` (the order of PyG's ported
scripts) on 2 ranks whose parameters start different, with a model that reads its graph from a
global (PyG's ``sgc.py``): rank 0's parameters reach every rank when ``distribute`` makes the
job's context, so the first step is exact and nothing warns."""
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
def test_convert_before_distribute_is_exact_from_the_first_step(tmp_path):
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONPATH=str(ROOT))
    proc = subprocess.run([find_mpiexec(), "-n", "2", sys.executable,
                           str(ROOT / "tests" / "api" / "convert_before_init.py")],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-4000:]
    assert "not exact" not in proc.stderr, proc.stderr[-4000:]
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result["rel_error"] <= 1e-12, result
