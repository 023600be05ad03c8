"""Every CUDA source under csrc/ compiles with nvcc, even on a machine without a GPU."""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
HAS_NVCC = shutil.which("nvcc") is not None or Path("/usr/local/cuda/bin/nvcc").exists()


@pytest.mark.skipif(not HAS_NVCC, reason="needs nvcc (CUDA toolkit) to compile-check csrc/*.cu")
def test_every_cuda_file_compiles():
    proc = subprocess.run(["bash", str(ROOT / "csrc" / "check_cuda.sh"), sys.executable],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    cu_files = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "csrc").rglob("*.cu"))
    assert cu_files, "no .cu file found under csrc/"
    for f in cu_files:
        assert f"nvcc OK  {f}" in proc.stdout, proc.stdout
