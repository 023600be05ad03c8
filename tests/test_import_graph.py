"""The import graph of ``pyg_sar`` (issue 37): no module imports itself back through others, and
the package's layers import downwards only.

The graph is read from the source with :mod:`ast`, so an import inside a function (or under
``if TYPE_CHECKING:``) counts as much as one at the top of a module. Edges:

* ``import pyg_sar.a.b`` -> ``pyg_sar.a.b``;
* ``from pyg_sar.a import b`` -> ``pyg_sar.a.b`` when ``b`` is a submodule, else ``pyg_sar.a``
  (the module or package ``__init__`` that defines ``b``); relative imports are resolved;
* ``import pyg_sar`` / ``from pyg_sar import name`` -> ``pyg_sar`` (its ``__init__``, which
  resolves lazy names) and, where ``name`` is a submodule, that submodule as well.

A package's ``__init__`` importing its own children is a re-export and fine; a child importing
its parent's ``__init__`` (``from pyg_sar import get_context`` inside ``pyg_sar/nn``) closes a
cycle and must import the defining module instead.
"""
from __future__ import annotations

import ast
import functools
from pathlib import Path

import pytest

import pyg_sar

PACKAGE = Path(pyg_sar.__file__).resolve().parent
ROOT = "pyg_sar"


# --------------------------------------------------------------------------- the graph
def module_files(package: Path = None) -> dict[str, Path]:
    """Every module of the package by dotted name (a package by its own name, for __init__)."""
    package = package or PACKAGE
    out = {}
    for path in sorted(package.rglob("*.py")):
        parts = (ROOT,) + path.relative_to(package).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


def _is_package(name: str, files: dict[str, Path]) -> bool:
    return name in files and files[name].name == "__init__.py"


def _owner(name: str, files: dict[str, Path]) -> str | None:
    """The longest prefix of ``name`` that is a module of the package."""
    parts = name.split(".")
    while parts:
        candidate = ".".join(parts)
        if candidate in files:
            return candidate
        parts.pop()
    return None


def module_imports(name: str, files: dict[str, Path]) -> list[tuple[str, int]]:
    """``(imported module, line)`` for every import of a package module in module ``name``."""
    path = files[name]
    package = name if _is_package(name, files) else name.rpartition(".")[0]
    out = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name == ROOT or alias.name.startswith(ROOT + "."):
                    target = _owner(alias.name, files)
                    if target:
                        out.append((target, node.lineno))
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(parent + ([base] if base else []))
            if base != ROOT and not base.startswith(ROOT + "."):
                continue
            owner = _owner(base, files)
            if owner is None:
                continue
            for alias in node.names:
                child = f"{base}.{alias.name}"
                if child in files:
                    out.append((child, node.lineno))
                    if base == ROOT:  # pyg_sar/__init__ resolves its lazy names
                        out.append((ROOT, node.lineno))
                else:
                    out.append((owner, node.lineno))
    return out


def import_graph(files: dict[str, Path] = None) -> dict[str, dict[str, int]]:
    """``{module: {imported module: first line}}``, a self-import included."""
    files = files or module_files()
    graph = {}
    for name in files:
        edges = {}
        for target, line in module_imports(name, files):
            edges.setdefault(target, line)
        graph[name] = edges
    return graph


def strongly_connected(graph: dict[str, dict[str, int]]) -> list[list[str]]:
    """Tarjan's strongly connected components (iterative), each sorted."""
    index, low, on_stack, stack, out = {}, {}, set(), [], []
    counter = 0
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            for child in children:
                if child not in graph:
                    continue
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    out.append(sorted(component))
    return out


def cycles(graph: dict[str, dict[str, int]]) -> list[list[str]]:
    """Components of more than one module, and modules importing themselves."""
    return [c for c in strongly_connected(graph)
            if len(c) > 1 or c[0] in graph[c[0]]]


def describe_cycle(component: list[str], graph: dict[str, dict[str, int]],
                   files: dict[str, Path]) -> str:
    members = set(component)
    lines = [f"cycle of {len(component)} module(s): {', '.join(component)}", "  edges:"]
    for source in component:
        where = files[source].relative_to(files[ROOT].parent)
        for target, line in sorted(graph[source].items()):
            if target in members:
                lines.append(f"    {source} -> {target}  ({ROOT}/{where}:{line})")
    return "\n".join(lines)


# --------------------------------------------------------------------------- the layers
# Lowest first; a module may import its own layer or any lower one, never a higher one. A
# module takes the layer of the longest prefix that names it. Assigned from what each part
# imports: ``compression`` (wire codecs) needs only ``ops`` and is read by ``config``, the engine
# and convert, so it sits low; ``link`` (gather, negatives, ranking metrics) needs only the
# engine and is what the converted link models of ``nn`` (GAE, DGI, LightGCN, SuperGAT) build
# on; ``pyg_sar`` itself (lazy re-exports of the public API) is what the tools call.
LAYERS: list[tuple[str, tuple[str, ...]]] = [
    ("base", ("pyg_sar._C", "pyg_sar._extras", "pyg_sar.files", "pyg_sar.cli_types",
              "pyg_sar.names", "pyg_sar._lazy")),
    ("ops", ("pyg_sar.ops",)),
    ("compression", ("pyg_sar.compression",)),
    ("config", ("pyg_sar.config",)),
    ("distributed", ("pyg_sar.distributed",)),
    ("graph", ("pyg_sar.graph", "pyg_sar.partition")),
    ("core", ("pyg_sar.core",)),
    ("link", ("pyg_sar.link",)),
    ("nn", ("pyg_sar.nn",)),
    ("features", ("pyg_sar.sampling", "pyg_sar.datasets")),
    ("api", ("pyg_sar",)),
    ("tools", ("pyg_sar.train", "pyg_sar.train_common", "pyg_sar.train_link", "pyg_sar.plan",
               "pyg_sar.predict", "pyg_sar.checkpoint", "pyg_sar.reshard", "pyg_sar.testing",
               "pyg_sar.partition.__main__", "pyg_sar.cli_errors", "pyg_sar.train_args",
               "pyg_sar.train_node")),
]

# Upward imports not fixed yet: (importer, imported) -> why. The test fails on any upward
# import missing here AND on any entry here that no longer exists, so this only shrinks.
KNOWN_UPWARD: dict[tuple[str, str], str] = {}


def layer_of(module: str) -> int:
    """The position in :data:`LAYERS` of ``module`` (``pyg_sar`` itself names only the package's
    ``__init__``, not everything under it)."""
    best, rank = -1, None
    for position, (_, prefixes) in enumerate(LAYERS):
        for prefix in prefixes:
            below = module.startswith(prefix + ".") and prefix != ROOT
            if (module == prefix or below) and len(prefix) > best:
                best, rank = len(prefix), position
    if rank is None:
        raise AssertionError(f"{module} is in no layer of LAYERS")
    return rank


def upward_imports(graph: dict[str, dict[str, int]]) -> dict[tuple[str, str], int]:
    return {(source, target): line for source, edges in graph.items()
            for target, line in edges.items() if layer_of(target) > layer_of(source)}


# --------------------------------------------------------------------------- the tests
@functools.cache
def package_graph() -> tuple[dict[str, Path], dict[str, dict[str, int]]]:
    files = module_files()
    return files, import_graph(files)


def test_no_import_cycles():
    files, graph = package_graph()
    found = cycles(graph)
    assert not found, "import cycles (cut one edge of each):\n" + "\n".join(
        describe_cycle(c, graph, files) for c in found)


def test_every_module_has_a_layer():
    for module in package_graph()[0]:
        layer_of(module)


def layer_problems(graph: dict[str, dict[str, int]], files: dict[str, Path],
                   known: dict[tuple[str, str], str]) -> list[str]:
    """Upward imports missing from ``known``, and entries of ``known`` that no longer exist."""
    upward = upward_imports(graph)
    new = {edge: line for edge, line in upward.items() if edge not in known}
    stale = sorted(edge for edge in known if edge not in upward)
    message = []
    if new:
        message.append("imports of a higher layer (import the lower module's owner instead, or "
                       "move the code down):\n" + "\n".join(
                           f"  {s} ({LAYERS[layer_of(s)][0]}) -> {t} ({LAYERS[layer_of(t)][0]})"
                           f"  ({ROOT}/{files[s].relative_to(files[ROOT].parent)}:{line})"
                           for (s, t), line in sorted(new.items())))
    if stale:
        message.append("KNOWN_UPWARD entries that no longer exist (delete them):\n" + "\n".join(
            f"  {s} -> {t}" for s, t in stale))
    return message


def test_layers_import_downwards():
    files, graph = package_graph()
    problems = layer_problems(graph, files, KNOWN_UPWARD)
    assert not problems, "\n".join(problems)


# --------------------------------------------------------------------------- the checker
def _fake_package(tmp_path: Path, sources: dict[str, str]) -> dict[str, Path]:
    root = tmp_path / ROOT
    for relative, text in sources.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return module_files(root)


def test_the_graph_sees_function_level_and_relative_imports(tmp_path):
    files = _fake_package(tmp_path, {
        "__init__.py": "",
        "a/__init__.py": "from .x import f\n",
        "a/x.py": "def f():\n    from ..b import g\n",
        "b.py": "def g():\n    from pyg_sar import a\n",
        "c.py": "from pyg_sar.a import f\nimport pyg_sar.b as b\n",
        "d.py": "def h():\n    from . import d\n",
    })
    graph = import_graph(files)
    assert graph["pyg_sar"] == {}
    assert graph["pyg_sar.a"] == {"pyg_sar.a.x": 1}  # a package importing its own child
    assert graph["pyg_sar.a.x"] == {"pyg_sar.b": 2}
    assert graph["pyg_sar.b"] == {"pyg_sar.a": 2, "pyg_sar": 2}
    assert graph["pyg_sar.c"] == {"pyg_sar.a": 1, "pyg_sar.b": 2}
    found = cycles(graph)
    assert ["pyg_sar.a", "pyg_sar.a.x", "pyg_sar.b"] in found
    assert ["pyg_sar.d"] in found  # a self-import
    text = describe_cycle(["pyg_sar.a", "pyg_sar.a.x", "pyg_sar.b"], graph, files)
    assert "pyg_sar.a.x -> pyg_sar.b  (pyg_sar/a/x.py:2)" in text


def test_a_child_importing_its_parent_package_is_a_cycle(tmp_path):
    files = _fake_package(tmp_path, {
        "__init__.py": "",
        "nn/__init__.py": "from pyg_sar.nn.x import f\n",
        "nn/x.py": "def f():\n    from pyg_sar.nn import g\n",
        "nn/y.py": "def g():\n    pass\n",
    })
    graph = import_graph(files)
    assert cycles(graph) == [["pyg_sar.nn", "pyg_sar.nn.x"]]
    # a re-export alone is no cycle
    assert cycles(import_graph(_fake_package(tmp_path / "ok", {
        "__init__.py": "", "nn/__init__.py": "from .x import f\n", "nn/x.py": "f = 1\n"}))) == []


@pytest.mark.parametrize("module, layer", [("pyg_sar.ops._native", "ops"),
                                           ("pyg_sar.partition.loader", "graph"),
                                           ("pyg_sar.train_link", "tools"),
                                           ("pyg_sar", "api")])
def test_layer_lookup(module, layer):
    assert LAYERS[layer_of(module)][0] == layer


def test_known_upward_only_shrinks(tmp_path):
    files = _fake_package(tmp_path, {
        "__init__.py": "",
        "ops/__init__.py": "",
        "ops/k.py": "def f():\n    from pyg_sar.nn import m\n",
        "nn/__init__.py": "",
        "nn/m.py": "from pyg_sar.ops import k\n",
    })
    graph = import_graph(files)
    edge = ("pyg_sar.ops.k", "pyg_sar.nn.m")
    assert upward_imports(graph) == {edge: 2}
    problems = layer_problems(graph, files, {})
    assert len(problems) == 1 and "pyg_sar.ops.k (ops) -> pyg_sar.nn.m (nn)" in problems[0]
    assert "pyg_sar/ops/k.py:2" in problems[0]
    assert layer_problems(graph, files, {edge: "a reason"}) == []
    stale = {edge: "a reason", ("pyg_sar.ops.k", "pyg_sar.graph"): "fixed since"}
    problems = layer_problems(graph, files, stale)
    assert len(problems) == 1 and "no longer exist" in problems[0]
