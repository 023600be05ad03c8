"""What is refused on heterogeneous graphs, and the errors for bad input (one rank, in process).

Every refusal names the layer or the type and the values; each test also checks that the
refused thing is otherwise well formed (the same call without the mistake runs).
"""
from __future__ import annotations

import copy

import pytest
import torch
from torch_geometric.nn import (
    GATConv,
    GATv2Conv,
    GCNConv,
    SAGEConv,
    to_hetero,
)

import pyg_sar
from pyg_sar.nn.layers import UnsupportedLayerError
from tests.hetero import hetero_cases as hc
from tests.hetero.hand_graphs import build_graph


@pytest.fixture()
def bipartite():
    """A one-rank bipartite graph (13 sources, 9 destinations) and its inputs."""
    g = torch.Generator().manual_seed(0)
    ei = torch.unique(torch.stack([torch.randint(0, 13, (40,), generator=g),
                                   torch.randint(0, 9, (40,), generator=g)]), dim=1)
    graph, _ = build_graph(ei, [0, 13], [0, 9], 0)
    return graph, torch.randn(13, 5, generator=g), torch.randn(9, 4, generator=g)


@pytest.mark.parametrize("make", [lambda: GATConv((5, 4), 3),
                                  lambda: GATv2Conv((5, 4), 3)], ids=["gat", "gatv2"])
@pytest.mark.parametrize("mode", ["sar", "halo"])
def test_self_loops_on_a_bipartite_graph_are_refused(bipartite, make, mode):
    graph, xs, xd = bipartite
    conv = pyg_sar.convert(make(), pyg_sar.SARConfig(mode=mode))
    with pytest.raises(ValueError, match=r"Conv\(add_self_loops=True\) over a bipartite"):
        conv((xs, xd), graph)
    conv.add_self_loops = False
    assert conv((xs, xd), graph).shape[0] == 9


def test_gcn_norm_on_a_bipartite_graph_is_refused(bipartite):
    graph, xs, _ = bipartite
    conv = pyg_sar.convert(GCNConv(5, 3, add_self_loops=False))
    with pytest.raises(ValueError, match="GCNConv normalises by the degrees of both ends"):
        conv(xs, graph)
    conv.normalize = False
    assert conv(xs, graph).shape[0] == 9


def test_wrong_row_counts_name_the_node_set(bipartite):
    graph, xs, xd = bipartite
    conv = pyg_sar.convert(SAGEConv((5, 4), 3))
    with pytest.raises(ValueError, match="has 9 rows, expected 13 .* source node set"):
        conv((xs[:9], xd), graph)
    with pytest.raises(ValueError, match=r"size must be \(13, 9\)"):
        conv.propagate(graph, x=(xs, xd), size=(9, 9))
    assert conv((xs, xd), graph).shape == (9, 3)


def test_message_passing_hooks_are_refused():
    conv = SAGEConv(3, 3)
    handle = conv.register_message_forward_hook(lambda module, inputs, out: out)
    with pytest.raises(UnsupportedLayerError, match="message_forward hooks"):
        pyg_sar.convert(conv)
    handle.remove()
    pyg_sar.convert(conv)
    graph, _ = build_graph(torch.tensor([[0, 1], [1, 0]]), [0, 2], [0, 2], 0)
    seen = []
    conv.register_propagate_forward_hook(lambda module, inputs, out: seen.append(out) or out * 2)
    x = torch.randn(2, 3)
    assert torch.allclose(conv(x, graph), SAGEConv.forward(conv, x, torch.tensor(
        [[0, 1], [1, 0]])))  # propagate hooks run, as in PyG (both doubled)
    assert len(seen) == 2
    conv.register_aggregate_forward_pre_hook(lambda module, inputs: None)  # after convert
    with pytest.raises(ValueError, match="aggregate_forward_pre hooks"):
        conv(x, graph)


def test_model_metadata_must_match_the_partition():
    data = hc.make_hetero()
    part = hc.hand_partition(data, 1, 0)
    model = to_hetero(hc.HOMO["sage_mean"](), data.metadata(), aggr="sum").double()
    with torch.no_grad():
        model(data.x_dict, data.edge_index_dict)
    pyg_sar.convert(model, pyg_sar.SARConfig(check_loss=False))
    graphs = dict(part.edge_index_dict)
    assert set(model(part.x_dict, graphs)) == set(data.node_types)
    del graphs[("inst", "employs", "author")]
    with pytest.raises(ValueError, match=r"edge types \[\('inst', 'employs', 'author'\)\] that "
                                         r"the partition's edge_index_dict lacks"):
        model(part.x_dict, graphs)
    x = dict(part.x_dict)
    x["author"] = x["author"][:-1]
    with pytest.raises(ValueError, match="node type 'author' has 25 rows in the model's input, "
                                         "but rank 0 holds 26"):
        model(x, part.edge_index_dict)


def test_converted_hetero_model_pickles_and_copies():
    data = hc.make_hetero()
    part = hc.hand_partition(data, 1, 0)
    model = to_hetero(hc.HOMO["gat"](), data.metadata(), aggr="mean").double()
    with torch.no_grad():
        model(data.x_dict, data.edge_index_dict)
    pyg_sar.convert(model, pyg_sar.SARConfig(check_loss=False))
    want = model(part.x_dict, part.edge_index_dict)
    clone = copy.deepcopy(model)
    got = clone(part.x_dict, part.edge_index_dict)
    for t in want:
        assert torch.equal(want[t], got[t])
