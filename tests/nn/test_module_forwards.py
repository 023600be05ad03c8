"""The conversion hook for PyG modules whose forward pyg_sar replaces
(``registry.MODULE_FORWARDS``, :mod:`pyg_sar.nn.module_forwards`), in one process: what
``convert`` does to the classes, the fallback to PyG's forward for a plain ``edge_index``,
pickling (``torch.save(model)``, ``copy.deepcopy``) and refusals. Exactness across ranks is in
``test_linear_attention.py``."""
from __future__ import annotations

import copy
import importlib
import io

import pytest
import torch
from torch_geometric.nn.models import Polynormer, SGFormer
from torch_geometric.nn.models.sgformer import SGModule

import pyg_sar
from pyg_sar.nn.conversion import registry
from pyg_sar.nn.layers import UnsupportedLayerError
from pyg_sar.nn.module_forwards import GRAPH, class_path, graph_of
from tests.nn import linear_attention_cases as lac


@pytest.fixture(scope="module")
def part(tmp_path_factory):
    root = tmp_path_factory.mktemp("module_forwards")
    pyg_sar.partition_graph(lac.make_data(), 1, root / "p1", method="random")
    return pyg_sar.load_partition(root / "p1", 0)


def _build(name: str) -> torch.nn.Module:
    return lac.build_convert_model(name).eval()


def _call(model, x, edge_index):
    with lac.default_dtype(torch.float64):
        return model(x, edge_index, torch.zeros(x.shape[0], dtype=torch.long))


def test_registry_keys_name_existing_classes_and_are_not_refused():
    for path in registry.MODULE_FORWARDS:
        module, _, name = path.rpartition(".")
        cls = getattr(importlib.import_module(module), name)
        assert class_path(cls) == path
        assert name not in registry.MODULE_REFUSED and name not in registry.REFUSED
    for cls in (SGModule, Polynormer):
        assert class_path(cls) in registry.MODULE_FORWARDS
    # SGFormer keeps PyG's forward (its SGModule is replaced): not registered, passed through
    assert class_path(SGFormer) not in registry.MODULE_FORWARDS
    assert class_path(SGFormer) in registry.PASSTHROUGH_MODULES


@pytest.mark.parametrize("name", ["sgformer", "polynormer_global", "composed"])
def test_convert_keeps_names_state_and_plain_edge_index_runs_pyg(part, name):
    ref = _build(name)
    model = _build(name)
    state = {k: v.clone() for k, v in model.state_dict().items()}
    classes = {n: type(m) for n, m in model.named_modules()}
    pyg_sar.convert(model)
    pyg_sar.convert(model)  # a second call changes no class
    replaced = [n for n, m in model.named_modules()
                if class_path(classes[n]) in registry.MODULE_FORWARDS]
    assert replaced
    for n, m in model.named_modules():
        if n in replaced:
            assert type(m).__module__ == "pyg_sar.nn.module_forwards"
            assert type(m).__bases__ == (classes[n],) and type(m).__name__ == classes[n].__name__
            assert m._sar_name == (n or classes[n].__name__)
            assert isinstance(m._sar_config, pyg_sar.SARConfig)
    assert list(model.state_dict()) == list(state)
    data = lac.make_data()
    # One process with a plain edge_index: PyG's own forward, bit for bit.
    assert torch.equal(_call(model, data.x, data.edge_index), _call(ref, data.x, data.edge_index))
    # Over the (P = 1) DistGraph: the replaced forward, same values.
    got = _call(model, data.x[part.node_ids], part.graph)
    want = _call(ref, data.x, data.edge_index)[part.node_ids]
    torch.testing.assert_close(got, want, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("name", ["sgformer", "polynormer_global", "composed"])
def test_torch_save_and_deepcopy(part, name):
    model = pyg_sar.convert(_build(name))
    x = lac.make_data().x[part.node_ids]
    want = _call(model, x, part.graph)
    assert any(m.__dict__.get(GRAPH) is not None for m in model.modules())  # bound
    buffer = io.BytesIO()
    torch.save(model, buffer)
    buffer.seek(0)
    loaded = torch.load(buffer, weights_only=False)
    clone = copy.deepcopy(model)
    for other in (loaded, clone):
        assert all(m.__dict__.get(GRAPH) is None for m in other.modules())  # not pickled
        assert [type(m) for m in other.modules()] == [type(m) for m in model.modules()]
        assert torch.equal(_call(other, x, part.graph), want)


def test_graph_of_without_a_graph_names_the_module():
    model = pyg_sar.convert(_build("sgformer"))
    with pytest.raises(RuntimeError, match="SGModule has no DistGraph for this call"):
        graph_of(model.trans_conv)


def test_several_ranks_without_a_graph_raise(monkeypatch):
    from types import SimpleNamespace

    from pyg_sar.distributed import context
    model = pyg_sar.convert(_build("polynormer_global"))
    data = lac.make_data()
    monkeypatch.setattr(context, "_CONTEXT", SimpleNamespace(world_size=2))
    with pytest.raises(RuntimeError, match="Polynormer was called without a DistGraph in a "
                                           "run of 2 ranks"):
        _call(model, data.x, data.edge_index)


def test_instance_options_refused_at_convert(monkeypatch):
    """MODULE_OPTIONS also applies to classes with a replaced forward (GPSConv's options)."""
    path = class_path(Polynormer)
    monkeypatch.setitem(registry.MODULE_OPTIONS, path, registry._when(
        lambda m: m.pre_ln, "Polynormer(pre_ln=True): for this test only"))
    pyg_sar.convert(_build("polynormer_global"))
    with pytest.raises(UnsupportedLayerError,
                       match=r"layer 'Polynormer' \(Polynormer\): Polynormer\(pre_ln=True\): "
                             r"for this test only \(SARConfig\(trusted_layers=...\) overrides\)"):
        pyg_sar.convert(_build("polynormer_global_gat_preln"))


def test_unconvert_gives_back_the_pyg_classes(part):
    ref = _build("composed")
    model = pyg_sar.convert(_build("composed"))
    _call(model, lac.make_data().x[part.node_ids], part.graph)  # binds the graph
    pyg_sar.unconvert(model)
    assert [type(m) for m in model.modules()] == [type(m) for m in ref.modules()]
    assert not any(k.startswith("_sar_") for m in model.modules() for k in vars(m))
    data = lac.make_data()
    assert torch.equal(_call(model, data.x, data.edge_index), _call(ref, data.x, data.edge_index))


def _polynormer_args() -> dict:
    return dict(in_channels=lac.IN, hidden_channels=4, out_channels=3, local_layers=2,
                global_layers=2, in_dropout=0.0, dropout=0.0, global_dropout=0.0)


class _MyPolynormer(Polynormer):
    """A user's subclass that keeps PyG's forward: converted like Polynormer."""

    def extra(self) -> int:
        return 1


class _OwnForward(Polynormer):
    """A user's subclass with its own forward: refused (the replacement would skip it)."""

    def forward(self, x, edge_index, batch=None):
        return super().forward(x, edge_index, batch)


def test_user_subclasses(part):
    torch.manual_seed(9)
    with lac.default_dtype(torch.float64):
        model = _MyPolynormer(**_polynormer_args()).double().eval()
    model._global = True
    ref = copy.deepcopy(model)
    pyg_sar.convert(model)
    assert type(model).__bases__ == (_MyPolynormer,) and model.extra() == 1
    data = lac.make_data()
    got = _call(model, data.x[part.node_ids], part.graph)
    torch.testing.assert_close(got, _call(ref, data.x, data.edge_index)[part.node_ids],
                               rtol=1e-12, atol=1e-12)
    assert torch.equal(_call(copy.deepcopy(model), data.x[part.node_ids], part.graph), got)
    with lac.default_dtype(torch.float64):
        own = _OwnForward(**_polynormer_args()).double()
    with pytest.raises(UnsupportedLayerError, match=r"layer '_OwnForward' \(_OwnForward\): it "
                                                    r"derives from Polynormer, whose forward"):
        pyg_sar.convert(own)
    pyg_sar.convert(own, pyg_sar.SARConfig(trusted_layers=(_OwnForward,)))
    assert type(own) is _OwnForward  # trusted: runs as it is
