"""Layer-specific views of a rank's blocks: as stored, or with self-loops in the local block.

Layers such as GCN and GAT propagate over the graph with self-loops; since a self-loop's source
is local, the loops live in the local block only and the remote blocks stay as stored. A view
keeps, for every view edge, the index of the stored edge it comes from (``-1`` for an added
loop), so edge tensors given in stored order can be carried into view order.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import torch
from torch import Tensor

from pyg_sar.graph import DistGraph


class BipartiteLoopsError(ValueError):
    """Self-loops asked for on a bipartite graph (one edge type between two node types)."""


def refuse_loops_on_bipartite(graph: DistGraph, what: str = "self-loops") -> None:
    """Raise :class:`BipartiteLoopsError` if ``graph`` is bipartite: node ``i`` of the source
    type is not node ``i`` of the destination type, so a "self-loop" has no meaning (PyG adds
    loops between unrelated nodes of the two types there, or fails)."""
    if graph.is_bipartite:
        raise BipartiteLoopsError(
            f"{what} on a bipartite graph (an edge type between two node types, "
            f"{graph.num_global_src_nodes} source and {graph.num_global_nodes} destination "
            f"nodes): a source node and a destination node with the same id are unrelated; "
            f"construct the layer with add_self_loops=False (as PyG's to_hetero / HeteroConv "
            f"need for edge types between different node types)")


@dataclass
class ViewBlock:
    """One block of a view: CSR by local destination, columns into the source rows."""

    src_rank: int
    rowptr: Tensor
    col: Tensor
    row: Tensor
    num_src: int
    edge_start: int

    @property
    def num_edges(self) -> int:
        return int(self.col.numel())

    @property
    def edge_slice(self) -> slice:
        return slice(self.edge_start, self.edge_start + self.num_edges)


@dataclass
class GraphView:
    """The blocks a layer propagates over, in view edge order (blocks by source rank)."""

    graph: DistGraph
    blocks: list[ViewBlock]
    stored_index: Optional[Tensor]  # [view edges] stored edge id, -1 for added loops; None = same
    in_degree: Tensor  # number of view edges into every local node

    @property
    def num_edges(self) -> int:
        return sum(b.num_edges for b in self.blocks)

    def edge_tensor(self, stored: Optional[Tensor], loop_value: Optional[Tensor] = None,
                    ) -> Optional[Tensor]:
        """Carry a stored-order edge tensor into view order.

        ``loop_value`` (``[num_nodes, ...]``) gives the value of each added self-loop; required
        when the view adds loops.
        """
        if stored is None or self.stored_index is None:
            return stored
        idx = self.stored_index
        is_loop = idx < 0
        out = stored.index_select(0, idx.clamp(min=0))
        if bool(is_loop.any()):
            if loop_value is None:
                raise ValueError("GraphView.edge_tensor: this view adds self-loops; a value for "
                                 "them (loop_value) is required")
            loop_nodes = self.loop_nodes()
            out = out.index_put((is_loop.nonzero().view(-1),),
                                loop_value.index_select(0, loop_nodes).to(out.dtype))
        return out

    def loop_nodes(self) -> Tensor:
        """Local node id of every added self-loop, in view edge order."""
        assert self.stored_index is not None
        local = self.blocks[self.graph.rank]
        is_loop = self.stored_index[local.edge_slice] < 0
        return local.row[is_loop]

    def edge_index(self, halo_offsets: list[int]) -> Tensor:
        """``[2, E]`` edge index over [local nodes, halo rows], in view edge order."""
        parts = []
        for b in self.blocks:
            src = b.col if b.src_rank == self.graph.rank else b.col + halo_offsets[b.src_rank]
            parts.append(torch.stack([src, b.row]))
        return torch.cat(parts, dim=1)


def stored_view(graph: DistGraph) -> GraphView:
    """The graph as stored (no self-loops added)."""
    def build() -> GraphView:
        blocks = [ViewBlock(b.src_rank, b.rowptr, b.col, b.row, b.num_src, b.edge_start)
                  for b in graph.blocks]
        return GraphView(graph, blocks, None, graph.in_degree)
    return graph.cached(("view", "stored"), build)


def self_loop_view(graph: DistGraph) -> GraphView:
    """The graph with its self-loops replaced by exactly one self-loop per local node.

    Covers both PyG idioms: ``remove_self_loops`` + ``add_self_loops`` (GAT) and
    ``add_remaining_self_loops`` (GCN; a kept loop's stored value is found through
    :meth:`existing_loop_index`). Remote blocks are unchanged.
    """
    refuse_loops_on_bipartite(graph)
    def build() -> GraphView:
        local = graph.blocks[graph.rank]
        existing = torch.bincount(local.row[local.row == local.col], minlength=graph.num_nodes)
        return _with_loops(graph, keep=local.row != local.col,
                           in_degree=graph.in_degree - existing + 1)
    return graph.cached(("view", "self_loops"), build)


def existing_loop_index(graph: DistGraph) -> Tensor:
    """For every local node, the stored id of its (last) self-loop edge, or -1 if it has none."""
    refuse_loops_on_bipartite(graph)
    def build() -> Tensor:
        local = graph.blocks[graph.rank]
        is_loop = local.row == local.col
        out = torch.full((graph.num_nodes,), -1, dtype=torch.long, device=local.col.device)
        ids = torch.arange(local.edge_start, local.edge_start + local.num_edges,
                           device=local.col.device)
        out[local.row[is_loop]] = ids[is_loop]
        return out
    return graph.cached(("loop_index",), build)


def added_loop_view(graph: DistGraph) -> GraphView:
    """The graph with one self-loop added per local node, existing loops kept (PyG's
    ``add_self_loops`` without ``remove_self_loops`` first). Remote blocks are unchanged."""
    refuse_loops_on_bipartite(graph)
    def build() -> GraphView:
        local = graph.blocks[graph.rank]
        return _with_loops(graph, keep=torch.ones_like(local.row, dtype=torch.bool),
                           in_degree=graph.in_degree + 1)
    return graph.cached(("view", "added_loops"), build)


def _with_loops(graph: DistGraph, keep: Tensor, in_degree: Tensor) -> GraphView:
    """The view whose local block holds the stored local edges selected by ``keep`` plus one
    self-loop per node (CSR by destination, then source); remote blocks are unchanged."""
    n = graph.num_nodes
    local = graph.blocks[graph.rank]
    loops = torch.arange(n, device=local.row.device)
    stored_ids = torch.arange(local.edge_start, local.edge_start + local.num_edges,
                              device=loops.device)
    row = torch.cat([local.row[keep], loops])
    col = torch.cat([local.col[keep], loops])
    ids = torch.cat([stored_ids[keep], torch.full_like(loops, -1)])
    order = torch.argsort(row * max(n, 1) + col, stable=True)
    row, col, ids = row[order], col[order], ids[order]
    rowptr = torch.zeros(n + 1, dtype=torch.long, device=loops.device)
    rowptr[1:] = torch.cumsum(torch.bincount(row, minlength=n), 0)
    blocks, all_ids, start = [], [], 0
    for b in graph.blocks:
        if b.src_rank == graph.rank:
            blocks.append(ViewBlock(b.src_rank, rowptr, col, row, n, start))
            all_ids.append(ids)
            start += int(col.numel())
        else:
            blocks.append(ViewBlock(b.src_rank, b.rowptr, b.col, b.row, b.num_src, start))
            all_ids.append(torch.arange(b.edge_start, b.edge_start + b.num_edges,
                                        device=loops.device))
            start += b.num_edges
    return GraphView(graph, blocks, torch.cat(all_ids), in_degree)
