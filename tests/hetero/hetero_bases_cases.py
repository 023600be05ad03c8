"""Rank-side cases of the ``to_hetero_with_bases`` exactness tests: many cases per launch.

Every rank builds the graph of :mod:`hetero_cases` (three node types of different input
dimensions, five edge types, one within a type with self-loops) and the same reference model
``to_hetero_with_bases(homo, metadata, num_bases, in_channels={"x": 8})``, runs plain PyG on the
whole graph and the converted model on its part (hand-built or written by
``pyg_sar.partition_graph``), and reports the relative errors of every node type's output, input
gradient and every parameter gradient (:func:`hetero_cases.compare`).
"""
from __future__ import annotations

from typing import Optional

import torch
from torch_geometric.nn import GINConv, GraphConv, Linear, SAGEConv, to_hetero_with_bases

from tests.hetero import hetero_cases as hc


class HomoWeighted(torch.nn.Module):
    """GraphConv with an edge weight made from the edge attributes (an edge-level input that
    to_hetero_with_bases groups in the typed graph's edge order), then SAGEConv."""

    def __init__(self) -> None:
        super().__init__()
        self.lin = Linear(-1, 8)
        self.conv1 = GraphConv(8, 8)
        self.conv2 = SAGEConv(8, 5)

    def forward(self, x, edge_index, edge_attr):
        w = edge_attr[:, 0].sigmoid()
        x = self.conv1(self.lin(x).relu(), edge_index, w).relu()
        return self.conv2(x, edge_index)


# name -> (homogeneous model, num_bases, takes edge attributes)
MODELS = {
    "sage_mean": (lambda: hc.Homo(SAGEConv(8, 8), SAGEConv(8, 5)), 2, False),
    "sage_max": (lambda: hc.Homo(SAGEConv(8, 8, aggr="max"), SAGEConv(8, 5, aggr="sum")), 3,
                 False),
    "graphconv": (lambda: hc.Homo(GraphConv(8, 8), GraphConv(8, 5, aggr="mean")), 2, False),
    "gin": (lambda: hc.Homo(GINConv(hc._mlp(8, 8), train_eps=True), GINConv(hc._mlp(8, 5))),
            3, False),
    "graphconv_weighted": (HomoWeighted, 2, True),
}


def build(name: str, metadata) -> tuple[torch.nn.Module, bool]:
    homo, num_bases, with_edges = MODELS[name]
    input_map = ({"x": "node", "edge_index": "edge", "edge_attr": "edge"} if with_edges
                 else None)
    model = to_hetero_with_bases(homo(), metadata, num_bases=num_bases, in_channels={"x": 8},
                                 input_map=input_map)
    return model, with_edges


def oracle(data, name: str):
    """The oracle of a model of :data:`MODELS` and how it is called
    (:func:`hetero_cases.reference`)."""
    torch.manual_seed(7)
    ref, with_edges = build(name, data.metadata())
    run = hc.runner(with_edges)
    return hc.reference(data, ref, run), run


def mag_data():
    """A small OGB-MAG-shaped graph (``pyg_sar.datasets.mag_like``: 80 papers, one
    institution, no reverse edges, so three node types are never destinations) with float64
    features on every node type (to_hetero_with_bases needs an input per node type)."""
    from pyg_sar.datasets import mag_like
    data = mag_like(80, seed=1, num_features=6, num_classes=4)
    g = torch.Generator().manual_seed(5)
    for t in data.node_types:
        x = data[t].get("x")
        data[t].x = (torch.randn(data[t].num_nodes, 3, generator=g, dtype=torch.float64)
                     if x is None else x.double())
    return data


def suite(ctx, cases: list, parts: Optional[str] = None, mag: bool = False) -> dict:
    if mag:
        import pyg_sar
        data, part = mag_data(), pyg_sar.load_partition(parts, ctx.rank)
    else:
        data, part = hc.load(ctx, parts, ctx.world_size, 0)
    results, oracles = {}, {}
    for name, mode in cases:
        if name not in oracles:
            oracles = {name: oracle(data, name)}
        results[f"{name}/{mode}"] = hc.one_case(part, oracles[name], mode)
    return results


def both(ctx, cases: list, parts: str, partition_cases: list, mag_parts: str,
         mag_cases: list) -> dict:
    """``cases`` on a hand-built partition, ``partition_cases`` on the folder ``parts``,
    ``mag_cases`` on the partition ``mag_parts`` of :func:`mag_data`."""
    return {"hand": suite(ctx, cases), "partition": suite(ctx, partition_cases, parts),
            "mag": suite(ctx, mag_cases, mag_parts, mag=True)}
