"""``pyg_sar.unconvert``: a converted model becomes the plain PyG model again, in place (PyG
classes, torch's BatchNorm1d sharing the trained parameters and statistics, no pyg_sar hooks or
``_sar_*`` attributes), equal to single-process PyG, and a saved copy loads in a process where
pyg_sar cannot be imported."""
from __future__ import annotations

import copy
import os
import subprocess
import sys

import pytest
import torch
from torch_geometric.nn import (
    GAT,
    GCN,
    GIN,
    GATv2Conv,
    GCNConv,
    GraphSAGE,
    RGATConv,
    SAGEConv,
    SuperGATConv,
)

import pyg_sar
from pyg_sar.compression import Compressor, Truncate
from pyg_sar.partition import load_partition, partition_graph
from pyg_sar.testing.zoo_rank import make_graph
from pyg_sar.testing.zoo_recipes import IN, RELATIONS


class Net(torch.nn.Module):
    """A user's model: GCN, batch norm, GATv2 and SAGE layers."""

    def __init__(self) -> None:
        super().__init__()
        self.conv1 = GCNConv(IN, 8)
        self.norm = torch.nn.BatchNorm1d(8)
        self.conv2 = GATv2Conv(8, 4, heads=2)
        self.conv3 = SAGEConv(8, 3)

    def forward(self, x, edge_index):
        x = self.norm(self.conv1(x, edge_index)).relu()
        return self.conv3(self.conv2(x, edge_index).relu(), edge_index)

@pytest.fixture(scope="module")
def graph(tmp_path_factory):
    data = make_graph()
    path = partition_graph(data, 1, tmp_path_factory.mktemp("unconvert") / "p",
                           method="random")
    return data, load_partition(path, 0, world_size=1)


class RGAT(torch.nn.Module):
    """RGATConv leaves a marker in ``_alpha`` over a DistGraph (a pyg_sar object)."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = RGATConv(IN, 4, RELATIONS, heads=2)

    def forward(self, x, edge_index, edge_type):
        return self.conv(x, edge_index, edge_type)


MODELS = {
    "GCN[batch_norm]": lambda: GCN(IN, 8, 2, 3, norm="batch_norm"),
    "GraphSAGE": lambda: GraphSAGE(IN, 8, 2, 3),
    "GAT": lambda: GAT(IN, 8, 2, 3, heads=2),
    "GATv2": lambda: GAT(IN, 8, 2, 3, heads=2, v2=True),
    "GIN[batch_norm]": lambda: GIN(IN, 8, 2, 3, norm="batch_norm"),
    "Net": Net,
    "SuperGATConv": lambda: SuperGATConv(IN, 4, heads=2),
    "RGATConv": RGAT,
}


def _call(model, x, graph, data):
    if isinstance(model, RGAT):
        edge_type = data.edge_type if isinstance(graph, torch.Tensor) else \
            data.edge_data["edge_type"]
        return model(x, graph, edge_type)
    return model(x, graph)


def _sar_leftovers(model) -> list[str]:
    """Every trace of pyg_sar left on the model."""
    found = []
    for name, module in model.named_modules():
        cls = type(module)
        if cls.__module__.startswith("pyg_sar"):
            found.append(f"{name}: class {cls}")
        found += [f"{name}.{k}" for k in vars(module) if k.startswith("_sar_")]
        for key, value in vars(module).items():
            if type(value).__module__.startswith("pyg_sar"):
                found.append(f"{name}.{key} = {value!r}")
        for table in ("_forward_pre_hooks", "_forward_hooks", "_backward_hooks"):
            found += [f"{name}.{table}: {h}" for h in getattr(module, table).values()
                      if getattr(h, "__module__", "").startswith("pyg_sar")]
    return found


@pytest.mark.parametrize("build", MODELS)
def test_unconvert_gives_back_the_plain_model(graph, build):
    data, part = graph
    torch.manual_seed(0)
    plain = MODELS[build]().double()
    model = copy.deepcopy(plain)
    pyg_sar.convert(model, pyg_sar.SARConfig(compression=Compressor(Truncate(), 2.0)))
    model.train()
    _call(model, part.x, part.graph, part).sum().backward()  # runtime state, running stats
    params = dict(model.named_parameters())
    buffers = dict(model.named_buffers())

    assert pyg_sar.unconvert(model) is model

    assert _sar_leftovers(model) == []
    assert [(n, type(m)) for n, m in model.named_modules()] == \
        [(n, type(m)) for n, m in plain.named_modules()]
    # The same parameter and buffer objects (an optimizer over them still works).
    assert all(p is params[n] for n, p in model.named_parameters())
    assert all(b is buffers[n] for n, b in model.named_buffers())
    # Single-process PyG with the same state, in eval and in training mode.
    plain.load_state_dict(model.state_dict())
    for training in (False, True):
        model.train(training)
        plain.train(training)
        torch.manual_seed(1)
        got = _call(model, data.x, data.edge_index, data)
        torch.manual_seed(1)
        assert torch.equal(got, _call(plain, data.x, data.edge_index, data))
    # A DistGraph now meets a plain PyG layer: an error (pyg_sar's naming convert where the
    # layer reads the graph as a tensor, else PyG's own about edge_index), never an answer.
    with pytest.raises((RuntimeError, ValueError, TypeError, AttributeError),
                       match=r"edge_index|pyg_sar\.convert\(model\)"):
        _call(model, part.x, part.graph, part)
    # Idempotent; and the model converts again.
    pyg_sar.unconvert(model)
    assert _sar_leftovers(model) == []
    model.eval()
    plain.eval()
    pyg_sar.convert(model)
    want = _call(plain, data.x, data.edge_index, data)[part.node_ids]
    torch.testing.assert_close(_call(model, part.x, part.graph, part), want,
                               rtol=1e-12, atol=1e-12)


def test_unconvert_leaves_a_plain_model_alone(graph):
    data, _ = graph
    torch.manual_seed(0)
    model = Net().double().eval()
    calls = []
    handle = model.register_forward_pre_hook(lambda m, args: calls.append(1))
    want = model(data.x, data.edge_index)
    state = copy.deepcopy(model.state_dict())
    types = [type(m) for m in model.modules()]
    assert pyg_sar.unconvert(model) is model
    assert [type(m) for m in model.modules()] == types
    assert all(torch.equal(v, state[k]) for k, v in model.state_dict().items())
    assert torch.equal(model(data.x, data.edge_index), want)
    assert len(calls) == 2  # the user's own hook is kept
    handle.remove()
    with pytest.raises(TypeError, match="expected a torch.nn.Module"):
        pyg_sar.unconvert("model")


# ---- hooks that pyg_sar code registers on a model (gradient synchronisation) --------------

def _hook(*args, **kwargs):
    return None


class _SyncState:
    """Stands for pyg_sar's gradient-sync state: holds hooks, removed by ``remove()``."""

    def __init__(self, handles) -> None:
        self.handles, self.removed = handles, 0

    def remove(self) -> None:
        self.removed += 1
        for handle in self.handles:
            handle.remove()


def test_unconvert_removes_pyg_sar_hooks_only(graph):
    data, part = graph
    sar_hook = copy.copy(_hook)
    # What pyg_sar's own code defines (the module is what unconvert looks at).
    _SyncState.__module__ = sar_hook.__module__ = "pyg_sar.distributed.fake_sync"
    model = pyg_sar.convert(Net().double())
    param = model.conv1.lin.weight
    user_calls = []
    handles = [param.register_post_accumulate_grad_hook(sar_hook),
               param.register_hook(sar_hook)]
    model.conv3.register_forward_hook(sar_hook)
    model.register_full_backward_hook(sar_hook)
    state = model._sar_grad_sync = _SyncState(handles[:1])
    param.register_hook(lambda grad: user_calls.append("tensor"))
    model.register_forward_hook(lambda *a: user_calls.append("module"))

    pyg_sar.unconvert(model)

    assert state.removed == 1 and not hasattr(model, "_sar_grad_sync")
    assert list(param._post_accumulate_grad_hooks.values()) == []
    assert all(h is not sar_hook for h in param._backward_hooks.values())
    assert len(param._backward_hooks) == 1  # the user's
    assert not model.conv3._forward_hooks and not model._backward_hooks
    assert _sar_leftovers(model) == []
    model(data.x, data.edge_index).sum().backward()
    assert user_calls == ["module", "tensor"]


# ---- a saved unconverted model needs no pyg_sar -------------------------------------------

_BLOCK_PYG_SAR = """
import sys
class _NoPygSar:
    def find_spec(self, name, path=None, target=None):
        if name == "pyg_sar" or name.startswith("pyg_sar."):
            raise ModuleNotFoundError("pyg_sar is blocked in this process: " + name)
        return None
sys.meta_path.insert(0, _NoPygSar())
try:
    import pyg_sar  # noqa: F401
    raise SystemExit("the blocker failed")
except ModuleNotFoundError:
    pass
"""


def test_saved_unconverted_model_loads_without_pyg_sar(graph, tmp_path):
    data, part = graph
    torch.manual_seed(0)
    # (a class the other process can import: PyG's, not this test module's)
    plain = GAT(IN, 8, 3, 3, heads=2, v2=True, norm="batch_norm").double()
    model = pyg_sar.convert(copy.deepcopy(plain), pyg_sar.SARConfig(mode="halo"))
    model.train()
    model(part.x, part.graph).sum().backward()
    pyg_sar.unconvert(model).eval()
    torch.save(model, tmp_path / "model.pt")
    torch.save({"x": data.x, "edge_index": data.edge_index}, tmp_path / "inputs.pt")
    code = _BLOCK_PYG_SAR + (
        "import torch\n"
        f"m = torch.load({str(tmp_path / 'model.pt')!r}, weights_only=False)\n"
        f"i = torch.load({str(tmp_path / 'inputs.pt')!r})\n"
        f"torch.save(m(i['x'], i['edge_index']), {str(tmp_path / 'out.pt')!r})\n"
        "assert not any(n.startswith('pyg_sar') for n in sys.modules)\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    result = subprocess.run([sys.executable, "-c", code], env=env, timeout=120,
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stderr[-2000:]
    plain.load_state_dict(model.state_dict())
    plain.eval()
    assert torch.equal(torch.load(tmp_path / "out.pt"), plain(data.x, data.edge_index))
    # Without unconvert the same file would need pyg_sar (the check above is not vacuous).
    torch.save(pyg_sar.convert(model), tmp_path / "converted.pt")
    code = _BLOCK_PYG_SAR + (
        f"import torch\ntorch.load({str(tmp_path / 'converted.pt')!r}, weights_only=False)\n")
    result = subprocess.run([sys.executable, "-c", code], env=env, timeout=120,
                            capture_output=True, text=True)
    assert result.returncode != 0 and "pyg_sar is blocked" in result.stderr


@pytest.mark.parametrize("kind", ["GAE", "VGAE", "ARGVA"])
def test_unconvert_gives_back_pyg_auto_encoders(kind):
    """The auto-encoders' converted classes go back to PyG's, and nothing of pyg_sar stays in
    their attributes."""
    from torch_geometric.nn import GCNConv
    from torch_geometric.nn import models as pyg_models

    class Encoder(torch.nn.Module):
        def __init__(self, variational: bool) -> None:
            super().__init__()
            self.mu, self.variational = GCNConv(IN, 4), variational
            self.logstd = GCNConv(IN, 4)

        def forward(self, x, edge_index):
            mu = self.mu(x, edge_index)
            return (mu, self.logstd(x, edge_index)) if self.variational else mu

    cls = getattr(pyg_models, kind)
    encoder = Encoder(kind != "GAE")
    args = (encoder, torch.nn.Linear(4, 1)) if kind == "ARGVA" else (encoder,)
    model = pyg_sar.convert(cls(*args))
    assert type(model) is not cls
    pyg_sar.unconvert(model)
    assert type(model) is cls
    assert all(not type(m).__module__.startswith("pyg_sar") for m in model.modules())
    for m in model.modules():
        left = [k for k, v in vars(m).items()
                if k.startswith("_sar_") or type(v).__module__.startswith("pyg_sar")]
        assert not left, (type(m).__name__, left)
