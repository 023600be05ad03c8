"""A model not converted but given a DistGraph fails loudly (never a silent answer), and with
pyg_sar's message naming ``pyg_sar.convert(model)`` wherever pyg_sar's code is reached first:
the DistGraph itself (read as a tensor: ``edge_index.size(1)``, ``edge_index[0]``,
``row, col = edge_index``) or the converted model (a layer added after ``convert``). Nothing
is hooked process-wide: PyG layers that only check the type of ``edge_index`` before
``propagate`` fail with PyG's own complaint about ``edge_index``."""
from __future__ import annotations

import pytest
import torch
from torch_geometric.nn import (
    APPNP,
    GAT,
    GCN,
    ChebConv,
    GATConv,
    GCNConv,
    GINConv,
    MessagePassing,
    SAGEConv,
    TransformerConv,
)

import pyg_sar
from pyg_sar.datasets import sbm

FIX = r"pyg_sar\.convert\(model\)"


class UserLayer(MessagePassing):
    def forward(self, x, edge_index):
        return self.propagate(edge_index, x=x)


class TwoLayers(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.first, self.second = SAGEConv(5, 3), None

    def forward(self, x, edge_index):
        h = self.first(x, edge_index)
        return h if self.second is None else self.second(h, edge_index)


@pytest.fixture(scope="module")
def graph_data():
    return sbm(num_nodes=50, num_classes=3, avg_degree=4.0, num_features=5, seed=0)


@pytest.fixture
def part(tmp_path, graph_data):
    pyg_sar.partition_graph(graph_data, 1, tmp_path / "p")
    return pyg_sar.load_partition(tmp_path / "p", 0)


@pytest.mark.parametrize("make", [
    lambda: GCNConv(5, 3), lambda: SAGEConv(5, 3), lambda: GATConv(5, 3), lambda: UserLayer(),
    lambda: GCN(5, 8, num_layers=2, out_channels=3), lambda: GAT(5, 8, num_layers=2),
    lambda: GINConv(torch.nn.Linear(5, 3)), lambda: TransformerConv(5, 3),
    lambda: ChebConv(5, 3, K=2), lambda: APPNP(K=2, alpha=0.1),
], ids=["GCNConv", "SAGEConv", "GATConv", "user", "GCN", "GAT", "GIN", "Transformer", "Cheb",
        "APPNP"])
def test_unconverted_model_fails_and_convert_fixes_it(part, make):
    model = make()
    with pytest.raises((ValueError, TypeError, AttributeError), match="edge_index|DistGraph"):
        model(part.x, part.edge_index)
    pyg_sar.convert(model)  # the fix works
    assert model(part.x, part.edge_index).shape[0] == part.num_nodes


def test_a_layer_that_reads_the_graph_as_a_tensor_gets_the_fix(part):
    with pytest.raises(TypeError, match=FIX):
        ChebConv(5, 3, K=2)(part.x, part.edge_index)  # get_laplacian: edge_index[0]
    graph = part.edge_index
    with pytest.raises(AttributeError, match=r"DistGraph has no attribute 'size'.*" + FIX):
        graph.size(1)
    with pytest.raises(AttributeError, match=FIX):
        graph.dtype  # noqa: B018 - the attribute read is what is tested
    with pytest.raises(TypeError, match=FIX):
        row, col = graph
    with pytest.raises(TypeError, match=FIX):
        graph[0]  # noqa: B018
    assert not hasattr(graph, "_not_an_attribute")  # private names: a plain AttributeError
    assert graph[1].shape == (graph.num_edges,)  # the supported operations still work


def test_a_layer_added_after_convert_is_named_by_the_model(part):
    model = pyg_sar.convert(TwoLayers())
    assert model(part.x, part.edge_index).shape == (part.num_nodes, 3)
    model.second = SAGEConv(3, 3)
    with pytest.raises(ValueError, match=r"layer 'second' \(SAGEConv\) of the converted model "
                                         r"is not converted.*pyg_sar\.convert\(model\) again"):
        model(part.x, part.edge_index)
    pyg_sar.convert(model)
    assert model(part.x, part.edge_index).shape == (part.num_nodes, 3)


def test_plain_pyg_is_unaffected(graph_data):
    model = GCN(5, 8, num_layers=2, out_channels=3)
    out = model(graph_data.x, graph_data.edge_index)  # a Tensor edge_index: PyG as usual
    assert out.shape == (graph_data.num_nodes, 3)
    converted = pyg_sar.convert(GCN(5, 8, num_layers=2, out_channels=3))
    assert converted(graph_data.x, graph_data.edge_index).shape == out.shape


def test_nothing_is_hooked_process_wide(part):
    import torch.nn.modules.module as torch_module
    tables = {n: getattr(torch_module, n) for n in dir(torch_module)
              if n.startswith("_global_") and isinstance(getattr(torch_module, n), dict)}
    model = pyg_sar.convert(GCN(5, 8, num_layers=2, out_channels=3))
    model(part.x, part.edge_index).sum().backward()
    assert {n: len(t) for n, t in tables.items()} == {n: 0 for n in tables}
