"""Builds the native operators ``pyg_sar._C`` from csrc/ (sources listed in csrc/sources.txt).

CUDA sources are compiled when torch has CUDA and nvcc is found (``CUDA_HOME``), or when
``FORCE_CUDA=1`` (an error naming what is missing when torch is CPU-only or no CUDA toolkit is
found); ``FORCE_ONLY_CPU=1`` skips them. ``TORCH_CUDA_ARCH_LIST`` (e.g. ``9.0``) restricts the
GPU architectures compiled for (``.ci/gpu`` sets the present GPU's).
``PYG_SAR_NO_EXTENSION=1`` installs the Python package alone (``.ci/setup`` builds the extension
itself, incrementally). Metadata lives in pyproject.toml.

Built wheels leave out the repository's own test harness (:data:`HARNESS_MODULES`); a source
checkout and an editable install keep it, since the tests run there.
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent
SOURCES_FILE = "csrc/sources.txt"
KINDS = ("cpu", "cuda", "python")
# The layer/model zoo: the recipes, driver, rank side and report behind tests/zoo and the
# supported-layers page. It is the project's own exactness suite, not API; the public testing
# helpers (pyg_sar.testing: run_on_ranks, its worker, the namespace hosts) stay in the wheel.
HARNESS_MODULES = frozenset(("pyg_sar.testing", name) for name in
                            ("zoo", "zoo_models", "zoo_rank", "zoo_recipes", "zoo_report",
                             "zoo_precision", "zoo_precision_rank", "zoo_hetero",
                             "zoo_hetero_rank", "zoo_hetero_recipes"))


class BuildPyWithoutHarness(build_py):
    """``build_py`` that leaves :data:`HARNESS_MODULES` out of the build (hence the wheel)."""

    def find_package_modules(self, package, package_dir):
        return [m for m in super().find_package_modules(package, package_dir)
                if (m[0], m[1]) not in HARNESS_MODULES]


def read_sources(path: Path) -> dict[str, list[str]]:
    """Parses ``<kind> <path>`` lines; '#' starts a comment."""
    out: dict[str, list[str]] = {kind: [] for kind in KINDS}
    for lineno, line in enumerate(path.read_text().splitlines(), start=1):
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        parts = line.split()
        if len(parts) != 2 or parts[0] not in KINDS:
            kinds = "|".join(KINDS)
            raise ValueError(f"{path}:{lineno}: expected '<{kinds}> <path>' (got {line!r})")
        out[parts[0]].append(parts[1])
    return out


def env_flag(name: str) -> bool:
    return os.getenv(name, "0").lower() in ("1", "true", "yes", "on")


def build_extensions() -> tuple[list, dict]:
    import torch
    from torch.utils.cpp_extension import CUDA_HOME, BuildExtension, CppExtension, CUDAExtension

    sources = read_sources(ROOT / SOURCES_FILE)
    with_cuda = not env_flag("FORCE_ONLY_CPU") and (
        env_flag("FORCE_CUDA") or (torch.version.cuda is not None and CUDA_HOME is not None))
    if with_cuda and env_flag("FORCE_CUDA"):
        # A CUDA build links torch's CUDA libraries and compiles with nvcc: say which is missing
        # instead of failing deep inside the compiler or the linker.
        if torch.version.cuda is None:
            raise RuntimeError(f"setup.py: FORCE_CUDA=1 needs a CUDA build of torch (torch "
                               f"{torch.__version__} is CPU-only)")
        if CUDA_HOME is None:
            raise RuntimeError("setup.py: FORCE_CUDA=1 but no CUDA toolkit was found (set "
                               "CUDA_HOME or put nvcc on PATH)")
    if with_cuda:
        # TORCH_CUDA_ARCH_LIST picks the GPU architectures (e.g. "9.0"; .ci/gpu sets the present
        # GPU's). Unset, torch targets the visible GPUs, or every architecture it knows.
        archs = os.environ.get("TORCH_CUDA_ARCH_LIST") or "torch's default (the visible GPUs)"
        print(f"pyg_sar: CUDA architectures: {archs}", file=sys.stderr)

    cxx_flags = ["-O3", "-std=c++20", "-fopenmp"]
    link_flags = ["-fopenmp"]
    if sys.platform == "darwin":  # Apple clang has no -fopenmp; torch's parallel_for stays serial
        cxx_flags.remove("-fopenmp")
        link_flags = []
    define_macros = [("WITH_CUDA", None)] if with_cuda else []
    extension = CUDAExtension if with_cuda else CppExtension
    files = sources["python"] + sources["cpu"] + (sources["cuda"] if with_cuda else [])
    ext = extension(
        "pyg_sar._C",
        files,
        include_dirs=[str(ROOT / "csrc")],
        define_macros=define_macros,
        extra_compile_args={"cxx": cxx_flags, "nvcc": ["-O3", "-std=c++20"]},
        extra_link_args=link_flags,
    )
    print(f"pyg_sar: building pyg_sar._C ({'CPU+CUDA' if with_cuda else 'CPU only'}, "
          f"{len(files)} sources)", file=sys.stderr)
    return [ext], {"build_ext": BuildExtension}


ext_modules, cmdclass = ([], {}) if env_flag("PYG_SAR_NO_EXTENSION") else build_extensions()
setup(ext_modules=ext_modules, cmdclass={**cmdclass, "build_py": BuildPyWithoutHarness})
