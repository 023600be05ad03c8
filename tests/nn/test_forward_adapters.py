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
from torch_geometric.utils import softmax

import pyg_sar
from pyg_sar.core.combine import GroupedSoftmaxRule
from pyg_sar.nn import UnsupportedLayerError
from pyg_sar.nn.adapters.softmax_capture import InDegreeCount
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


def test_supergat_needs_sum_aggregation():
    with pytest.raises(UnsupportedLayerError, match="SuperGATConv.*aggr='add'"):
        pyg_sar.convert(SuperGATConv(4, 3, aggr="mean"))


@pytest.mark.parametrize("kwargs, needle", [
    ({"mod": "additive"}, "mod='additive'"),
    ({"mod": "f-additive"}, "mod='f-additive'"),
    ({"aggr": "mean"}, "aggr='mean'"),
])
def test_rgat_options_that_are_not_exact_are_refused(kwargs, needle):
    with pytest.raises(UnsupportedLayerError, match="RGATConv") as info:
        pyg_sar.convert(RGATConv(4, 3, 3, **kwargs))
    assert needle in str(info.value)


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


def test_in_degree_count_accepts_only_counting_in_edges():
    """RGATConv's scaled mods count in-edges with scatter(ones, index) inside message; over a
    block the engine returns the node's whole in-degree, and refuses any other scatter."""
    count = InDegreeCount("RGATConv", torch.tensor([2, 0, 1]))
    index = torch.tensor([0, 0, 2])
    ones = torch.ones(3, dtype=torch.float64)
    got = count(ones, index, dim_size=3, reduce="sum")
    assert got.dtype == torch.float64 and torch.equal(got, torch.tensor([2.0, 0.0, 1.0],
                                                                         dtype=torch.float64))
    for args, kwargs in [((ones * 2, index), {"dim_size": 3}),
                         ((ones, index), {"dim_size": 3, "reduce": "mean"}),
                         ((ones, index), {"dim_size": 4}),
                         ((ones.view(3, 1), index), {"dim_size": 3})]:
        with pytest.raises(RuntimeError, match="calls scatter other than to count"):
            count(*args, **kwargs)


def test_grouped_softmax_rule_folds_blocks_exactly():
    """A softmax per (node, group) summed over groups, folded over two blocks in either
    order, equals the direct computation; its message gradients equal autograd's."""
    g = torch.Generator().manual_seed(0)
    num_nodes, groups, e = 5, 3, 40
    row = torch.randint(0, num_nodes - 1, (e,), generator=g)  # the last node has no edges
    group = torch.randint(0, groups, (e,), generator=g)
    scores = torch.randn(e, 2, generator=g, dtype=torch.float64, requires_grad=True)
    values = torch.randn(e, 2, 3, generator=g, dtype=torch.float64, requires_grad=True)
    key = row * groups + group
    want = torch.zeros(num_nodes * groups, 2, 3, dtype=torch.float64)
    want = want.index_add(0, key, softmax(scores, key, num_nodes=num_nodes * groups)
                          .unsqueeze(-1) * values).view(num_nodes, groups, 2, 3).sum(1)
    weight = torch.randn(want.shape, generator=g, dtype=torch.float64)
    want_grads = torch.autograd.grad((want * weight).sum(), (scores, values))
    rule = GroupedSoftmaxRule(groups)
    for order in ([slice(0, 17), slice(17, e)], [slice(17, e), slice(0, 17)]):
        acc = None
        for part in order:
            msgs = (scores[part].detach(), values[part].detach(), None, group[part])
            acc = rule.init(num_nodes, msgs) if acc is None else acc
            acc = rule.fold(acc, msgs, row[part])
        out = rule.finalize(acc)
        torch.testing.assert_close(out, want.detach(), rtol=1e-12, atol=1e-12)
        state = rule.state(out, acc)
        for part in order:
            msgs = (scores[part].detach(), values[part].detach(), None, group[part])
            gs, gv, _, _ = rule.message_grad(weight, msgs, row[part], state)
            torch.testing.assert_close(gs, want_grads[0][part], rtol=1e-12, atol=1e-12)
            torch.testing.assert_close(gv, want_grads[1][part], rtol=1e-12, atol=1e-12)


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
