"""Adapters of model classes (pyg_sar.nn.adapters.labels, LINKX's SparseLinear,
pyg_sar.nn.adapters.laplacian) in the cases the zoo does not reach: a rank without the largest
label, and refused inputs."""
from __future__ import annotations

from pathlib import Path

import pytest
import torch
from torch_geometric.nn import ChebConv
from torch_geometric.nn.models.linkx import SparseLinear

import pyg_sar
from pyg_sar.graph import DistGraph
from tests.core import engine_cases as ec


def gloo3_call(root: Path) -> list:
    """The label case of the shared P = 3 spawn/gloo launch (tests/core/conftest.py): its
    inputs and ``[name, module, function, kwargs]``."""
    root.mkdir(parents=True)
    data = ec.make_graph()
    n = data.num_nodes
    # contiguous parts: the largest class only in the last third (rank 2)
    data.y = torch.where(torch.arange(n) >= 2 * n // 3, 3, data.y % 2)
    pyg_sar.partition_graph(data, 3, root / "p3", method="contiguous")
    torch.save({k: data[k] for k in ("y", "edge_index", "train_mask", "edge_weight")},
               root / "graph.pt")
    return ["label_classes", "tests.nn.model_adapter_cases", "label_classes",
            {"parts": str(root / "p3"), "graph": str(root / "graph.pt")}]


def test_label_propagation_one_hot_uses_the_whole_graphs_classes(gloo3_launch):
    """Under spawn/gloo, in the launch shared with test_engine_helpers.py and test_reduce.py."""
    results = gloo3_launch["label_classes"]
    assert len(results) == 3
    assert results[0]["local_classes"] < 4  # the case this test is about
    for res in results:
        assert res["columns"] == 4
        assert res["error"] <= 1e-12


def _single_part(tmp_path) -> tuple:
    data = ec.make_graph()
    pyg_sar.partition_graph(data, 1, tmp_path / "p1", method="random")
    return data, pyg_sar.load_partition(tmp_path / "p1", 0)


def test_cheb_refuses_lambda_max_per_graph(tmp_path):
    data, part = _single_part(tmp_path)
    conv = pyg_sar.convert(ChebConv(ec.IN, 3, K=2).double())
    with pytest.raises(ValueError, match="one per graph"):
        conv(part.x.double(), part.graph, lambda_max=torch.tensor([2.0, 1.5]),
             batch=torch.zeros(part.num_nodes, dtype=torch.long))
    with pytest.raises(ValueError, match="edge_weight with 3 rows"):
        conv(part.x.double(), part.graph, torch.ones(3, dtype=torch.float64))


def test_sparse_linear_needs_node_ids_and_the_whole_graphs_size(tmp_path):
    data, part = _single_part(tmp_path)
    g = part.graph
    bare = DistGraph(g.rank, g.world_size, g.node_offsets, g.blocks, g.send_idx, g.in_degree)
    layer = pyg_sar.convert(SparseLinear(data.num_nodes, 4))
    with pytest.raises(ValueError, match="no node_ids"):
        layer(bare)
    small = pyg_sar.convert(SparseLinear(data.num_nodes - 1, 4))
    with pytest.raises(ValueError, match=f"graph has {data.num_nodes}"):
        small(g)
    # with node_ids: the rows of the rank's nodes (P = 1: all of them, in partition order)
    ref = SparseLinear(data.num_nodes, 4)
    layer.load_state_dict(ref.state_dict())
    want = ref(data.edge_index)[part.node_ids]
    assert torch.allclose(layer(g), want, rtol=0, atol=1e-6)


def test_aggregations_by_message_order_are_refused_the_others_run_by_destination():
    """PNA's scalers over a softmax (no per-node statistics rebuild it, but it does not depend
    on the order of a node's messages) run by destination chunks; an LSTM inside a
    multi-aggregation reads the messages in order and is refused, naming it."""
    from torch_geometric.nn import PNAConv, SAGEConv
    from torch_geometric.nn import aggr as pyg_aggr

    from pyg_sar.nn.layers import PER_DESTINATION
    conv = PNAConv(4, 4, ["mean", "softmax"], ["identity"], deg=torch.tensor([1, 2, 1]))
    assert pyg_sar.convert(conv)._sar_spec.aggr == PER_DESTINATION
    lstm = SAGEConv(4, 4, aggr=pyg_aggr.MultiAggregation(["mean", pyg_aggr.LSTMAggregation(4, 4)]))
    with pytest.raises(pyg_sar.UnsupportedLayerError,
                       match="LSTMAggregation is not a function.*order of a node's messages"):
        pyg_sar.convert(lstm)
