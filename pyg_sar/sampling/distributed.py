r"""Bulk sampling over the ranks of a partition (the on-disk partitions of full-batch training).

Rank ``r`` owns a contiguous range of renumbered nodes and every in-edge of them, i.e. a block
of rows of the adjacency ``A`` (a 1D row partition). The rows of ``Q @ A`` are computed where
they live: :class:`DistRows` sends each frontier row (original id, random key, minibatch) to a
rank holding it, which runs the same kernels as one process
(:class:`~pyg_sar.sampling.rows.LocalRows`) and sends back the picks, LADIES' partial sums of
``Q @ (A * A)`` (added up by the requester) or the extracted edges. With ``replication=2``
(the 1.5D layout) each pair of ranks ``(2g, 2g + 1)`` holds the rows of both its parts, and a
rank sends its requests only to the replicas of its own parity: ``P / 2`` peers, and the rows
of its pair stay local. With ``replicate_graph=True`` every rank holds the whole structure and
sampling needs no communication.

Node features and labels of a bulk are fetched from their owners with one all-to-all.
Communication goes through the rank's communicator (``ctx.comm``); every rank makes the same
sequence of collective calls (the loader pads the last bulk of ranks with fewer minibatches).

Picks are keyed by original ids, so they equal single-process sampling. One caveat for LADIES:
the requester adds the owners' partial sums, so a weight may differ from the single-process
sum in its last bit; a dart falling within that ~1e-16 relative margin of an interval boundary
would then pick a neighbouring candidate (never observed in the tests).
"""
from __future__ import annotations

from typing import Optional

import torch
from torch import Tensor

from pyg_sar.ops.sampling_reference import _arange_segments, _ptr
from pyg_sar.sampling.buffers import BufferRing
from pyg_sar.sampling.bulk import BulkSample
from pyg_sar.sampling.graph import SamplingGraph
from pyg_sar.sampling.rows import LocalRows


def _exchange(comm, payload: Tensor, counts: Tensor) -> tuple[Tensor, Tensor]:
    """All-to-all of rows: ``payload`` grouped by destination with ``counts[q]`` rows for rank
    ``q``. Returns the received rows (grouped by source rank) and their per-rank counts."""
    recv_counts = torch.empty_like(counts)
    comm.all_to_all_single(recv_counts, counts.contiguous())
    out = payload.new_empty((int(recv_counts.sum()), *payload.shape[1:]))
    comm.all_to_all_single(out, payload.contiguous(), recv_counts.tolist(), counts.tolist())
    return out, recv_counts


def _columns(table: Tensor, start: int, stop: int, dtype: torch.dtype, shape) -> Tensor:
    """Byte columns ``start:stop`` of ``table`` (uint8 rows) as rows of ``dtype`` and
    ``shape``: a view where the row stride and offset allow it, else a copy."""
    part = table[:, start:stop]
    try:
        return part.view(dtype).view(-1, *shape)
    except RuntimeError:
        return part.contiguous().view(dtype).view(-1, *shape)


def _by_destination(dest: Tensor, world_size: int) -> tuple[Tensor, Tensor]:
    """Stable order grouping items by destination rank, and the per-rank counts."""
    order = torch.sort(dest, stable=True).indices
    return order, torch.bincount(dest, minlength=world_size)


def _unpermute_segments(ptr_sorted: Tensor, order: Tensor, *values: Tensor
                        ) -> tuple[Tensor, ...]:
    """Rows answered in ``order`` (segments ``ptr_sorted``) back in the original row order:
    returns ``(ptr, *values)``."""
    counts_sorted = ptr_sorted.diff()
    counts = torch.empty_like(counts_sorted)
    counts[order] = counts_sorted
    ptr = _ptr(counts)
    # the segment of sorted row j moves to ptr[order[j]]
    dest = torch.repeat_interleave(ptr[:-1][order], counts_sorted) + _arange_segments(
        counts_sorted)
    outs = []
    for v in values:
        o = torch.empty_like(v)
        o[dest] = v
        outs.append(o)
    return (ptr, *outs)


class DistRows:
    """The rows of ``Q @ A`` computed on the ranks that hold them (1D or 1.5D).

    Args:
        comm: the rank's communicator.
        local: this rank's rows (its own part, plus its pair's with ``replication=2``).
        row_index: ``[N]`` position in ``local`` of every original id it holds (-1 elsewhere).
        owner: ``[N]`` the rank owning each original id.
        replication: 1 (1D) or 2 (1.5D).
    """

    def __init__(self, comm, local: LocalRows, owner: Tensor, replication: int = 1) -> None:
        self.comm = comm
        self.local = local
        self.owner = owner
        self.replication = replication
        self.num_nodes = local.num_nodes
        self.rank, self.world_size = comm.rank, comm.world_size

    def _server(self, rows: Tensor) -> Tensor:
        owner = self.owner[rows]
        if self.replication == 1:
            return owner
        return owner - owner % 2 + self.rank % 2

    def _ask(self, rows: Tensor, columns: list[Tensor]) -> tuple[Tensor, Tensor, Tensor, Tensor]:
        """Sends ``[rows, *columns]`` to the serving ranks. Returns (order, send counts,
        received payload [n, 1 + len(columns)], received counts)."""
        order, counts = _by_destination(self._server(rows), self.world_size)
        payload = torch.stack([rows[order], *[c[order] for c in columns]], dim=1)
        got, got_counts = _exchange(self.comm, payload, counts)
        return order, counts, got, got_counts

    def _answer_edges(self, got_counts: Tensor, ptr: Tensor, cols: Tensor, eids: Tensor,
                      order: Tensor, send_counts: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        """Returns per-row edge lists to the requesters and restores the original order."""
        row_counts = ptr.diff()
        back_counts, _ = _exchange(self.comm, row_counts.view(-1, 1), got_counts)
        per_rank = torch.zeros(self.world_size, dtype=torch.int64)
        src_of_row = torch.repeat_interleave(torch.arange(self.world_size), got_counts)
        per_rank.index_add_(0, src_of_row, row_counts)
        edges, _ = _exchange(self.comm, torch.stack([cols, eids], dim=1), per_rank)
        assert back_counts.numel() == send_counts.sum()
        ptr_sorted = _ptr(back_counts.view(-1))
        ptr, cols_out, eids_out = _unpermute_segments(ptr_sorted, order, edges[:, 0].contiguous(),
                                                      edges[:, 1].contiguous())
        return ptr, cols_out, eids_out

    def uniform(self, rows: Tensor, row_keys: Tensor, fanout: int
                ) -> tuple[Tensor, Tensor, Tensor]:
        order, counts, got, got_counts = self._ask(rows, [row_keys])
        ptr, cols, eids = self.local.uniform(got[:, 0], got[:, 1].contiguous(), fanout)
        return self._answer_edges(got_counts, ptr, cols, eids, order, counts)

    def ladies(self, rows: Tensor, batch_ptr: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        k = batch_ptr.numel() - 1
        row_batch = torch.repeat_interleave(torch.arange(k), batch_ptr.diff())
        order, counts, got, got_counts = self._ask(rows, [row_batch])
        k_max = int(self._max(k))
        # one Q @ (A * A) for every (requester, minibatch) pair: batch id src * k_max + b
        src = torch.repeat_interleave(torch.arange(self.world_size), got_counts)
        group = src * k_max + got[:, 1]
        g_order = torch.sort(group, stable=True).indices
        g_ptr = _ptr(torch.bincount(group, minlength=self.world_size * k_max))
        ptr, cand, weight = self.local.ladies(got[g_order, 0].contiguous(), g_ptr)
        # send each requester its minibatches' partial rows: (batch, cand, weight bits)
        part_counts = ptr.diff().view(self.world_size, k_max).sum(1)
        part_batch = torch.repeat_interleave(torch.arange(self.world_size * k_max) % k_max,
                                             ptr.diff())
        payload = torch.stack([part_batch, cand, weight.view(torch.int64)], dim=1)
        parts, _ = _exchange(self.comm, payload, part_counts)
        # add the owners' partial sums (in rank order) per (minibatch, candidate)
        key = parts[:, 0] * self.num_nodes + parts[:, 1]
        uniq, inverse = torch.unique(key, sorted=True, return_inverse=True)
        total = torch.zeros(uniq.numel(), dtype=torch.float64)
        total.index_add_(0, inverse, parts[:, 2].contiguous().view(torch.float64))
        batch = torch.div(uniq, self.num_nodes, rounding_mode="floor")
        return _ptr(torch.bincount(batch, minlength=k)), uniq - batch * self.num_nodes, total

    def extract(self, rows: Tensor, row_batch: Tensor, keep_ptr: Tensor, keep_cols: Tensor
                ) -> tuple[Tensor, Tensor, Tensor]:
        k = keep_ptr.numel() - 1
        k_max = int(self._max(k))
        order, counts, got, got_counts = self._ask(rows, [row_batch])
        # every rank's kept columns, minibatch ids offset by rank * k_max
        keep_batch = torch.repeat_interleave(torch.arange(k), keep_ptr.diff())
        mine = torch.stack([keep_batch + self.rank * k_max, keep_cols], dim=1)
        sizes = torch.full((self.world_size,), mine.size(0), dtype=torch.int64)
        all_keep, _ = _exchange(self.comm, mine.repeat(self.world_size, 1), sizes)
        keep_order = torch.sort(all_keep[:, 0], stable=True).indices  # columns stay ascending
        all_ptr = _ptr(torch.bincount(all_keep[:, 0], minlength=self.world_size * k_max))
        src = torch.repeat_interleave(torch.arange(self.world_size), got_counts)
        ptr, cols, eids = self.local.extract(got[:, 0].contiguous(), src * k_max + got[:, 1],
                                             all_ptr, all_keep[keep_order, 1].contiguous())
        return self._answer_edges(got_counts, ptr, cols, eids, order, counts)

    def _max(self, value: int) -> int:
        t = torch.tensor([value], dtype=torch.int64)
        self.comm.all_reduce(t, op="max")
        return max(int(t), 1)


def _local_rows_of(parts: list, num_nodes: int, backend: str) -> tuple[LocalRows, Tensor]:
    """LocalRows over the rows of ``parts`` (one rank's part, or a pair's two)."""
    graphs = [SamplingGraph.from_partition(p) for p in parts]
    if len(graphs) == 1:
        g = graphs[0]
    else:
        rowptr = [graphs[0].rowptr]
        for other in graphs[1:]:
            rowptr.append(other.rowptr[1:] + rowptr[-1][-1])
        g = SamplingGraph(torch.cat(rowptr), torch.cat([x.col for x in graphs]),
                          torch.cat([x.e_id for x in graphs]), num_nodes,
                          row_ids=torch.cat([x.row_ids for x in graphs]))
    row_index = torch.full((num_nodes,), -1, dtype=torch.int64)
    row_index[g.row_ids] = torch.arange(g.num_rows)
    return LocalRows(g, backend, row_index=row_index), row_index


class DistributedSource:
    """What :class:`~pyg_sar.sampling.BulkNeighborLoader` needs from a partition: the global
    seed list, a row source, and the features of a bulk (one all-to-all)."""

    def __init__(self, part, input_nodes, backend: str, context=None,
                 replicate_graph: bool = False, replication: int = 1) -> None:
        from pyg_sar.distributed.context import resolve_context
        from pyg_sar.partition import load_node_map, load_partition
        ctx = resolve_context(context)
        if ctx.world_size != part.num_parts or ctx.rank != part.rank:
            raise ValueError(f"BulkNeighborLoader: partition part {part.rank} of "
                             f"{part.num_parts} loaded on rank {ctx.rank} of {ctx.world_size}")
        if replication not in (1, 2):
            raise ValueError(f"BulkNeighborLoader: replication must be 1 (1D) or 2 (1.5D) "
                             f"(got {replication})")
        if replication == 2 and ctx.world_size % 2:
            raise ValueError(f"BulkNeighborLoader: replication=2 needs an even world size "
                             f"(got {ctx.world_size})")
        if getattr(part, "path", None) is None:
            # A part from pyg_sar.distribute lives in memory only; the loader reads the node
            # map (and, for 1.5D or a replicated graph, other parts) from the folder.
            raise ValueError("BulkNeighborLoader: the partition has no folder (it came from "
                             "pyg_sar.distribute); write it with pyg_sar.partition_graph(data, "
                             "num_parts, out_dir) and load it with pyg_sar.load_partition")
        self.comm = ctx.comm
        self.rank, self.world_size = ctx.rank, ctx.world_size
        self.part = part
        n = part.graph.num_global_nodes
        self.num_nodes = n
        new_id = load_node_map(part.path)
        offsets = torch.tensor(part.graph.node_offsets)
        self.owner = torch.searchsorted(offsets, new_id, right=True) - 1
        self.local_index = new_id - offsets[self.owner]  # row of each node on its owner
        self.seeds = self._global_seeds(input_nodes)
        if replicate_graph:
            self.rows = LocalRows(SamplingGraph.from_partition_folder(part.path), backend)
        else:
            parts = [part]
            if replication == 2:
                partner = self.rank ^ 1
                parts.append(load_partition(part.path, partner, world_size=self.world_size))
            local, _ = _local_rows_of(parts, n, backend)
            self.rows = DistRows(self.comm, local, self.owner, replication)
        self.x, self.y = part.x, part.y
        self.buffers = BufferRing()

    def _global_seeds(self, input_nodes) -> Tensor:
        n = self.num_nodes
        if input_nodes is None:
            return torch.arange(n)
        t = input_nodes if torch.is_tensor(input_nodes) else torch.as_tensor(input_nodes)
        if t.dtype == torch.bool:
            if t.numel() != self.part.num_nodes:
                raise ValueError(f"BulkNeighborLoader: input_nodes mask has {t.numel()} "
                                 f"entries, rank {self.rank} owns {self.part.num_nodes} nodes")
            mask = torch.zeros(n, dtype=torch.uint8)
            mask[self.part.node_ids[t]] = 1
            self.comm.all_reduce(mask, op="max")
            return mask.nonzero().view(-1)
        ids = t.to(torch.int64).view(-1)
        if ids.numel() and (int(ids.min()) < 0 or int(ids.max()) >= n):
            raise ValueError(f"BulkNeighborLoader: input_nodes must lie in [0, {n}) (got min "
                             f"{int(ids.min())}, max {int(ids.max())})")
        return ids

    def fetch(self, sample: BulkSample) -> tuple[Tensor, Tensor, Optional[Tensor]]:
        """Features and labels of every node of the bulk, from their owners in one
        all-to-all. Returns ``(index, x, y)``: minibatch node ``i`` has row ``index[i]``."""
        uniq, inverse = torch.unique(sample.n_id, return_inverse=True)
        order, counts = _by_destination(self.owner[uniq], self.world_size)
        asked, asked_counts = _exchange(self.comm, self.local_index[uniq[order]].view(-1, 1),
                                        counts)
        rows = asked.view(-1)
        x = self.x
        # one message: feature bytes and label bytes side by side in each row
        cols = [x[rows].reshape(rows.numel(), -1).contiguous().view(torch.uint8)]
        if self.y is not None:
            cols.append(self.y[rows].reshape(rows.numel(), -1).contiguous().view(torch.uint8))
        packed = torch.cat(cols, dim=1) if len(cols) > 1 else cols[0]
        got, _ = _exchange(self.comm, packed, asked_counts)
        # received row j holds unique node order[j]: index into it directly rather than
        # scattering a copy of the whole table back into unique order
        position = torch.empty_like(order)
        position[order] = torch.arange(order.numel())
        xb = x[0].numel() * x.element_size() if x.numel() else 0
        table_x = _columns(got, 0, xb, x.dtype, x.shape[1:])
        table_y = None
        if self.y is not None:
            table_y = _columns(got, xb, got.shape[1], self.y.dtype, self.y.shape[1:])
        return position[inverse], table_x, table_y

    def fields(self, sample: BulkSample, b: int, fetched) -> dict:
        index_all, table_x, table_y = fetched
        n0, n1 = int(sample.node_ptr[b]), int(sample.node_ptr[b + 1])
        index = index_all[n0:n1]
        # reused buffers, as the single-process source: fresh ones cost page faults
        out = {"x": self.buffers.gather("x", table_x, index)}
        if table_y is not None:
            out["y"] = self.buffers.gather("y", table_y, index)
        return out
