"""Builds the native operators ``pyg_sar._C`` from csrc/ (sources listed in csrc/sources.txt).

CUDA sources are compiled when torch has CUDA and nvcc is found (``CUDA_HOME``), or when
``FORCE_CUDA=1`` (an error naming what is missing when torch is CPU-only or no CUDA toolkit is
found); ``FORCE_ONLY_CPU=1`` skips them. ``TORCH_CUDA_ARCH_LIST`` (e.g. ``9.0``) restricts the
GPU architectures compiled for (``.ci/gpu`` sets the present GPU's).
``PYG_SAR_NO_EXTENSION=1`` installs the Python package alone (``.ci/setup`` builds the extension
itself, incrementally). Metadata lives in pyproject.toml.

The build is a release build: ``-O3`` without debug information (Python's own ``CFLAGS`` carry
``-g``, overridden here); ``PYG_SAR_DEBUG=1`` builds with ``-g -Og`` instead. The sources compile
in parallel through ninja (a build requirement; ``MAX_JOBS`` sets the jobs).

Built wheels leave out the repository's own test harness: the modules matched by
``[tool.pyg_sar] wheel-exclude`` in pyproject.toml (setuptools has no declarative exclusion of
single modules, only of data files). A source checkout and an editable install keep them, since
the tests run there.
"""
from __future__ import annotations

import fnmatch
import os
import sys
import tomllib
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent
SOURCES_FILE = "csrc/sources.txt"
KINDS = ("cpu", "cuda", "python")


def wheel_exclude() -> tuple[str, ...]:
    """The module name globs of ``[tool.pyg_sar] wheel-exclude`` (pyproject.toml)."""
    with open(ROOT / "pyproject.toml", "rb") as f:
        return tuple(tomllib.load(f).get("tool", {}).get("pyg_sar", {}).get("wheel-exclude", ()))


class BuildPyWithoutHarness(build_py):
    """``build_py`` that leaves the modules of :func:`wheel_exclude` out of the build (hence
    the wheel)."""

    def find_package_modules(self, package, package_dir):
        excluded = wheel_exclude()
        return [m for m in super().find_package_modules(package, package_dir)
                if not any(fnmatch.fnmatchcase(f"{m[0]}.{m[1]}", g) for g in excluded)]


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

    # Release: -O3 and no debug information; -g0 comes after Python's CFLAGS (which carry -g)
    # and wins. PYG_SAR_DEBUG=1: debug information, light optimisation.
    debug = env_flag("PYG_SAR_DEBUG")
    opt = ["-g", "-Og"] if debug else ["-O3", "-g0"]
    cxx_flags = [*opt, "-std=c++20", "-fopenmp"]
    nvcc_flags = ["-g", "-lineinfo", "-O1"] if debug else ["-O3"]
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
        extra_compile_args={"cxx": cxx_flags, "nvcc": [*nvcc_flags, "-std=c++20"]},
        extra_link_args=link_flags,
    )
    print(f"pyg_sar: building pyg_sar._C ({'CPU+CUDA' if with_cuda else 'CPU only'}, "
          f"{len(files)} sources, {'debug' if debug else 'release'})", file=sys.stderr)
    return [ext], {"build_ext": BuildExtension}


ext_modules, cmdclass = ([], {}) if env_flag("PYG_SAR_NO_EXTENSION") else build_extensions()
setup(ext_modules=ext_modules, cmdclass={**cmdclass, "build_py": BuildPyWithoutHarness})
