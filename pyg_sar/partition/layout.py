"""From a node-to-part assignment to the per-rank layout of ``pyg_sar.graph``.

Nodes are renumbered by part (stable: within a part, original order), so rank ``r`` owns new ids
``[node_offsets[r], node_offsets[r + 1])``. Each edge ``(j, i)`` goes to the rank owning ``i``.
The stored edges are sorted by (destination rank, source rank, destination, source): per rank,
blocks concatenated by source rank, each sorted by (destination, source). Recv lists are the
distinct source ids of a block in ascending order, which is also the order of the column index,
so "sorted by source" and "sorted by column" agree.

**Heterogeneous graphs** (``HeteroData``).
Per node type numbering and per edge type block layout of a partitioned heterogeneous graph.

Every node type is renumbered by part (stable: within a part, original order), so rank ``r``
owns the new ids ``[offsets_t[r], offsets_t[r + 1])`` of type ``t``; its local ids of type
``t`` are ``new id - offsets_t[r]``. Every edge of an edge type ``(s, rel, d)`` is stored on the
rank owning its destination, in the block layout of :class:`pyg_sar.graph.DistGraph`: CSR by
local destination (type ``d``); the local block's columns are local ids of type ``s``; block
``(r, q)``'s columns are positions in the recv list from ``q``, the distinct new ids (type
``s``) of its sources in ascending order, which is also the order of ``q``'s ``send_idx[r]``
(local ids of type ``s`` on ``q``). Stored edges are sorted by (source rank, destination,
source), stably, exactly as :class:`pyg_sar.partition.layout.Layout` sorts a homogeneous
graph's.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass
class RankArrays:
    """Everything rank ``r`` stores about its graph structure (all ``int64``)."""

    node_ids: np.ndarray        # [n_r] original ids of the local nodes, local order
    in_degree: np.ndarray       # [n_r] global in-degree of the local nodes
    rowptr: np.ndarray          # [P, n_r + 1] CSR row pointer of every block (edges from 0)
    col: np.ndarray             # [E_r] column of every stored edge (see pyg_sar.graph.Block)
    edge_perm: np.ndarray       # [E_r] input position of every stored edge
    recv_node_ids: np.ndarray   # [sum recv] original ids of received rows, by source rank
    recv_in_degree: np.ndarray  # [sum recv] global in-degree of the received rows
    send_idx: np.ndarray        # [sum send] local ids sent to every rank, by target rank
    block_num_edges: list[int]
    recv_counts: list[int]      # 0 for the local block
    send_counts: list[int]      # 0 for this rank itself


class Layout:
    """The renumbering and block structure of a partitioned graph.

    Args:
        edge_index: ``int64 [2, E]`` validated edges (``edge_index[1]`` is the destination).
        parts: ``int64 [N]`` part id of every node.
        num_parts: number of parts ``P``.
    """

    def __init__(self, edge_index: np.ndarray, parts: np.ndarray, num_parts: int) -> None:
        num_nodes = int(parts.shape[0])
        self.num_parts = num_parts
        self.num_nodes = num_nodes
        self.num_edges = int(edge_index.shape[1])

        counts = np.bincount(parts, minlength=num_parts)
        self.node_offsets = np.zeros(num_parts + 1, dtype=np.int64)
        np.cumsum(counts, out=self.node_offsets[1:])
        self.perm = np.argsort(parts, kind="stable")  # new id -> original id
        self.new_of_old = np.empty(num_nodes, dtype=np.int64)
        self.new_of_old[self.perm] = np.arange(num_nodes, dtype=np.int64)

        src = self.new_of_old[edge_index[0]]
        dst = self.new_of_old[edge_index[1]]
        self.in_degree = np.bincount(dst, minlength=num_nodes).astype(np.int64, copy=False)

        # Ranks per edge in the smallest type that holds them (2 bytes per edge for P < 2**15).
        small = parts.astype(np.int16 if num_parts < 2 ** 15 else np.int64)
        dst_rank = small[edge_index[1]]
        src_rank = small[edge_index[0]]
        del small
        self.order = stored_order(src, dst, dst_rank, src_rank, num_nodes, num_parts)
        self.src = src[self.order]
        del src
        self.dst = dst[self.order]
        del dst
        # Block (r, s) = edges with destination in r and source in s: sizes and offsets.
        self.block_counts = np.bincount(dst_rank.astype(np.int64) * num_parts + src_rank,
                                        minlength=num_parts * num_parts
                                        ).reshape(num_parts, num_parts).astype(np.int64)
        del dst_rank, src_rank
        self.block_offsets = np.zeros(num_parts * num_parts + 1, dtype=np.int64)
        np.cumsum(self.block_counts.reshape(-1), out=self.block_offsets[1:])

        # recv[r][s]: distinct new ids of s's nodes that r needs (ascending); empty for s == r.
        self.recv: list[list[np.ndarray]] = [
            block_recv(self.src, self.block_offsets[r * num_parts:(r + 1) * num_parts + 1], r)
            for r in range(num_parts)]

    def _block_slice(self, r: int, s: int) -> slice:
        k = r * self.num_parts + s
        return slice(int(self.block_offsets[k]), int(self.block_offsets[k + 1]))

    def rank_edge_slice(self, r: int) -> slice:
        """Positions of rank ``r``'s stored edges in :attr:`order`."""
        return slice(int(self.block_offsets[r * self.num_parts]),
                     int(self.block_offsets[(r + 1) * self.num_parts]))

    @property
    def edge_cut(self) -> int:
        """Number of edges whose source and destination lie on different ranks."""
        return int(self.block_counts.sum() - np.trace(self.block_counts))

    def rank_arrays(self, r: int) -> RankArrays:
        """The structure rank ``r`` stores (built on demand, one rank at a time)."""
        num_parts = self.num_parts
        lo, hi = int(self.node_offsets[r]), int(self.node_offsets[r + 1])
        sl = self.rank_edge_slice(r)
        rowptr, col = block_structure(
            self.src[sl], self.dst[sl],
            self.block_offsets[r * num_parts:(r + 1) * num_parts + 1] - sl.start,
            self.recv[r], r, lo, hi)
        recv = [self.recv[r][s] for s in range(num_parts)]
        recv_all = np.concatenate(recv)
        send = [self.recv[q][r] - lo for q in range(num_parts)]
        return RankArrays(
            node_ids=self.perm[lo:hi],
            in_degree=self.in_degree[lo:hi],
            rowptr=rowptr,
            col=col,
            edge_perm=self.order[self.rank_edge_slice(r)],
            recv_node_ids=self.perm[recv_all],
            recv_in_degree=self.in_degree[recv_all],
            send_idx=np.concatenate(send),
            block_num_edges=[int(c) for c in self.block_counts[r]],
            recv_counts=[int(x.size) for x in recv],
            send_counts=[int(x.size) for x in send],
        )


def stored_order(src: np.ndarray, dst: np.ndarray, dst_rank: np.ndarray, src_rank: np.ndarray,
                 num_nodes: int, num_parts: int) -> np.ndarray:
    """The stored order of edges given in input order: by (destination rank, source rank,
    destination, source), ties kept in input order.

    ``src`` / ``dst`` are new ids, ``dst_rank`` / ``src_rank`` the ranks owning them, all in
    input order. Applied to one rank's edges (still in input order) it gives that rank's slice
    of the order of all edges, which is how the streaming writer uses it.
    """
    if num_nodes <= 3_000_000_000:  # (dst * N + src) fits in int64
        key = dst * num_nodes
        key += src
        order = np.argsort(key, kind="stable")
        del key
    else:  # pragma: no cover - graphs beyond 3e9 nodes
        order = np.lexsort((src, dst))
    # Then group by (destination rank, source rank), stably. Destination rank is implied by
    # the destination order already, but the source rank is not. Small keys use radix sort.
    group_dtype = np.int16 if num_parts * num_parts < 2 ** 15 else np.int64
    group = dst_rank[order].astype(group_dtype)
    group *= num_parts
    group += src_rank[order].astype(group_dtype)
    return order[np.argsort(group, kind="stable")]


def block_recv(src: np.ndarray, offsets: np.ndarray, r: int) -> list[np.ndarray]:
    """``recv[s]``: the distinct sources (new ids, ascending) of rank ``r``'s block from
    rank ``s``, given rank ``r``'s stored sources ``src`` and the ``P + 1`` offsets of its
    blocks in them; empty for ``s == r``."""
    return [np.zeros(0, dtype=np.int64) if s == r else
            np.unique(src[int(offsets[s]):int(offsets[s + 1])])
            for s in range(len(offsets) - 1)]


def block_structure(src: np.ndarray, dst: np.ndarray, offsets: np.ndarray,
                    recv: list[np.ndarray], r: int, lo: int, hi: int
                    ) -> tuple[np.ndarray, np.ndarray]:
    """``(rowptr [P, n_r + 1], col [E_r])`` of rank ``r`` (owning new ids ``[lo, hi)``) from
    its stored edges ``src`` / ``dst`` (new ids, stored order), the ``P + 1`` offsets of its
    blocks and its recv lists."""
    num_parts = len(offsets) - 1
    n_r = hi - lo
    rowptr = np.zeros((num_parts, n_r + 1), dtype=np.int64)
    cols = []
    for s in range(num_parts):
        a, b = int(offsets[s]), int(offsets[s + 1])
        np.cumsum(np.bincount(dst[a:b] - lo, minlength=n_r), out=rowptr[s, 1:])
        cols.append(src[a:b] - lo if s == r else np.searchsorted(recv[s], src[a:b]))
    return rowptr, (np.concatenate(cols) if cols else np.zeros(0, dtype=np.int64))


# ------------------------------------------------------------ heterogeneous graphs (HeteroData)
class TypeNumbering:
    """The renumbering of one node type: ``parts`` -> contiguous per-rank new-id ranges."""

    def __init__(self, parts: np.ndarray, num_parts: int) -> None:
        self.parts = parts
        self.num_nodes = int(parts.size)
        self.offsets = np.zeros(num_parts + 1, dtype=np.int64)
        np.cumsum(np.bincount(parts, minlength=num_parts), out=self.offsets[1:])
        self.perm = np.argsort(parts, kind="stable")  # new id -> original id
        self.new_of_old = np.empty(self.num_nodes, dtype=np.int64)
        self.new_of_old[self.perm] = np.arange(self.num_nodes, dtype=np.int64)

    def node_ids(self, rank: int) -> np.ndarray:
        """Original ids of rank ``rank``'s nodes of this type, local order."""
        return self.perm[self.offsets[rank]:self.offsets[rank + 1]]


@dataclass
class EdgeRankArrays:
    """What rank ``r`` stores about one edge type (all ``int64``)."""

    in_degree: np.ndarray             # [n_r dst] in-degree within this edge type
    rowptr: np.ndarray                # [P, n_r dst + 1]
    col: np.ndarray                   # [E_r]
    edge_ids: np.ndarray              # [E_r] input position within the edge type
    recv_node_ids: np.ndarray         # [sum recv] original ids (source type), by source rank
    recv_in_degree: np.ndarray        # [sum recv] their in-degree within this edge type
    recv_total_in_degree: np.ndarray  # [sum recv] their in-degree over all edge types
    send_idx: np.ndarray              # [sum send] local ids (source type), by target rank
    block_num_edges: list[int]
    recv_counts: list[int]
    send_counts: list[int]


class EdgeTypeLayout:
    """Block structure of one edge type (see the module docstring).

    Args:
        edge_index: ``int64 [2, E]`` validated edges (row 0 source ids, row 1 destination ids).
        src: numbering of the source type; ``dst``: of the destination type.
        src_total_in_degree: ``int64 [N_src]`` in-degree of every source-type node over all
            edge types (homogeneous view), indexed by new id.
    """

    def __init__(self, edge_index: np.ndarray, src: TypeNumbering, dst: TypeNumbering,
                 num_parts: int, src_total_in_degree: np.ndarray) -> None:
        self.src_num, self.dst_num, self.num_parts = src, dst, num_parts
        self.num_edges = int(edge_index.shape[1])
        src_new = src.new_of_old[edge_index[0]]
        dst_new = dst.new_of_old[edge_index[1]]
        src_rank = src.parts[edge_index[0]]
        dst_rank = dst.parts[edge_index[1]]
        self.in_degree = np.bincount(dst_new, minlength=dst.num_nodes).astype(np.int64)
        self.src_total_in_degree = src_total_in_degree
        self.order = np.lexsort((src_new, dst_new, src_rank, dst_rank))
        self.src, self.dst = src_new[self.order], dst_new[self.order]
        self.block_counts = np.bincount(dst_rank * num_parts + src_rank,
                                        minlength=num_parts * num_parts
                                        ).reshape(num_parts, num_parts).astype(np.int64)
        self.block_offsets = np.zeros(num_parts * num_parts + 1, dtype=np.int64)
        np.cumsum(self.block_counts.reshape(-1), out=self.block_offsets[1:])
        self.recv = [[np.zeros(0, dtype=np.int64) if q == r else
                      np.unique(self.src[self._block(r, q)]) for q in range(num_parts)]
                     for r in range(num_parts)]

    def _block(self, r: int, q: int) -> slice:
        k = r * self.num_parts + q
        return slice(int(self.block_offsets[k]), int(self.block_offsets[k + 1]))

    @property
    def edge_cut(self) -> int:
        """Edges whose source and destination lie on different ranks."""
        return int(self.block_counts.sum() - np.trace(self.block_counts))

    def in_degree_of_src(self) -> np.ndarray:
        """In-degree within this edge type of every source-type node (new ids): the edge
        type's in-degree if its source and destination types are the same, else zeros."""
        if self.src_num is self.dst_num:
            return self.in_degree
        return np.zeros(self.src_num.num_nodes, dtype=np.int64)

    def rank_arrays(self, r: int) -> EdgeRankArrays:
        """The arrays rank ``r`` stores for this edge type."""
        P = self.num_parts
        lo, hi = int(self.dst_num.offsets[r]), int(self.dst_num.offsets[r + 1])
        src_lo = int(self.src_num.offsets[r])
        n_r = hi - lo
        rowptr = np.zeros((P, n_r + 1), dtype=np.int64)
        cols = []
        for q in range(P):
            sl = self._block(r, q)
            np.cumsum(np.bincount(self.dst[sl] - lo, minlength=n_r), out=rowptr[q, 1:])
            cols.append(self.src[sl] - src_lo if q == r else
                        np.searchsorted(self.recv[r][q], self.src[sl]))
        recv = self.recv[r]
        recv_all = np.concatenate(recv)
        send = [self.recv[q][r] - src_lo for q in range(P)]
        start, end = int(self.block_offsets[r * P]), int(self.block_offsets[(r + 1) * P])
        return EdgeRankArrays(
            in_degree=self.in_degree[lo:hi],
            rowptr=rowptr,
            col=np.concatenate(cols),
            edge_ids=self.order[start:end],
            recv_node_ids=self.src_num.perm[recv_all],
            recv_in_degree=self.in_degree_of_src()[recv_all],
            recv_total_in_degree=self.src_total_in_degree[recv_all],
            send_idx=np.concatenate(send),
            block_num_edges=[int(c) for c in self.block_counts[r]],
            recv_counts=[int(x.size) for x in recv],
            send_counts=[int(x.size) for x in send],
        )
