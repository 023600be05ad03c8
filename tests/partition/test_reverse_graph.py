"""``DistGraph.flip([0])``: the reversed graph, partitioned like the original, built with one
exchange of the cut edges (pyg_sar.partition.reverse). Compared with ``edge_index.flip([0])`` of
the whole graph at P = 1 (in process) and P = 3 (real processes)."""
from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
import torch

import pyg_sar
from pyg_sar.testing import run_on_ranks
from tests.partition import reverse_cases
from tests.partition.conftest import random_graph

HERE = Path(__file__).resolve().parent


def _graph():
    # duplicates and self-loops included: multi-edges must be reversed one by one
    return random_graph(num_nodes=40, num_edges=170, duplicates=6, num_self_loops=5, seed=3)


def _expected(data):
    rev = data.edge_index.flip([0])
    out_deg = torch.bincount(data.edge_index[0], minlength=data.num_nodes)
    return Counter(map(tuple, rev.t().tolist())), out_deg


def _check(results, data) -> None:
    edges, out_deg = _expected(data)
    got, stored = Counter(), 0
    for res in results:
        assert res["cached"]
        rev = res["reversed"]
        got.update(map(tuple, rev["edges"]))
        stored += rev["num_edges"]
        for node, deg in rev["in_degree"]:  # in-degree of the reversed graph = out-degree
            assert deg == int(out_deg[node]), (node, deg)
        for node, deg in rev["src_deg"]:  # every source row carries its reversed in-degree
            assert deg == int(out_deg[node]), (node, deg)
    assert stored == data.num_edges
    assert got == edges


@pytest.fixture(scope="module")
def parts3(tmp_path_factory):
    root = tmp_path_factory.mktemp("reverse") / "p3"
    pyg_sar.partition_graph(_graph(), 3, root, method="random", seed=1)
    return str(root)


def test_reverse_single_process(tmp_path):
    data = _graph()
    pyg_sar.partition_graph(data, 1, tmp_path / "p1", method="random")
    part = pyg_sar.load_partition(tmp_path / "p1", 0)
    rev = part.graph.flip([0])
    # no communication context is needed at P = 1
    _check([{"cached": rev.flip([0]) is part.graph,
             "reversed": reverse_cases.describe(rev, part.node_ids)}], data)


def test_reverse_three_ranks(parts3):
    results = run_on_ranks(f"{HERE / 'reverse_cases.py'}:reverse", 3, launcher="spawn",
                           backend="gloo", kwargs={"parts": parts3}, timeout=300)
    _check(results, _graph())
    # the original graph is untouched by building its reverse
    got = Counter()
    for res in results:
        got.update(map(tuple, res["original"]["edges"]))
    assert got == Counter(map(tuple, _graph().edge_index.t().tolist()))


def test_flip_refuses_other_axes(tmp_path):
    pyg_sar.partition_graph(_graph(), 1, tmp_path / "p1", method="random")
    graph = pyg_sar.load_partition(tmp_path / "p1", 0).graph
    with pytest.raises(ValueError, match=r"flip\(\[1\]\)"):
        graph.flip([1])
    with pytest.raises(ValueError, match="only flip"):
        graph.flip([0, 1])


def test_edge_tensors_are_refused_over_the_reversed_graph(tmp_path):
    from torch_geometric.nn import GATConv, GCNConv
    data = _graph()
    pyg_sar.partition_graph(data, 1, tmp_path / "p1", method="random")
    part = pyg_sar.load_partition(tmp_path / "p1", 0)
    rev = part.graph.flip([0])  # at P = 1 it has as many edges as the original
    x = torch.randn(part.graph.num_nodes, 4)
    weight = torch.rand(part.graph.num_edges)
    gcn = pyg_sar.convert(GCNConv(4, 3))
    gat = pyg_sar.convert(GATConv(4, 3, edge_dim=1))
    with pytest.raises(ValueError, match="'edge_weight' with one row per edge.*reversed"):
        gcn(x, rev, weight)
    with pytest.raises(ValueError, match="edge_attr.*reversed DistGraph"):
        gat(x, rev, weight.view(-1, 1))
    assert gcn(x, rev).shape == (part.graph.num_nodes, 3)  # without edge data it runs
    assert gcn(x, part.graph, weight).shape == (part.graph.num_nodes, 3)
