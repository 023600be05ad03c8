"""What a built wheel holds: the library and its public testing helpers, without the project's
own test harness (the layer/model zoo), which stays importable in a source checkout."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HARNESS = {"zoo.py", "zoo_models.py", "zoo_rank.py", "zoo_recipes.py", "zoo_report.py",
           "zoo_precision.py", "zoo_precision_rank.py", "zoo_hetero.py", "zoo_hetero_rank.py",
           "zoo_hetero_recipes.py"}
PUBLIC_TESTING = {"__init__.py", "launcher.py", "worker.py", "netns.py", "devices.py",
                  "cgroup.py"}


def test_wheel_leaves_out_the_harness_and_keeps_the_library(tmp_path):
    src = tmp_path / "src"  # a copy, so the build leaves the checkout's egg-info alone
    src.mkdir()
    for name in ("setup.py", "pyproject.toml", "MANIFEST.in", "README.md"):
        shutil.copy(ROOT / name, src / name)
    shutil.copytree(ROOT / "csrc", src / "csrc")
    shutil.copytree(ROOT / "pyg_sar", src / "pyg_sar",
                    ignore=shutil.ignore_patterns("__pycache__", "*.so"))
    out = tmp_path / "lib"
    env = dict(os.environ, PYG_SAR_NO_EXTENSION="1")
    run = subprocess.run([sys.executable, "setup.py", "-q", "build_py", "--build-lib", str(out)],
                         cwd=src, env=env, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]

    built = {p.relative_to(out).as_posix() for p in out.rglob("*.py")}
    testing = {p.split("/")[-1] for p in built if p.startswith("pyg_sar/testing/")}
    assert testing == PUBLIC_TESTING
    source = {p.relative_to(src).as_posix() for p in (src / "pyg_sar").rglob("*.py")}
    harness = {f"pyg_sar/testing/{name}" for name in HARNESS}
    assert harness <= source  # the checkout keeps them (tests and CI import them)
    assert built == source - harness
