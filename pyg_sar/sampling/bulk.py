r"""Bulk sampling: ``k`` minibatches per call, every hop as sparse-matrix steps over all of them.

Hop ``h`` of all ``k`` minibatches at once (the frontier of a minibatch is the set of nodes it
gained at hop ``h - 1``; the seeds for ``h = 1``):

* **GraphSAGE** (node-wise): ``Q`` stacks one row per frontier vertex of every minibatch;
  ``P = Q @ A`` with uniform row-normalised values; ``fanout[h]`` distinct picks per row by
  dart throwing (:func:`pyg_sar.ops.sampling.sample_uniform`).
* **LADIES** (layer-wise): ``Q`` has one row per minibatch (a one per frontier vertex); ``P = Q
  @ (A * A)`` sums the squared row-normalised values; ``layer_sizes[h]`` distinct nodes per
  minibatch by dart throwing on the prefix sums (:func:`~pyg_sar.ops.sampling.sample_weighted`);
  then the edges from the sampled nodes into the frontier of every minibatch are extracted in
  one pass with per-minibatch column offsets (:func:`~pyg_sar.ops.sampling.extract_columns`).

Then every minibatch relabels its picks (:func:`~pyg_sar.ops.sampling.relabel`): nodes it
already holds keep their local id, the others are appended in order of first appearance. The
result has ``NeighborLoader``'s layout: per minibatch, seed nodes first and then the nodes of
each hop; edges hop by hop, grouped by destination in frontier order; ``edge_index[0]`` the
local source (neighbour), ``edge_index[1]`` the local destination.

Random numbers are keyed by ``(minibatch key, hop, node)`` for GraphSAGE rows and
``(minibatch key, hop)`` for LADIES rows, where the minibatch key hashes ``(seed, epoch,
minibatch index)`` (:mod:`pyg_sar.sampling.schedule`).
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch
from torch import Tensor

from pyg_sar.ops import sampling as ops
from pyg_sar.ops.sampling_reference import _arange_segments, _ptr
from pyg_sar.ops.sampling_rng import combine, combine_tensor
from pyg_sar.sampling.rows import RowSource

METHODS = ("sage", "ladies")


@dataclass
class BulkSample:
    """``k`` sampled minibatches, stored minibatch after minibatch.

    Attributes:
        n_id: original ids of every minibatch's nodes (seeds, then hop 1, hop 2, ...).
        node_ptr: ``[k + 1]`` where each minibatch's nodes start in ``n_id``.
        num_sampled_nodes: ``[k, H + 1]`` nodes per hop (seeds first).
        edge_index: ``[2, E]`` local (per-minibatch) source and destination of every edge.
        e_id: ``[E]`` input position of every edge.
        edge_ptr: ``[k + 1]`` where each minibatch's edges start.
        num_sampled_edges: ``[k, H]`` edges per hop.
    """

    n_id: Tensor
    node_ptr: Tensor
    num_sampled_nodes: Tensor
    edge_index: Tensor
    e_id: Tensor
    edge_ptr: Tensor
    num_sampled_edges: Tensor

    def minibatch(self, b: int) -> dict:
        """Minibatch ``b`` as NeighborLoader's fields (``n_id``, ``edge_index``, ``e_id``,
        ``batch_size``, ``num_sampled_nodes``, ``num_sampled_edges``)."""
        n0, n1 = int(self.node_ptr[b]), int(self.node_ptr[b + 1])
        e0, e1 = int(self.edge_ptr[b]), int(self.edge_ptr[b + 1])
        nodes = self.num_sampled_nodes[b].tolist()
        return dict(n_id=self.n_id[n0:n1], edge_index=self.edge_index[:, e0:e1],
                    e_id=self.e_id[e0:e1], batch_size=nodes[0], num_sampled_nodes=nodes,
                    num_sampled_edges=self.num_sampled_edges[b].tolist())


def hop_keys(batch_keys: Sequence[int], hop: int) -> Tensor:
    """``int64 [k]``: the key of every minibatch at ``hop``."""
    return torch.tensor([_signed_combine(key, hop) for key in batch_keys], dtype=torch.int64)


def _signed_combine(key: int, value: int) -> int:
    v = combine(key, value)
    return v - (1 << 64) if v >= 1 << 63 else v


def _minibatch_major(parts: Sequence[Tensor], ptrs: Sequence[Tensor]) -> tuple[Tensor, Tensor,
                                                                               Tensor]:
    """Re-lays hop-major segments (``parts[h][ptrs[h][b]:ptrs[h][b + 1]]``) minibatch by
    minibatch. Returns ``(data, ptr [k + 1], counts [k, H])``; ``data`` may have a leading
    dimension (``[..., n]``)."""
    counts = torch.stack([p.diff() for p in ptrs], dim=1)  # [k, H]
    ptr = _ptr(counts.sum(1))
    within = torch.cumsum(counts, 1) - counts  # offset of hop h inside minibatch b
    lead = parts[0].shape[:-1]
    out = parts[0].new_empty(*lead, int(ptr[-1]))
    for h, (part, p) in enumerate(zip(parts, ptrs)):
        c = p.diff()
        dest = torch.repeat_interleave(ptr[:-1] + within[:, h], c) + _arange_segments(c)
        out[..., dest] = part
    return out, ptr, counts


def sample_bulk(source: RowSource, seeds: Sequence[Tensor], batch_keys: Sequence[int],
                sizes: Sequence[int], method: str = "sage", *,
                backend: str = "auto") -> BulkSample:
    """Samples ``k = len(seeds)`` minibatches at once.

    Args:
        source: where the adjacency rows are read (:class:`~pyg_sar.sampling.rows.LocalRows`
            or the distributed row source).
        seeds: the seed nodes (original ids) of every minibatch.
        batch_keys: one random key per minibatch (:func:`pyg_sar.sampling.schedule.batch_key`).
        sizes: per hop, the fanout (``"sage"``; ``-1`` takes every neighbour) or the number of
            nodes sampled per minibatch (``"ladies"``).
        method: ``"sage"`` or ``"ladies"``.
        backend: operator backend for the relabelling and LADIES' picks (see
            :mod:`pyg_sar.ops.sampling`).
    """
    if method not in METHODS:
        raise ValueError(f"sample_bulk: method must be one of {METHODS} (got {method!r})")
    if len(seeds) != len(batch_keys):
        raise ValueError(f"sample_bulk: {len(seeds)} seed sets but {len(batch_keys)} keys")
    if method == "ladies" and any(s < 0 for s in sizes):
        raise ValueError(f"sample_bulk: LADIES layer sizes must be >= 0 (got {list(sizes)})")
    k = len(seeds)
    n = source.num_nodes
    # Everything lives on the seeds' device (the row source's graph must be there too).
    device = seeds[0].device if k else torch.device("cpu")
    ar = torch.arange(k, device=device)
    hop_nodes = [torch.cat(list(seeds)).to(torch.int64) if k
                 else torch.zeros(0, dtype=torch.int64, device=device)]
    hop_ptr = [_ptr(torch.tensor([s.numel() for s in seeds], dtype=torch.int64, device=device))]
    if hop_nodes[0].numel() and (int(hop_nodes[0].min()) < 0 or int(hop_nodes[0].max()) >= n):
        raise ValueError(f"sample_bulk: seed nodes must lie in [0, {n})")
    # local id of the first frontier node of every minibatch
    held_before = torch.zeros(k, dtype=torch.int64, device=device)
    src_parts, dst_parts, eid_parts, edge_ptrs = [], [], [], []
    for hop, size in enumerate(sizes, start=1):
        frontier, f_ptr = hop_nodes[-1], hop_ptr[-1]
        f_counts = f_ptr.diff()
        row_batch = torch.repeat_interleave(ar, f_counts)
        frontier_local = held_before[row_batch] + _arange_segments(f_counts)
        keys = hop_keys(batch_keys, hop).to(device)
        if method == "sage":
            row_keys = combine_tensor(keys[row_batch], frontier)
            ptr, cols, eids = source.uniform(frontier, row_keys, int(size))
        else:
            cand_ptr, cand, weight = source.ladies(frontier, f_ptr)
            pick_ptr, pos = ops.sample_weighted(cand_ptr, weight, keys, int(size),
                                                backend=backend)
            ptr, cols, eids = source.extract(frontier, row_batch, pick_ptr, cand[pos])
        e_ptr = ptr[f_ptr]
        new, new_ptr, local = ops.relabel(n, hop_nodes, hop_ptr, cols, e_ptr, backend=backend)
        dst = torch.repeat_interleave(frontier_local, ptr.diff())
        src_parts.append(local)
        dst_parts.append(dst)
        eid_parts.append(eids)
        edge_ptrs.append(e_ptr)
        held_before = held_before + f_counts
        hop_nodes.append(new)
        hop_ptr.append(new_ptr)
    n_id, node_ptr, node_counts = _minibatch_major(hop_nodes, hop_ptr)
    if sizes:
        pairs = [torch.stack([s, d]) for s, d in zip(src_parts, dst_parts)]
        edge_index, edge_ptr, edge_counts = _minibatch_major(pairs, edge_ptrs)
        e_id, _, _ = _minibatch_major(eid_parts, edge_ptrs)
    else:
        edge_index = torch.zeros(2, 0, dtype=torch.int64, device=device)
        e_id = torch.zeros(0, dtype=torch.int64, device=device)
        edge_ptr = torch.zeros(k + 1, dtype=torch.int64, device=device)
        edge_counts = torch.zeros(k, 0, dtype=torch.int64, device=device)
    return BulkSample(n_id, node_ptr, node_counts, edge_index, e_id, edge_ptr, edge_counts)
