"""LINKX's ``SparseLinear`` over a DistGraph.

``SparseLinear`` multiplies the adjacency matrix with a weight that has one row per node of the
whole graph (``weight_j`` of every edge's source: ``A @ W``). Every rank holds the whole weight
(a parameter, replicated like any other and summed by the gradient all-reduce), so the rank
propagates the rows of its own nodes, ``weight[graph.node_ids]`` (original node ids, the ids
the model was built for), and the engine fetches the sources' rows from their owners; their
gradients go back to the owners' rows of the weight. The weight's size is PyG's: N x hidden on
every rank.
"""
from __future__ import annotations

from typing import Optional

from torch import Tensor

from pyg_sar.graph import DistGraph


def sparse_linear_forward(self, edge_index, edge_weight: Optional[Tensor] = None) -> Tensor:
    """``SparseLinear.forward`` over a DistGraph: propagate the weight rows of the rank's nodes
    (see the module docstring); PyG's own forward for a Tensor edge_index."""
    if not isinstance(edge_index, DistGraph):
        return self._sar_base.forward(self, edge_index, edge_weight)
    graph = edge_index
    if graph.node_ids is None:
        raise ValueError("pyg_sar: SparseLinear (LINKX) indexes its weight by node id, but "
                         "this DistGraph has no node_ids (original ids); load it with "
                         "pyg_sar.load_partition")
    if self.weight.shape[0] != graph.num_global_nodes:
        raise ValueError(f"pyg_sar: SparseLinear (LINKX) has a weight for "
                         f"{self.weight.shape[0]} nodes, but the graph has "
                         f"{graph.num_global_nodes}")
    rows = self.weight.index_select(0, graph.node_ids.to(self.weight.device))
    out = self.propagate(graph, weight=rows, edge_weight=edge_weight)
    if self.bias is not None:
        out = out + self.bias
    return out
