"""The package's layers import downwards only: ``ops`` (native kernels and their references) is
the bottom and imports nothing else of pyg_sar; ``core`` (the block walk and combine rules) builds
on ``ops`` and never imports the PyG seam ``nn`` (nor the harness ``testing`` or the CLI).

Both the static imports (every ``import`` statement, function-level ones included) and what a
fresh interpreter actually loads are checked.
"""
from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

import pyg_sar

PACKAGE = Path(pyg_sar.__file__).resolve().parent
# what each layer must not import (prefixes of module names)
FORBIDDEN = {
    "ops": ("pyg_sar.core", "pyg_sar.nn", "pyg_sar.distributed", "pyg_sar.partition",
            "pyg_sar.compression", "pyg_sar.sampling", "pyg_sar.testing", "pyg_sar.train"),
    "core": ("pyg_sar.nn", "pyg_sar.testing", "pyg_sar.train"),
}


def imported_modules(path: Path) -> list[str]:
    """Absolute module names imported anywhere in ``path`` (relative imports resolved)."""
    package = ".".join(("pyg_sar",) + path.relative_to(PACKAGE).parent.parts)
    out = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(parent + ([base] if base else []))
            out += [base] + [f"{base}.{a.name}" for a in node.names]
    return out


def violations(layer: str) -> list[str]:
    bad = []
    for module in sorted((PACKAGE / layer).rglob("*.py")):
        for name in imported_modules(module):
            if name.startswith(FORBIDDEN[layer]):
                bad.append(f"{module.relative_to(PACKAGE)} imports {name}")
    return bad


@pytest.mark.parametrize("layer", sorted(FORBIDDEN))
def test_layer_imports_point_down(layer):
    assert violations(layer) == []


def test_the_check_sees_function_level_imports(tmp_path, monkeypatch):
    """The AST walk must catch a lazy import inside a function (the old ops -> core cycle)."""
    fake = tmp_path / "pyg_sar"
    (fake / "ops").mkdir(parents=True)
    (fake / "ops" / "x.py").write_text("def f():\n    from pyg_sar.core.combine import Rule\n")
    (fake / "ops" / "y.py").write_text("from ..nn import convert\n")
    monkeypatch.setattr(sys.modules[__name__], "PACKAGE", fake)
    assert violations("ops") == ["ops/x.py imports pyg_sar.core.combine",
                                 "ops/x.py imports pyg_sar.core.combine.Rule",
                                 "ops/y.py imports pyg_sar.nn",
                                 "ops/y.py imports pyg_sar.nn.convert"]


@pytest.mark.parametrize("layer", sorted(FORBIDDEN))
def test_importing_a_layer_loads_nothing_above_it(layer):
    modules = [f"pyg_sar.{layer}." + p.relative_to(PACKAGE / layer).with_suffix("").as_posix()
               .replace("/", ".") for p in sorted((PACKAGE / layer).rglob("*.py"))]
    modules = [m.removesuffix(".__init__") for m in modules]
    code = ("import importlib, json, sys\n"
            f"for m in {modules!r}: importlib.import_module(m)\n"
            "print(json.dumps(sorted(m for m in sys.modules if m.startswith('pyg_sar'))))")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr[-2000:]
    loaded = json.loads(run.stdout.strip().splitlines()[-1])
    assert [m for m in loaded if m.startswith(FORBIDDEN[layer])] == []
