"""Whole converted models pickle: ``torch.save``/``torch.load``, ``pickle`` and ``copy.deepcopy``
of a model after ``pyg_sar.convert`` give a converted model with the same classes, parameters and
configuration, whose outputs on a Tensor ``edge_index`` and on the DistGraph of a one-part
partition are those of the model before saving; state of a running call (held wires, the
context a batch norm is bound to) is not pickled."""
from __future__ import annotations

import copy
import io
import pickle
import threading

import pytest
import torch
from torch_geometric.nn import (
    GAT,
    GCN,
    GIN,
    GATConv,
    GATv2Conv,
    GCNConv,
    GraphSAGE,
    MessagePassing,
    SAGEConv,
)

import pyg_sar
from pyg_sar.compression import Compressor, Truncate, all_but_last
from pyg_sar.nn.conversion.converted import SARLayer
from pyg_sar.nn.norm import DistributedBatchNorm
from pyg_sar.partition import load_partition, partition_graph
from pyg_sar.testing.zoo_models import MODEL_RECIPES
from pyg_sar.testing.zoo_rank import graph_info, local_inputs, make_graph, whole_inputs
from pyg_sar.testing.zoo_recipes import CONV_RECIPES, IN, package_available


def _torch_save(model):
    buffer = io.BytesIO()
    torch.save(model, buffer)
    buffer.seek(0)
    return torch.load(buffer, weights_only=False)


ROUND_TRIPS = {
    "torch.save": _torch_save,
    "pickle": lambda model: pickle.loads(pickle.dumps(model)),
    "deepcopy": copy.deepcopy,
}


@pytest.fixture(scope="module")
def graph(tmp_path_factory):
    data = make_graph()
    path = partition_graph(data, 1, tmp_path_factory.mktemp("save") / "p", method="random")
    return data, load_partition(path, 0, world_size=1)


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


MODELS = {
    "GCN[batch_norm]": lambda: GCN(IN, 8, 3, 3, norm="batch_norm"),
    "GraphSAGE[jk=cat]": lambda: GraphSAGE(IN, 8, 3, 3, jk="cat"),
    "GAT": lambda: GAT(IN, 8, 2, 3, heads=2),
    "GATv2": lambda: GAT(IN, 8, 2, 3, heads=2, v2=True),
    "GATConv": lambda: GATConv(IN, 4, heads=2),
    "GIN[batch_norm]": lambda: GIN(IN, 8, 2, 3, norm="batch_norm"),
    "Net": Net,
}
CONFIGS = {
    "sar": lambda: pyg_sar.SARConfig(),
    "halo": lambda: pyg_sar.SARConfig(mode="halo"),
    "compressed": lambda: pyg_sar.SARConfig(
        compression=Compressor(Truncate(), 2.0, seed=3)),
}


def _outputs(model, data, part):
    torch.manual_seed(1)
    return model(data.x, data.edge_index), model(part.x, part.graph)


def _assert_same_model(loaded, model):
    assert [(n, type(m)) for n, m in loaded.named_modules()] == \
        [(n, type(m)) for n, m in model.named_modules()]
    assert loaded.state_dict().keys() == model.state_dict().keys()
    for key, value in model.state_dict().items():
        assert torch.equal(loaded.state_dict()[key], value), key
    for m, original in zip(loaded.modules(), model.modules()):
        if isinstance(m, SARLayer):
            assert (m._sar_name, m._sar_layer_index) == (original._sar_name,
                                                         original._sar_layer_index)
            assert m._sar_spec == original._sar_spec
            assert m._sar_config.mode == original._sar_config.mode


@pytest.mark.parametrize("trip", ROUND_TRIPS)
@pytest.mark.parametrize("config", CONFIGS)
@pytest.mark.parametrize("build", MODELS)
def test_converted_model_round_trips(graph, build, config, trip):
    data, part = graph
    torch.manual_seed(0)
    model = pyg_sar.convert(MODELS[build]().double(), CONFIGS[config]())
    # A training step first: it leaves the runtime state a saved model would carry.
    model.train()
    model(part.x, part.graph).sum().backward()
    model.zero_grad()
    model.eval()
    want_plain, want_dist = _outputs(model, data, part)
    # (the converted model is exact: its DistGraph output is PyG's on the whole graph)
    torch.testing.assert_close(want_dist, want_plain[part.node_ids], rtol=1e-12, atol=1e-12)

    loaded = ROUND_TRIPS[trip](model)

    _assert_same_model(loaded, model)
    got_plain, got_dist = _outputs(loaded, data, part)
    assert torch.equal(got_plain, want_plain) and torch.equal(got_dist, want_dist)
    # Training mode (batch statistics) and gradients match too.
    model.train()
    loaded.train()
    for m in (model, loaded):
        torch.manual_seed(2)
        m(part.x, part.graph).square().sum().backward()
    for (name, p), q in zip(model.named_parameters(), loaded.parameters()):
        assert torch.equal(p.grad, q.grad), name


def test_runtime_state_is_not_pickled(graph):
    data, part = graph
    torch.manual_seed(0)
    model = pyg_sar.convert(Net().double(), pyg_sar.SARConfig(mode="halo"))
    model(part.x, part.graph)
    assert isinstance(model.norm, DistributedBatchNorm)
    lock = threading.Lock()  # stands for a live communicator: cannot be pickled
    model.conv2._sar_held_wire = lock
    model.conv2._sar_some_future_cache = lock
    model.norm.bind(lock)

    for trip in ROUND_TRIPS.values():
        loaded = trip(model)
        assert not hasattr(loaded.conv2, "_sar_held_wire")
        assert not hasattr(loaded.conv2, "_sar_some_future_cache")
        assert getattr(loaded.norm, "_sar_context", None) is None
        assert loaded.conv2._sar_name == "conv2" and loaded.conv2._sar_layer_index == 1
        assert loaded.conv2._sar_config.mode == "halo"
        # The model's forward pre-hook binds the loaded norms at the next call.
        assert loaded._sar_binds_norms
        loaded(part.x, part.graph)
        assert loaded.norm._sar_context is part.graph.context
    # Saving changes nothing on the model itself.
    assert model.conv2._sar_held_wire is lock and model.norm._sar_context is lock


def test_compressors_are_kept(graph):
    comp = Compressor(Truncate(), 2.0, seed=5)
    comp.step()
    comp.step()
    # One compressor for every layer (the config holds it) ...
    model = pyg_sar.convert(GraphSAGE(IN, 8, 3, 3), pyg_sar.SARConfig(compression=comp))
    loaded = _torch_save(model)
    comps = [conv._sar_compressor for conv in loaded.convs]
    assert comps[0] is comps[1] is comps[2] is loaded.convs[0]._sar_config.compression
    assert comps[0] is not comp and comps[0].t == 2
    assert comps[0].describe() == comp.describe()
    # ... and a per-layer rule (a closure): each layer keeps the compressor the rule chose; the
    # config no longer holds the rule.
    model = pyg_sar.convert(GraphSAGE(IN, 8, 3, 3),
                            pyg_sar.SARConfig(compression=all_but_last(comp)))
    for trip in ROUND_TRIPS.values():
        loaded = trip(model)
        comps = [conv._sar_compressor for conv in loaded.convs]
        assert comps[0] is comps[1] and comps[2] is None
        assert comps[0].t == 2 and comps[0].describe() == comp.describe()
        assert all(conv._sar_config.compression is None for conv in loaded.convs)
    assert callable(model.convs[0]._sar_config.compression)  # the model's own config is intact


def test_saved_file_loads_in_a_fresh_process(graph, tmp_path):
    """A saved converted model loads where pyg_sar is importable but not yet imported."""
    import subprocess
    import sys
    data, part = graph
    torch.manual_seed(0)
    model = pyg_sar.convert(Net().double()).eval()
    torch.save(model, tmp_path / "model.pt")
    torch.save({"x": data.x, "edge_index": data.edge_index}, tmp_path / "inputs.pt")
    code = (
        "import sys, torch\n"
        f"m = torch.load({str(tmp_path / 'model.pt')!r}, weights_only=False)\n"
        f"i = torch.load({str(tmp_path / 'inputs.pt')!r})\n"
        "assert type(m.conv2).__module__ == 'pyg_sar.nn.conversion.converted', type(m.conv2)\n"
        f"torch.save(m(i['x'], i['edge_index']), {str(tmp_path / 'out.pt')!r})\n")
    import os
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    subprocess.run([sys.executable, "-c", code], check=True, env=env, timeout=120)
    assert torch.equal(torch.load(tmp_path / "out.pt"), model(data.x, data.edge_index))


def _recipes():
    return [pytest.param(r, id=r.name) for r in CONV_RECIPES + MODEL_RECIPES
            if package_available(r.requires)]


@pytest.mark.parametrize("recipe", _recipes())
def test_every_zoo_layer_round_trips(graph, recipe):
    """Every layer and model of the zoo that converts (each adapter: generated forwards,
    replaced methods, closures in its preparation) pickles and runs the same after loading.
    A recipe that convert refuses never gets as far as pickling: there the refusal must name
    the refused layer (which layer and why is checked by the zoo test)."""
    data, part = graph
    torch.manual_seed(7)
    module = recipe.make(graph_info(data)).double().train(recipe.train)
    try:
        pyg_sar.convert(module)
    except pyg_sar.UnsupportedLayerError as refusal:
        assert str(refusal).startswith("pyg_sar.convert: layer '"), str(refusal)
        return
    torch.manual_seed(3)
    want_plain = recipe.call(module, whole_inputs(data))
    torch.manual_seed(3)
    want_dist = recipe.call(module, local_inputs(part))
    loaded = _torch_save(module)
    _assert_same_model(loaded, module)
    for m in loaded.modules():  # the same generated classes as convert makes
        assert not isinstance(m, SARLayer) or \
            type(m).__module__ == "pyg_sar.nn.conversion.converted"
    torch.manual_seed(3)
    assert torch.equal(recipe.call(loaded, whole_inputs(data)), want_plain)
    torch.manual_seed(3)
    assert torch.equal(recipe.call(loaded, local_inputs(part)), want_dist)


def test_round_trips_on_two_ranks(tmp_path):
    """A model saved after a distributed training step (batch norm bound to the ranks'
    communicator, held wires of halo mode, a compressor) loads and runs the same on every rank,
    including from rank 0's file."""
    import sys
    from pathlib import Path

    from pyg_sar.testing import run_on_ranks
    here = Path(__file__).resolve().parent
    data = make_graph()
    partition_graph(data, 2, tmp_path / "p2", method="random")
    torch.save({"x": data.x, "edge_index": data.edge_index}, tmp_path / "graph.pt")
    results = run_on_ranks(f"{here / 'save_load_cases.py'}:round_trips", 2, launcher="spawn",
                           backend="gloo", timeout=300,
                           kwargs={"parts": str(tmp_path / "p2"),
                                   "graph": str(tmp_path / "graph.pt"),
                                   "saved": str(tmp_path / "model.pt")})
    assert sys.modules  # (imports above are local: this test alone launches ranks)
    for res in results:
        assert len(res) == 10
        for key, err in res.items():
            assert err <= (1e-12 if key.endswith(":pyg") else 0.0), (key, err)


def test_layer_state_is_one_object():
    """convert sets one attribute on a layer (a LayerState); the old names read and write its
    fields, and a second convert updates it."""
    from pyg_sar.nn.conversion.converted import LayerState
    comp = Compressor(Truncate(), 2.0)
    model = pyg_sar.convert(GCN(IN, 8, 3, 2), pyg_sar.SARConfig(compression=all_but_last(comp)))
    for index, conv in enumerate(model.convs):
        assert [k for k in vars(conv) if k.startswith("_sar")] == ["_sar_state"]
        state = conv._sar_state
        assert isinstance(state, LayerState)
        assert (state.name, state.index) == (f"convs.{index}", index)
        assert (conv._sar_name, conv._sar_layer_index) == (state.name, state.index)
        assert conv._sar_spec is state.spec and conv._sar_config is state.config
        assert conv._sar_compressor is state.compressor is (comp if index < 2 else None)
    config = pyg_sar.SARConfig(mode="halo")
    pyg_sar.convert(model, config)
    assert all(conv._sar_state.config is config and conv._sar_compressor is None
               for conv in model.convs)
    model.convs[0]._sar_name = "first"
    assert model.convs[0]._sar_state.name == "first"
    assert not hasattr(GCNConv(IN, 8), "_sar_spec")


class MyConv(MessagePassing):
    """A user's layer (accepted by the static rule: its adapter is built, not the registry's)."""

    def __init__(self) -> None:
        super().__init__(aggr="mean")
        self.lin = torch.nn.Linear(IN, 4)

    def forward(self, x, edge_index):
        return self.propagate(edge_index, x=self.lin(x))


class MyGCNConv(GCNConv):
    """A trusted subclass of a verified class that overrides its message."""

    def message(self, x_j, edge_weight):
        return 2 * super().message(x_j, edge_weight)


@pytest.mark.parametrize("make, config", [
    (MyConv, pyg_sar.SARConfig()),
    (lambda: MyGCNConv(IN, 4), pyg_sar.SARConfig(trusted_layers=(MyGCNConv,))),
])
def test_user_and_trusted_layers_round_trip(graph, make, config):
    data, part = graph
    torch.manual_seed(0)
    layer = pyg_sar.convert(make().double(), config)
    want_plain, want_dist = _outputs(layer, data, part)
    for trip in ROUND_TRIPS.values():
        loaded = trip(layer)
        assert type(loaded) is type(layer) and loaded._sar_spec == layer._sar_spec
        assert loaded._sar_config.trusted_layers == config.trusted_layers
        got_plain, got_dist = _outputs(loaded, data, part)
        assert torch.equal(got_plain, want_plain) and torch.equal(got_dist, want_dist)


def test_loaded_model_converts_again_without_new_hooks(graph):
    data, part = graph
    torch.manual_seed(0)
    model = pyg_sar.convert(GCN(IN, 8, 2, 3, norm="batch_norm").double())
    loaded = _torch_save(model)
    hooks = (len(loaded._forward_pre_hooks), len(loaded._forward_hooks))
    assert hooks == (len(model._forward_pre_hooks), len(model._forward_hooks))
    config = pyg_sar.SARConfig(mode="sa")
    assert pyg_sar.convert(loaded, config) is loaded
    assert (len(loaded._forward_pre_hooks), len(loaded._forward_hooks)) == hooks
    assert all(conv._sar_config is config for conv in loaded.convs)
    loaded.eval()
    model.eval()
    assert torch.equal(loaded(part.x, part.graph), model(part.x, part.graph))


def test_loading_a_layer_pyg_sar_no_longer_verifies_fails_naming_it(graph, monkeypatch):
    from pyg_sar.nn.conversion import registry
    payload = pickle.dumps(pyg_sar.convert(GCN(IN, 8, 2, 3)))
    monkeypatch.delitem(registry.VERIFIED, GCNConv)
    with pytest.raises(ValueError, match="converted as GCNConv, which this pyg_sar does not "
                                         "verify; pyg_sar.unconvert"):
        pickle.loads(payload)
