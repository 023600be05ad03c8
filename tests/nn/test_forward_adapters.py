"""Forward adapters of converted layers (pyg_sar.nn.conversion.forwards), single process on a
one-part DistGraph: what they refuse, with which message, and that they leave inputs and PyG's own
behaviour on a Tensor edge_index alone. Exactness at P = 1 and 3 in every mode is the zoo's
job (pyg_sar.testing.zoo: RGCNConv, FiLMConv, MFConv, FAConv, RGATConv, SuperGATConv)."""
from __future__ import annotations

import pytest
import torch
from torch_geometric.data import Data
from torch_geometric.nn import (
    FAConv,
    GATConv,
    GATv2Conv,
    MFConv,
    RGATConv,
    RGCNConv,
    SuperGATConv,
    TransformerConv,
)

import pyg_sar
from pyg_sar.nn.conversion.forwards import ATTENTION_NOT_KEPT, pyg_forward
from pyg_sar.partition import load_partition, partition_graph


@pytest.fixture(scope="module")
def part(tmp_path_factory):
    g = torch.Generator().manual_seed(0)
    ei = torch.randint(0, 30, (2, 120), generator=g)
    data = Data(x=torch.randn(30, 4, generator=g), edge_index=ei,
                edge_type=torch.randint(0, 3, (120,), generator=g))
    path = partition_graph(data, 1, tmp_path_factory.mktemp("one") / "p", method="random")
    return data, load_partition(path, 0, world_size=1)


def test_return_attention_weights_is_refused_over_a_dist_graph(part):
    data, p = part
    torch.manual_seed(0)
    rgat = pyg_sar.convert(RGATConv(4, 3, 3, heads=2))
    fa = pyg_sar.convert(FAConv(4))
    x, et = p.x, p.edge_data["edge_type"]
    for call in (lambda: rgat(x, p.graph, et, return_attention_weights=True),
                 lambda: fa(x, x, p.graph, return_attention_weights=False)):
        with pytest.raises(ValueError, match="return_attention_weights=.*not supported over "
                                             "a DistGraph"):
            call()
    # Without it the layer runs, and its forward clears the weights attribute as PyG does.
    assert rgat(x, p.graph, et).shape == (30, 6)
    assert rgat._alpha is None
    # A Tensor edge_index still returns PyG's weights.
    out, (ei, alpha) = rgat(data.x, data.edge_index, data.edge_type,
                            return_attention_weights=True)
    assert alpha.shape == (data.edge_index.shape[1], 2)
    assert repr(ATTENTION_NOT_KEPT) == "<attention weights not kept over a DistGraph>"


def test_supergat_attention_loss_after_a_dist_graph_forward(part):
    data, p = part
    torch.manual_seed(0)
    layer = pyg_sar.convert(SuperGATConv(4, 3, heads=2))
    layer.train()
    layer(data.x, data.edge_index)  # a Tensor edge_index: PyG's forward, loss available
    assert layer.get_attention_loss().dim() == 0
    layer(p.x, p.graph)  # over a DistGraph: pairs drawn keyed by (layer, epoch), loss global
    assert layer.get_attention_loss().dim() == 0
    layer.eval()  # PyG's loss is 0 in eval mode, converted or not
    assert torch.equal(layer.get_attention_loss(), torch.tensor([0]))
    with pytest.raises(ValueError, match="batch .*not supported; pass neg_edge_index"):
        layer(p.x, p.graph, batch=torch.zeros(p.x.shape[0], dtype=torch.long))
    assert type(layer).__name__ == "SuperGATConv"
    assert "get_attention_loss" in vars(type(layer))


@pytest.mark.parametrize("make", [
    lambda: SuperGATConv(4, 3, aggr="mean"),
    lambda: RGATConv(4, 3, 3, mod="additive"),
    lambda: RGATConv(4, 3, 3, mod="f-additive"),
    lambda: RGATConv(4, 3, 3, aggr="mean"),
], ids=["supergat_mean", "rgat_additive", "rgat_f_additive", "rgat_mean"])
def test_options_once_refused_run_by_destination_chunks(make):
    """A softmax inside message with another aggregation, or a term outside the softmax, was
    refused while the engine combined captured scores across blocks; destination chunks run
    PyG's message and aggregate as written (the zoo checks them against PyG)."""
    layer = pyg_sar.convert(make())
    assert layer._sar_spec.adapter.per_destination is True


def test_mfconv_leaves_its_input_alone(part):
    """PyG's MFConv clamps its degree tensor in place; for a graph that is not a Tensor that
    'degree' is x itself. The converted forward computes degree(graph[1]) instead."""
    data, p = part
    torch.manual_seed(0)
    layer = MFConv(4, 3, max_degree=2).double()
    expected = layer(data.x.double(), data.edge_index)
    pyg_sar.convert(layer)
    x = p.x.double() * 10  # large values: a clamp to max_degree would change them
    before = x.clone()
    layer(x, p.graph)
    assert torch.equal(x, before)
    torch.testing.assert_close(layer(data.x.double(), data.edge_index), expected)


def test_rgcn_runs_pyg_code_on_a_tensor_edge_index(part):
    data, _ = part
    torch.manual_seed(0)
    layer = RGCNConv(4, 3, 3, num_bases=2)
    expected = layer(data.x, data.edge_index, data.edge_type)
    pyg_sar.convert(layer)
    torch.testing.assert_close(layer(data.x, data.edge_index, data.edge_type), expected)


def test_pyg_forward_names_a_missing_global():
    with pytest.raises(RuntimeError, match="RGCNConv.forward does not read no_such_name"):
        pyg_forward(RGCNConv, no_such_name=None)


@pytest.mark.parametrize("make", [lambda: GATConv(4, 3, heads=2), lambda: GATv2Conv(4, 3),
                                  lambda: TransformerConv(4, 3, heads=2)])
@pytest.mark.parametrize("mode", ["sar", "halo"])
def test_gat_family_refuses_attention_weights_over_a_dist_graph(part, make, mode):
    data, p = part
    layer = pyg_sar.convert(make(), pyg_sar.SARConfig(mode=mode))
    with pytest.raises(ValueError, match="return_attention_weights=.*not supported over "
                                         "a DistGraph"):
        layer(p.x, p.graph, return_attention_weights=True)
    assert layer(p.x, p.graph).shape[0] == 30
    out, (ei, alpha) = layer(data.x, data.edge_index, return_attention_weights=True)
    assert alpha.shape[0] == ei.shape[1]
