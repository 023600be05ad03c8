"""HGTConv and HANConv over a heterogeneous partition (a dict of bipartite DistGraphs).

Both are called as in PyG, ``conv(part.x_dict, part.edge_index_dict)``; a dict of Tensor
``edge_index`` still runs PyG's own forward.

**HGTConv** concatenates all edge types into one bipartite graph (PyG's
``construct_bipartite_edge_index``): its sources are the pairs (edge type, source node), its
destinations every node type's nodes, and one propagate normalises the attention over a
destination's in-edges of *all* edge types. :func:`combined_graph` builds the same graph as one
bipartite :class:`~pyg_sar.graph.DistGraph` from the per-edge-type ones, without communication:
rank ``s``'s source rows are its rows of each edge type's source type, concatenated in edge type
order (exactly the rows of HGT's ``k`` and ``v``), its send list to ``r`` the edge types' send
lists with the same offsets, and block ``(r, s)`` the edge types' blocks ``(r, s)`` with their
columns shifted into that concatenation. The layer's own ``message`` (with its softmax) then
runs by destination chunks, each with all its nodes' in-edges (modes ``sar`` / ``sa``,
:mod:`pyg_sar.core.dst_chunks`), or as PyG's propagate over the fetched halo (mode ``halo``),
like any verified layer; nothing remote is kept in mode ``sar``. :func:`hgt_forward` is PyG's
forward with that graph in place of the concatenated ``edge_index``; the combined graph's
destinations are the node types that some edge type of ``edge_index_dict`` points to (the rows
HGT keeps), and a destination type of the metadata that no given edge type reaches gets the
zero rows PyG's propagate gives it.

**HANConv** runs one propagate per edge type (a GAT-like softmax inside ``message``, exact as
above), then a semantic attention per destination type whose score averages
``tanh(k_lin(out))`` over *all* nodes of that type. :func:`han_forward` runs PyG's forward with
its ``group`` replaced by :func:`distributed_group`, where that mean is a sum over the rank's
nodes added over ranks (:func:`sum_over_ranks_grad`, whose backward adds the gradients over
ranks too) divided by the global node count, so every rank computes the semantic weights of
one process.
"""
from __future__ import annotations

from collections.abc import Callable
from itertools import accumulate
from typing import Any, Optional

import torch
import torch.nn.functional as F
from torch import Tensor
from torch_geometric.nn.conv import HANConv, HGTConv

from pyg_sar.core.collectives import sum_over_ranks, sum_over_ranks_grad
from pyg_sar.graph import Block, DistGraph
from pyg_sar.nn.conversion.forwards import pyg_forward


def _dist_graphs(name: str, edge_index_dict: dict) -> bool:
    """Whether ``edge_index_dict`` holds DistGraphs (all of them), or Tensors (none)."""
    kinds = {isinstance(g, DistGraph) for g in edge_index_dict.values()}
    if kinds == {True, False}:
        bad = next(et for et, g in edge_index_dict.items() if not isinstance(g, DistGraph))
        raise ValueError(f"pyg_sar: {name} got a DistGraph for some edge types and a "
                         f"{type(edge_index_dict[bad]).__name__} for {bad}; pass every edge "
                         f"type's DistGraph (part.edge_index_dict)")
    return kinds == {True}


def _check_graphs(name: str, graphs: dict) -> DistGraph:
    """The first graph; every graph of the same rank and world size."""
    first = next(iter(graphs.values()))
    for et, g in graphs.items():
        if (g.rank, g.world_size) != (first.rank, first.world_size):
            raise ValueError(f"pyg_sar: {name}: edge type {et} is rank {g.rank} of "
                             f"{g.world_size}, another is rank {first.rank} of "
                             f"{first.world_size}")
    return first


# --------------------------------------------------------------------------------- HGTConv
def combined_graph(graphs: dict, dst_types: list) -> tuple[DistGraph, Tensor]:
    """The bipartite DistGraph of all edge types at once, and the edge type of each of its
    stored edges (an index into ``list(graphs)``).

    Args:
        graphs: edge type -> this rank's bipartite DistGraph, in the order HGT concatenates the
            sources (``edge_index_dict``'s order).
        dst_types: the destination node types in the order HGT concatenates them; every
            edge type's destination type must be among them.

    Sources are (edge type, source node) pairs: on every rank the edge types' source rows
    concatenated in order. Destinations: ``dst_types``' nodes concatenated in order. Built
    from the graphs' blocks and send lists only (no communication); cached on the first graph.
    """
    first = _check_graphs("HGTConv", graphs)
    key = ("hgt_combined", tuple(graphs), tuple(dst_types))
    hit = first._cache.get(key)
    if hit is not None and all(a is b for a, b in zip(hit[0], graphs.values())):
        if first._context is not None:  # the edge types' graphs may have been bound since
            hit[1]._context = first._context
        return hit[1], hit[2]
    result = _build_combined(graphs, dst_types)
    first._cache[key] = (tuple(graphs.values()), *result)
    return result


def _build_combined(graphs: dict, dst_types: list) -> tuple[DistGraph, Tensor]:
    first = next(iter(graphs.values()))
    rank, world, device = first.rank, first.world_size, first.device
    edge_types, gs = list(graphs), list(graphs.values())
    dst_offsets: dict[Any, list[int]] = {}
    for et, g in graphs.items():
        seen = dst_offsets.setdefault(et[-1], g.node_offsets)
        if seen != g.node_offsets:
            raise ValueError(f"pyg_sar: HGTConv: edge type {et} has other per-rank ranges of "
                             f"its destination type {et[-1]!r} ({g.node_offsets}) than another "
                             f"edge type into it ({seen})")
    missing = [t for t in dst_offsets if t not in dst_types]
    if missing:
        raise ValueError(f"pyg_sar: HGTConv: no features for destination types {missing}")
    dst_types = [t for t in dst_types if t in dst_offsets]
    count = [sum(dst_offsets[t][q + 1] - dst_offsets[t][q] for t in dst_types)
             for q in range(world)]
    node_offsets = list(accumulate(count, initial=0))
    dst_base, base = {}, 0
    for t in dst_types:
        dst_base[t] = base
        base += dst_offsets[t][rank + 1] - dst_offsets[t][rank]
    src_count = [sum(g.num_src_nodes_of(q) for g in gs) for q in range(world)]
    src_offsets = list(accumulate(src_count, initial=0))
    # Where each edge type's rows start among this rank's (and the recv lists') sources.
    own_base = [sum(g.num_src_nodes for g in gs[:i]) for i in range(len(gs))]
    blocks, types, start = [], [], 0
    num_dst = count[rank]
    for s in range(world):
        rows, cols, kinds, recv_base = [], [], [], 0
        for i, (et, g) in enumerate(zip(edge_types, gs)):
            b = g.blocks[s]
            rows.append(b.row + dst_base[et[-1]])
            cols.append(b.col + (own_base[i] if s == rank else recv_base))
            kinds.append(torch.full((b.num_edges,), i, dtype=torch.long, device=device))
            recv_base += b.num_src
        num_src = src_count[rank] if s == rank else recv_base
        row, col, kind = torch.cat(rows), torch.cat(cols), torch.cat(kinds)
        order = torch.argsort(row * (num_src + 1) + col, stable=True)
        row, col, kind = row[order], col[order], kind[order]
        rowptr = torch.zeros(num_dst + 1, dtype=torch.long, device=device)
        rowptr[1:] = torch.cumsum(torch.bincount(row, minlength=num_dst), 0)
        blocks.append(Block(s, rowptr, col, num_src, start, None, _row=row))
        types.append(kind)
        start += int(col.numel())
    send_idx = [torch.cat([g.send_idx[q].to(device) + own_base[i] for i, g in enumerate(gs)])
                for q in range(world)]
    in_degree = torch.zeros(num_dst, dtype=torch.long, device=device)
    for et, g in graphs.items():
        lo = dst_base[et[-1]]
        in_degree[lo:lo + g.num_nodes] += g.in_degree.to(device)
    graph = DistGraph(rank, world, node_offsets, blocks, send_idx, in_degree,
                      first._context, src_node_offsets=src_offsets, bipartite=True)
    return graph, torch.cat(types)


def hgt_forward(self: HGTConv, x_dict: dict, edge_index_dict: dict) -> dict:
    """:meth:`HGTConv.forward`; over DistGraphs the edge types' graph concatenation is
    :func:`combined_graph` (bound to converted layers by :func:`pyg_sar.convert`)."""
    if not _dist_graphs("HGTConv", edge_index_dict):
        return self._sar_base.forward(self, x_dict, edge_index_dict)
    H, D = self.heads, self.out_channels // self.heads
    k_dict, q_dict, v_dict = {}, {}, {}
    for key, val in self.kqv_lin(x_dict).items():
        k, q, v = torch.tensor_split(val, 3, dim=1)
        k_dict[key], q_dict[key], v_dict[key] = k.view(-1, H, D), q.view(-1, H, D), \
            v.view(-1, H, D)
    for et, g in edge_index_dict.items():
        for t, rows, what in ((et[0], g.num_src_nodes, "source"),
                              (et[-1], g.num_nodes, "destination")):
            if t not in k_dict:
                raise ValueError(f"pyg_sar: HGTConv: x_dict has no node type {t!r} ({what} "
                                 f"type of edge type {et})")
            if k_dict[t].shape[0] != rows:
                raise ValueError(f"pyg_sar: HGTConv: x_dict[{t!r}] has {k_dict[t].shape[0]} "
                                 f"rows, but edge type {et}'s graph has {rows} local {what} "
                                 f"nodes")
    dst_types = [t for t in q_dict if any(et[-1] == t for et in edge_index_dict)]
    graph, kind = combined_graph(edge_index_dict, dst_types)
    k, v, _ = self._construct_src_node_feat(k_dict, v_dict, edge_index_dict)
    q = torch.cat([q_dict[t] for t in dst_types], dim=0)
    p_rel = torch.cat([self.p_rel["__".join(et)] for et in edge_index_dict], dim=0)
    # k and v are source rows only (a pair with no destination part: over the bipartite
    # combined graph they have other rows than q).
    out = self.propagate(graph, k=(k, None), q=q, v=(v, None),
                         edge_attr=p_rel.index_select(0, kind))
    out_dict, start = {}, 0
    for t in dst_types:
        n = q_dict[t].shape[0]
        out_dict[t] = out[start:start + n]
        start += n
    for t in q_dict:  # a destination type no given edge type reaches: PyG's zero rows
        if t in self.dst_node_types and t not in out_dict:
            out_dict[t] = q_dict[t].new_zeros((q_dict[t].shape[0], self.out_channels))
    out_dict = {t: out_dict[t] for t in q_dict if t in out_dict}  # PyG's order
    a_dict = self.out_lin({t: F.gelu(v) for t, v in out_dict.items()})
    for t in out_dict:
        out = a_dict[t]
        if out.size(-1) == x_dict[t].size(-1):
            alpha = self.skip[t].sigmoid()
            out = alpha * out + (1 - alpha) * x_dict[t]
        out_dict[t] = out
    return out_dict


# --------------------------------------------------------------------------------- HANConv
def distributed_group(comm) -> Callable:
    """HANConv's ``group`` (semantic attention over the edge types into one node type) with
    the mean over the node type's nodes taken over all ranks' nodes."""
    def group(xs: list, q: Tensor, k_lin: torch.nn.Module
              ) -> tuple[Optional[Tensor], Optional[Tensor]]:
        if len(xs) == 0:
            return None, None
        out = torch.stack(xs)  # [edge types, local nodes, channels]
        # The node count in float64 (exact), the sums in the activations' dtype.
        n = int(sum_over_ranks(torch.tensor([out.shape[1]], dtype=torch.float64,
                                            device=out.device), comm))
        if n == 0 or out.shape[-1] == 0:  # PyG's out.numel() == 0, over all ranks
            return out.view(0, out.size(-1)), None
        mean = sum_over_ranks_grad(torch.tanh(k_lin(out)).sum(1), comm) / n
        attn = F.softmax((q * mean).sum(-1), dim=0)
        return torch.sum(attn.view(len(xs), 1, -1) * out, dim=0), attn
    return group


def han_forward(self: HANConv, x_dict: dict, edge_index_dict: dict,
                return_semantic_attention_weights: bool = False):
    """:meth:`HANConv.forward` (PyG's code) with the semantic attention's mean over a node
    type's nodes taken over all ranks (:func:`distributed_group`) over DistGraphs."""
    if not _dist_graphs("HANConv", edge_index_dict):
        return self._sar_base.forward(self, x_dict, edge_index_dict,
                                      return_semantic_attention_weights)
    first = _check_graphs("HANConv", edge_index_dict)
    comm = first.context.comm if first.world_size > 1 else None
    forward = pyg_forward(HANConv, group=distributed_group(comm))
    return forward(self, x_dict, edge_index_dict, return_semantic_attention_weights)


__all__ = ["combined_graph", "distributed_group", "han_forward", "hgt_forward",
           "sum_over_ranks_grad"]
