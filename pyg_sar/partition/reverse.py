r"""The reversed graph (every edge ``u -> v`` becomes ``v -> u``), partitioned like the original.

PyG reverses a graph with ``edge_index.flip([0])`` (``DirGNNConv`` runs a second convolution
over it). A :class:`~pyg_sar.graph.DistGraph` stores every edge on the rank that owns its
destination, so the reversed graph stores every edge on the rank that owns its *source* in the
original graph. Each rank knows its in-edges and its send lists, which is enough to build it
with one exchange of the cut edges:

* block ``(r, r)``: the local block with its two ends swapped;
* for ``s != r``, rank ``r`` hands the edges of its block ``(r, s)`` to ``s`` as pairs (local
  destination on ``r``, position in ``s``'s send list to ``r``); ``s`` maps the position to its
  own node (the reversed destination) and the destinations on ``r`` become its reversed sources
  from ``r``. Both sides order those source rows the same way (ascending local id on ``r``), so
  ``r``'s reversed send list to ``s`` needs no further message.

The in-degree of the reversed graph is the original out-degree; the in-degree of every reversed
source row comes from its owner in a second (N x 1) exchange. Node ids, ``node_ids`` and the
communication context are those of the original graph.

Edge tensors of the original graph (``LocalPartition.edge_attr``) are in the original stored
order on the destination's rank; they do not describe the reversed graph's edges, which live on
other ranks. PyG's ``DirGNNConv`` passes none.
"""
from __future__ import annotations

import torch
from torch import Tensor

from pyg_sar.graph import Block, DistGraph

_CACHE_KEY = ("reversed",)


def reversed_graph(graph: DistGraph) -> DistGraph:
    """The reversed graph of ``graph``, built once per graph and cached on it (collective: every
    rank must call it; the reversed graph's own reverse is ``graph``)."""
    def build() -> DistGraph:
        rev = _build(graph)
        rev.cached(_CACHE_KEY, lambda: graph)
        # The edge tensors a user holds are in the original's stored order on the
        # destinations' ranks: none describes the reversed edges (checked by propagate).
        rev.edge_data_refused = ("edge tensors cannot be passed over a reversed DistGraph "
                                 "(edge_index.flip([0])): the reversed edges are stored on "
                                 "their sources' ranks, where the original's edge tensors "
                                 "do not line up with them")
        return rev
    return graph.cached(_CACHE_KEY, build)


def _csr_block(src_rank: int, num_dst: int, dst: Tensor, col: Tensor, num_src: int,
               edge_start: int, src_in_degree: Tensor) -> Block:
    """A block from unordered edges: CSR by destination, each row ordered by source."""
    order = torch.argsort(dst * max(num_src, 1) + col, stable=True)
    rowptr = torch.zeros(num_dst + 1, dtype=torch.long, device=dst.device)
    rowptr[1:] = torch.cumsum(torch.bincount(dst, minlength=num_dst), 0)
    return Block(src_rank, rowptr, col[order].contiguous(), num_src, edge_start, src_in_degree)


def _build(graph: DistGraph) -> DistGraph:
    world, rank, n = graph.world_size, graph.rank, graph.num_nodes
    device = graph.device
    local = graph.blocks[rank]
    # Reversed in-edges of this rank's nodes by source rank: (local destination, source id on
    # the source rank).
    dst_of: list[Tensor] = [torch.empty(0, dtype=torch.long, device=device)] * world
    src_of: list[Tensor] = [torch.empty(0, dtype=torch.long, device=device)] * world
    dst_of[rank], src_of[rank] = local.col, local.row
    send_idx = [torch.empty(0, dtype=torch.long, device=device) for _ in range(world)]
    context = None
    if world > 1:
        context = graph.context
        received = _exchange_cut_edges(graph)
        for s in range(world):
            if s == rank:
                continue
            rows_on_s, position = received[s]
            dst_of[s] = graph.send_idx[s].index_select(0, position)
            src_of[s] = rows_on_s
            # s reads these rows of ours; it orders them ascending, as torch.unique does here.
            send_idx[s] = torch.unique(graph.blocks[s].row, sorted=True)

    in_degree = torch.zeros(n, dtype=torch.long, device=device)
    for d in dst_of:
        in_degree += torch.bincount(d, minlength=n)

    cols, num_src, src_rows = [], [], []
    for s in range(world):
        if s == rank:
            cols.append(src_of[s])
            num_src.append(n)
            src_rows.append(None)
        else:
            rows, col = torch.unique(src_of[s], sorted=True, return_inverse=True)
            cols.append(col.view(-1))
            num_src.append(int(rows.numel()))
            src_rows.append(rows)
    src_in_degree = _source_degrees(graph, in_degree, send_idx, num_src) if world > 1 else {}
    src_in_degree[rank] = in_degree

    blocks, start = [], 0
    for s in range(world):
        block = _csr_block(s, n, dst_of[s], cols[s], num_src[s], start, src_in_degree[s])
        blocks.append(block)
        start += block.num_edges
    return DistGraph(rank, world, graph.node_offsets, blocks, send_idx, in_degree,
                     context=context, node_ids=graph.node_ids)


def _exchange_cut_edges(graph: DistGraph) -> dict[int, tuple[Tensor, Tensor]]:
    """Send every remote block's edges to the block's source rank; return, by sending rank,
    (its local destination, position in our send list to it) for each of its edges."""
    world, rank = graph.world_size, graph.rank
    comm = graph.context.comm
    device = graph.device
    send_counts = [0 if s == rank else graph.blocks[s].num_edges for s in range(world)]
    counts = torch.tensor(send_counts, dtype=torch.long, device=device)
    recv_counts_t = torch.empty_like(counts)
    ones = [1] * world
    comm.all_to_all_single(recv_counts_t, counts, ones, ones)
    recv_counts = [int(c) for c in recv_counts_t.tolist()]
    if recv_counts[rank] != 0:
        raise RuntimeError(f"reversed_graph: rank {rank} was sent {recv_counts[rank]} edges by "
                           f"itself")
    pairs = [torch.stack([graph.blocks[s].row, graph.blocks[s].col], dim=1)
             for s in range(world) if s != rank]
    send = (torch.cat(pairs) if pairs else torch.empty(0, 2, dtype=torch.long, device=device))
    recv = torch.empty(sum(recv_counts), 2, dtype=torch.long, device=device)
    comm.all_to_all_single(recv, send.contiguous(), recv_counts, send_counts)
    out, at = {}, 0
    for s in range(world):
        if s == rank:
            continue
        part = recv[at:at + recv_counts[s]]
        at += recv_counts[s]
        position = part[:, 1]
        if position.numel() and int(position.max()) >= graph.send_idx[s].numel():
            raise RuntimeError(f"reversed_graph: rank {s} names row {int(position.max())} of "
                               f"rank {rank}'s send list to it, which has "
                               f"{graph.send_idx[s].numel()} rows (partition files disagree)")
        out[s] = (part[:, 0].contiguous(), position.contiguous())
    return out


def _source_degrees(graph: DistGraph, in_degree: Tensor, send_idx: list[Tensor],
                    num_src: list[int]) -> dict[int, Tensor]:
    """Reversed in-degree of every reversed source row, from its owner (one exchange)."""
    world, rank = graph.world_size, graph.rank
    send_counts = [int(i.numel()) for i in send_idx]
    recv_counts = [0 if s == rank else num_src[s] for s in range(world)]
    send = in_degree.index_select(0, torch.cat(send_idx)).contiguous()
    recv = in_degree.new_empty(sum(recv_counts))
    graph.context.comm.all_to_all_single(recv, send, recv_counts, send_counts)
    out, at = {}, 0
    for s in range(world):
        if s != rank:
            out[s] = recv[at:at + recv_counts[s]]
            at += recv_counts[s]
    return out
