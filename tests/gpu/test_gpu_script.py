"""`.ci/gpu` and the GPU benchmark on a machine without a GPU: they stop at once saying why
(never pass by doing nothing), `--check` describes the run, a device named in
PYG_SAR_TEST_DEVICES fails its tests instead of skipping, and the benchmark's smoke mode runs."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from glob import glob
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / ".ci" / "gpu"
HAS_GPU_DEVICE = bool(glob("/dev/nvidia[0-9]*"))

no_gpu_here = pytest.mark.skipif(HAS_GPU_DEVICE or torch.cuda.is_available(),
                                 reason="checks the behaviour on a machine without a GPU")


def _gpu(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    base = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(Path.home())}
    return subprocess.run(["bash", str(SCRIPT), *args], cwd=ROOT, env={**base, **(env or {})},
                          capture_output=True, text=True, timeout=120)


def test_the_script_is_executable_bash():
    assert os.access(SCRIPT, os.X_OK)
    assert subprocess.run(["bash", "-n", str(SCRIPT)], capture_output=True).returncode == 0


@no_gpu_here
def test_without_a_gpu_it_stops_at_once_saying_why():
    t0 = time.monotonic()
    got = _gpu()
    assert time.monotonic() - t0 < 10
    assert got.returncode == 1, got.stdout + got.stderr
    assert "no NVIDIA GPU on this machine" in got.stderr
    assert not (ROOT / "gpu-results" / "summary.json").exists() or \
        (ROOT / "gpu-results" / "summary.json").stat().st_mtime < time.time() - 60


@no_gpu_here
def test_check_describes_the_run_and_changes_nothing():
    got = _gpu("--check")
    assert got.returncode == 1, got.stdout + got.stderr
    assert "cannot run here: no NVIDIA GPU" in got.stdout
    for step in ("build pyg_sar._C", "pytest -m device", "benchmarks/gpu_kernels.py"):
        assert step in got.stdout


@pytest.mark.skipif(torch.version.cuda is not None, reason="needs a CPU-only torch")
def test_a_cpu_only_torch_is_refused_naming_the_pythons_tried():
    got = _gpu(env={"PYG_SAR_GPU_SKIP_DEVICE_FILES": "1", "PYG_SAR_GPU_PYTHON": sys.executable})
    assert got.returncode == 1, got.stdout + got.stderr
    assert "no python with a CUDA build of torch" in got.stderr
    assert f"{sys.executable}: torch CUDA none" in got.stderr


def test_unknown_arguments_are_refused():
    got = _gpu("--bogus")
    assert got.returncode == 2 and "unknown argument '--bogus'" in got.stderr


@no_gpu_here
def test_a_device_named_in_the_environment_fails_instead_of_skipping(tmp_path):
    probe = tmp_path / "test_probe.py"
    probe.write_text(
        "import pytest\n"
        "from pyg_sar.testing.devices import only_cuda, require_device, with_devices\n"
        "pytestmark = pytest.mark.device\n"
        "@with_devices\n"
        "def test_on(device):\n"
        "    require_device(device)\n"
        "@only_cuda\n"
        "def test_only():\n"
        "    require_device('cuda')\n")

    def run(devices: str | None) -> subprocess.CompletedProcess:
        env = {k: v for k, v in os.environ.items() if k != "PYG_SAR_TEST_DEVICES"}
        if devices is not None:
            env["PYG_SAR_TEST_DEVICES"] = devices
        env["PYTHONPATH"] = str(ROOT)
        return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                               "-m", "device", str(probe)], cwd=tmp_path, env=env,
                              capture_output=True, text=True, timeout=300)

    default = run(None)
    assert default.returncode == 0 and "1 passed, 2 skipped" in default.stdout, default.stdout
    mandatory = run("cpu,cuda")
    assert mandatory.returncode == 1, mandatory.stdout
    assert "2 failed, 1 passed" in mandatory.stdout, mandatory.stdout
    assert "device cuda was requested but is unavailable" in mandatory.stdout


@no_gpu_here
def test_the_benchmark_needs_a_gpu_and_says_so():
    got = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "gpu_kernels.py")],
                         capture_output=True, text=True, timeout=300)
    assert got.returncode == 2 and "needs a CUDA GPU" in got.stderr, got.stderr


def test_the_benchmark_smoke_mode_measures_every_case(tmp_path):
    out = tmp_path / "gpu_kernels.json"
    got = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "gpu_kernels.py"), "--smoke",
                          "--out", str(out)], capture_output=True, text=True, timeout=600)
    assert got.returncode == 0, got.stdout + got.stderr
    result = json.loads(out.read_text())
    assert result["smoke"] and result["graph"]["edges"] > 0
    cases = {(c["case"], c["dtype"]) for c in result["cases"]}
    assert cases == {(c, d) for c in ("op/sum", "op/mean", "layer/sage", "layer/gat")
                     for d in ("float32", "bfloat16")}
    for c in result["cases"]:
        assert "error" not in c, c
        assert c["ours"]["time_s"] > 0 and c["pyg"]["time_s"] > 0
        # both sides compute the same function (bfloat16: PyG rounds its sums to bfloat16)
        assert c["max_rel_diff"] <= (1e-5 if c["dtype"] == "float32" else 2.0 ** -6), c
