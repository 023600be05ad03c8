"""`.ci/setup` redoes a phase only when its inputs changed (``--check`` says what it would do)."""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

needs_venv = pytest.mark.skipif(sys.prefix == sys.base_prefix,
                                reason="needs the tests to run inside a virtual environment "
                                       "made by .ci/setup")


def _check(root: Path) -> subprocess.CompletedProcess:
    env = {"PATH": "/usr/bin:/bin", "PYG_SAR_VENV": sys.prefix, "HOME": str(Path.home())}
    return subprocess.run(["bash", str(root / ".ci" / "setup"), "--check"], cwd=root, env=env,
                          capture_output=True, text=True, timeout=120)


@needs_venv
def test_setup_after_setup_has_nothing_to_do():
    got = _check(ROOT)
    assert got.returncode == 0, got.stdout + got.stderr
    assert "everything up to date" in got.stdout


@needs_venv
def test_a_changed_native_source_or_requirement_is_rebuilt(tmp_path):
    # A copy of what the fingerprints read: the scripts, the requirements, csrc/ and the build.
    for name in (".ci", "csrc", "build"):
        shutil.copytree(ROOT / name, tmp_path / name,
                        ignore=shutil.ignore_patterns("temp", "lib", "cmake"))
    for name in ("setup.py", "requirements.txt", "requirements-dev.txt"):
        shutil.copy(ROOT / name, tmp_path / name)
    (tmp_path / "pyg_sar").mkdir()
    for so in (ROOT / "pyg_sar").glob("_C.*.so"):
        shutil.copy(so, tmp_path / "pyg_sar" / so.name)
    assert "everything up to date" in _check(tmp_path).stdout

    source = next((tmp_path / "csrc" / "ops").glob("*.cpp"))
    source.write_text(source.read_text() + "\n// changed\n")
    got = _check(tmp_path)
    assert got.returncode == 1 and "would redo: extension" in got.stdout, got.stdout

    req = tmp_path / "requirements-dev.txt"
    req.write_text(req.read_text() + "\n# changed\n")
    got = _check(tmp_path)
    assert got.returncode == 1 and "would redo: dependencies extension" in got.stdout, got.stdout
