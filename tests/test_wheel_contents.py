"""What a built wheel holds: the library, its public testing helpers, the shipped datasets with
their licences and the package's LICENSE, without the project's own test harness (the
layer/model zoo, the network-namespace hosts), which stays importable in a source checkout.

The wheel's Python files and data are exactly what ``setup.py build_py`` writes (the C++ build is
left out here: ``PYG_SAR_NO_EXTENSION=1``), so that is what these tests build. The built tree then
runs from outside the repository, with the checkout's compiled ``_C`` beside it, as an installed
wheel does: the main job's commands must not reach back into the checkout.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
HARNESS = {"zoo.py", "zoo_models.py", "zoo_rank.py", "zoo_recipes.py", "zoo_report.py",
           "zoo_precision.py", "zoo_precision_rank.py", "zoo_hetero.py", "zoo_hetero_rank.py",
           "zoo_hetero_recipes.py", "netns.py", "cgroup.py"}
PUBLIC_TESTING = {"__init__.py", "launcher.py", "worker.py", "devices.py"}
LICENCES = {"pyg_sar/datasets/data/planetoid/LICENSE",
            "pyg_sar/datasets/data/wordnet/LICENSE-WordNet-3.0"}


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> tuple[Path, Path]:
    """(a copy of the sources, the ``build_py`` output built from it)."""
    tmp = tmp_path_factory.mktemp("wheel")
    src = tmp / "src"  # a copy, so the build leaves the checkout's egg-info alone
    src.mkdir()
    for name in ("setup.py", "pyproject.toml", "MANIFEST.in", "README.md", "LICENSE"):
        shutil.copy(ROOT / name, src / name)
    shutil.copytree(ROOT / "csrc", src / "csrc")
    shutil.copytree(ROOT / "pyg_sar", src / "pyg_sar",
                    ignore=shutil.ignore_patterns("__pycache__", "*.so"))
    out = tmp / "lib"
    env = dict(os.environ, PYG_SAR_NO_EXTENSION="1")
    run = subprocess.run([sys.executable, "setup.py", "-q", "build_py", "--build-lib", str(out)],
                         cwd=src, env=env, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]
    return src, out


def test_wheel_leaves_out_the_harness_and_keeps_the_library(built):
    src, out = built
    files = {p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file()}
    built_py = {p for p in files if p.endswith(".py")}
    testing = {p.split("/")[-1] for p in built_py if p.startswith("pyg_sar/testing/")}
    assert testing == PUBLIC_TESTING
    source = {p.relative_to(src).as_posix() for p in (src / "pyg_sar").rglob("*.py")}
    harness = {f"pyg_sar/testing/{name}" for name in HARNESS}
    assert harness <= source  # the checkout keeps them (tests and CI import them)
    assert built_py == source - harness

    # The data: the shipped datasets with their licences beside them, nothing else.
    data = {p for p in files if not p.endswith(".py")}
    shipped = {p.relative_to(src).as_posix()
               for p in (src / "pyg_sar" / "datasets" / "data").rglob("*") if p.is_file()}
    assert data == shipped
    cora = {f"pyg_sar/datasets/data/planetoid/Cora/raw/ind.cora.{ext}"
            for ext in ("x", "y", "tx", "ty", "allx", "ally", "graph", "test.index")}
    assert cora | LICENCES <= data  # the default job runs offline


def test_the_library_never_imports_the_harness():
    """Nothing the wheel holds may import what it leaves out."""
    excluded = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pyg_sar"][
        "wheel-exclude"]
    assert excluded == ["pyg_sar.testing.zoo*", "pyg_sar.testing.netns", "pyg_sar.testing.cgroup"]
    names = ["pyg_sar.testing.zoo", "pyg_sar.testing.netns", "pyg_sar.testing.cgroup"]
    bad = []
    for path in (ROOT / "pyg_sar").rglob("*.py"):
        rel = path.relative_to(ROOT).as_posix()
        if rel.removesuffix(".py").replace("/", ".").startswith(tuple(names)):
            continue
        text = path.read_text()
        for name in names:
            if f"import {name}" in text or f"from {name}" in text:
                bad.append(f"{rel} imports {name}")
    assert bad == []


def test_licence_and_metadata():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["license"] == "MIT"
    assert set(project["license-files"]) == {"LICENSE", *LICENCES}
    for name in project["license-files"]:
        assert (ROOT / name).is_file(), name
    assert "MIT License" in (ROOT / "LICENSE").read_text()
    assert "the pyg_sar authors" in (ROOT / "LICENSE").read_text()
    # every shipped dataset folder has its licence beside its data
    for folder in ("planetoid", "wordnet"):
        assert any(p.name.startswith("LICENSE")
                   for p in (ROOT / "pyg_sar" / "datasets" / "data" / folder).iterdir())
    import pyg_sar
    assert pyg_sar.__version__ == "0.2.0"
    assert f"## {pyg_sar.__version__} (" in (ROOT / "CHANGELOG.md").read_text()


def test_the_built_package_runs_outside_the_checkout(built, tmp_path):
    """The built tree plus the checkout's ``_C``, run from a folder outside the repository:
    the native kernels load, the CLIs start, and Cora is partitioned and trained on offline
    from the files the wheel ships."""
    so = sorted((ROOT / "pyg_sar").glob("_C.*.so"))
    if not so:
        pytest.skip("pyg_sar._C is not built in this checkout (bash .ci/setup builds it)")
    _, out = built
    lib = tmp_path / "lib"
    shutil.copytree(out, lib)
    shutil.copy(so[0], lib / "pyg_sar" / so[0].name)
    work = tmp_path / "work"
    work.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYG_SAR_")}
    env.update(PYTHONPATH=str(lib), PYG_SAR_CACHE=str(tmp_path / "cache"),
               OMP_NUM_THREADS="1")

    # One interpreter (each start imports torch): the CLIs run through their main().
    script = """
import contextlib, io, sys
import pyg_sar, pyg_sar.ops as o
print(pyg_sar.__file__, o.native_available())
from pyg_sar.partition.__main__ import main as partition
from pyg_sar.train import main as train
for main in (partition, train):
    with contextlib.suppress(SystemExit), contextlib.redirect_stdout(io.StringIO()) as out:
        main(["--help"])
    print(out.getvalue().splitlines()[0])
assert partition(["--dataset", "cora", "--num-parts", "1", "--out", "parts"]) == 0
assert train(["--parts", "parts", "--epochs", "2", "--progress", "log"]) == 0
"""
    got = subprocess.run([sys.executable, "-c", script], cwd=work, env=env, capture_output=True,
                         text=True, timeout=900)
    assert got.returncode == 0, got.stdout[-2000:] + got.stderr[-2000:]
    lines = got.stdout.splitlines()
    assert lines[0] == f"{lib / 'pyg_sar' / '__init__.py'} True"  # the built copy, native
    assert lines[1].startswith("usage: python -m pyg_sar.partition")
    assert lines[2].startswith("usage: python -m pyg_sar.train")
    assert "test" in got.stdout.split(lines[2], 1)[1].lower()  # trained and evaluated
