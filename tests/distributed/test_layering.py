"""The layering of issue 13: the transport imports nothing from failure supervision (or the
bootstrap), and only the API's edge reads the process-wide context."""
import ast
from pathlib import Path

import pyg_sar

PACKAGE = Path(pyg_sar.__file__).resolve().parent
SUPERVISION = ("hub", "operations", "witness", "witness_link", "exit_hooks", "join",
               "supervision", "context", "mpi_init_guard")
# Public functions that take an optional context resolve the default one (resolve_context).
EDGE = {"distributed/context.py", "distributed/sync.py", "checkpoint.py", "graph.py",
        "partition/loader.py", "nn/functional.py", "nn/norm.py", "sampling/distributed.py",
        "train.py", "testing/worker.py", "distributed/__init__.py", "__init__.py",
        "distributed/supervision.py", "distributed/rank_utils.py", "nn/grad_sync.py",
        "partition/distribute.py", "link/gather.py",
        # A user's call of a converted SGFormer / Polynormer / GPSConv without a DistGraph:
        # refused in a run of several ranks (its forward spans every node), read from init's.
        "nn/module_forwards.py",
        # Public functions with an optional context, as the losses of nn/functional.py.
        "nn/clip.py", "predict.py",
        # A converted layer given a plain edge_index while training: refused in a run of
        # several ranks (every rank would count the whole graph), read from init's.
        "nn/conversion/converted.py",
        # The CLIs' one-line errors: tell the job's other ranks, unless one failed first.
        "cli_errors.py"}


def _imports(path: Path) -> list[str]:
    tree = ast.parse(path.read_text())
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            out += [node.module] + [f"{node.module}.{a.name}" for a in node.names]
        elif isinstance(node, ast.Import):
            out += [a.name for a in node.names]
    return out


def test_transport_imports_no_supervision():
    modules = sorted((PACKAGE / "distributed" / "transport").glob("*.py"))
    assert {m.name for m in modules} >= {"base.py", "mpi.py", "gloo.py", "nccl.py", "local.py"}
    for module in modules:
        bad = [name for name in _imports(module)
               if name.startswith("pyg_sar") and any(f".{s}" in name for s in SUPERVISION)]
        assert not bad, f"{module.name} imports {bad}"


def test_only_the_edge_reads_the_global_context():
    readers = set()
    for module in PACKAGE.rglob("*.py"):
        text = module.read_text()
        if any(word in text for word in ("get_context(", "resolve_context(", "_CONTEXT")):
            readers.add(module.relative_to(PACKAGE).as_posix())
    assert readers <= EDGE, f"reading the process-wide context below the edge: {readers - EDGE}"
    assert not any(r.startswith(("core/", "ops/", "distributed/transport/")) for r in readers)


def test_supervision_keeps_no_module_state():
    """Supervision state lives in objects (a Supervisor owned by the supervised communicator):
    no supervision module rebinds a module-level name."""
    for name in ("hub", "operations", "witness_link", "exit_hooks", "supervision"):
        tree = ast.parse((PACKAGE / "distributed" / f"{name}.py").read_text())
        rebound = [n.names for n in ast.walk(tree) if isinstance(n, ast.Global)]
        assert not rebound, f"{name}.py rebinds module-level names {rebound}"
