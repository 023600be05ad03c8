r"""SuperGATConv over a DistGraph, with its self-supervised attention loss.

PyG's ``SuperGATConv`` in training mode scores, besides its output, the attention logits of
positive edges (the graph's edges with self-loops, subsampled by ``edge_sample_ratio``) and of
negative pairs (``neg_edge_index``, or sampled from the whole graph inside ``forward``), and
``get_attention_loss()`` is the binary cross-entropy of those logits. Over a partition:

* the positives are every rank's stored in-edges (self-loops handled as PyG does: removed, then
  one per node added); each edge's source row is fetched from its owner with
  :func:`pyg_sar.gather` (the stored edges' global source ids come from one exchange of the
  ranks' send lists, cached on the graph). ``edge_sample_ratio < 1`` keeps each edge by a
  counter-based draw keyed by (layer, epoch, its two original ids) (:func:`positive_mask`),
  not by PyG's random mask over its own edge order;
* the negatives are ``neg_edge_index`` when given: NEW global ids, this rank's share, e.g. from
  :func:`pyg_sar.link.negative_sampling` keyed by ``(seed, epoch)`` so that every number of
  ranks draws the same pairs (:func:`pyg_sar.link.negatives.reference_negative_sampling`
  gives them single-process, for PyG's ``forward(x, edge_index, neg_edge_index)``). When none
  are given, the layer draws as many as PyG would from the whole graph
  (:func:`sampled_negatives`), keyed by (layer, epoch); both ends are gathered;
* ``get_attention_loss()`` is global: the mean over the pairs of all ranks
  (:func:`pyg_sar.nn.functional.binary_cross_entropy_with_logits`).

The "layer" key is the layer's index among the model's message-passing layers and the "epoch"
its count of training forwards over a DistGraph, so the draws are the same for every number of
ranks and PyG's example ``examples/super_gat.py`` runs unchanged; they are not PyG's own random
draws, which no partition can reproduce: given the same pairs (``positive_sampling`` patched to
:func:`positive_mask`, ``neg_edge_index`` from ``reference_negative_sampling`` of the same
slots), PyG computes the same loss and gradients.

A Tensor ``edge_index`` runs PyG's forward unchanged.
"""
from __future__ import annotations

from typing import Optional

import torch
from torch import Tensor

from pyg_sar.graph import DistGraph


def global_sources(graph: DistGraph) -> Tensor:
    """NEW global id of the source of every stored edge of ``graph`` (stored order), from one
    exchange of the ranks' send lists (each rank sends the global ids of the rows it sends);
    cached on the graph."""
    def build() -> Tensor:
        rank, offsets = graph.rank, graph.node_offsets
        device = graph.in_degree.device
        recv = torch.zeros(sum(graph.recv_counts), dtype=torch.long, device=device)
        if graph.world_size > 1:
            send = torch.cat([offsets[rank] + i.to(device).long() for i in graph.send_idx])
            graph.context.comm.all_to_all_single(recv, send, graph.recv_counts,
                                                 graph.send_counts)
        parts, start = [], 0
        for block in graph.blocks:
            if block.src_rank == rank:
                parts.append(offsets[rank] + block.col.to(device).long())
            else:
                parts.append(recv[start + block.col.to(device).long()])
                start += block.num_src
        return torch.cat(parts) if parts else recv
    return graph.cached("supergat_global_sources", build)


def global_source_node_ids(graph: DistGraph) -> Tensor:
    """ORIGINAL id (``graph.node_ids``; the new id where the graph has none) of the source of
    every stored edge of ``graph`` (stored order), from one exchange; cached on the graph."""
    def build() -> Tensor:
        rank, offsets = graph.rank, graph.node_offsets
        device = graph.in_degree.device
        ids = graph.node_ids
        if ids is None:
            ids = torch.arange(offsets[rank], offsets[rank + 1], device=device)
        ids = ids.to(device).long()
        recv = torch.zeros(sum(graph.recv_counts), dtype=torch.long, device=device)
        if graph.world_size > 1:
            send = torch.cat([ids[i.to(device).long()] for i in graph.send_idx])
            graph.context.comm.all_to_all_single(recv, send, graph.recv_counts,
                                                 graph.send_counts)
        parts, start = [], 0
        for block in graph.blocks:
            if block.src_rank == rank:
                parts.append(ids[block.col.to(device).long()])
            else:
                parts.append(recv[start + block.col.to(device).long()])
                start += block.num_src
        return torch.cat(parts) if parts else recv
    return graph.cached("supergat_source_node_ids", build)


def positive_mask(src: Tensor, dst: Tensor, *, seed: int, epoch: int, ratio: float) -> Tensor:
    """Which positive edges ``(src, dst)`` (ORIGINAL ids) are kept by the subsampling of
    ``edge_sample_ratio = ratio``: each edge with probability ``ratio``, decided by a
    counter-based draw keyed by ``(seed, epoch, src, dst)``, so every number of ranks keeps
    the same edges (the single-process oracle calls it on the whole graph)."""
    from pyg_sar.ops.sampling_rng import combine_tensor, dart_tensor, make_key
    key = torch.full_like(src, make_key(seed, epoch, 1))
    keys = combine_tensor(combine_tensor(key, src.long()), dst.long())
    return dart_tensor(keys, torch.zeros_like(keys)) < ratio


def _gather(h: Tensor, index: Tensor, graph: DistGraph) -> Tensor:
    from pyg_sar.link.gather import gather
    return gather(h, index, ids="new", node_offsets=graph.node_offsets,
                  context=graph.context, name="supergat")


def _attention_pairs(self, h: Tensor, graph: DistGraph, pos: tuple[Tensor, Tensor],
                     neg: Tensor) -> None:
    """``att_x`` / ``att_y`` of PyG's training forward: logits of the positives (the stored
    edges, self-loops as PyG) and of the negatives ``neg`` (new global ids)."""
    lo = graph.node_offsets[graph.rank]
    src, dst = pos
    n_pos, n_neg = src.numel(), neg.shape[1]
    # x_i: the pair's destination, x_j: its source (PyG's convention); one exchange for all
    local_dst = h[dst - lo]
    rows = _gather(h, torch.cat([src, neg[0], neg[1]]), graph)
    x_j = torch.cat([rows[:n_pos], rows[n_pos:n_pos + n_neg]])
    x_i = torch.cat([local_dst, rows[n_pos + n_neg:]])
    index_i = torch.cat([dst, neg[1]])
    self.att_x = self.get_attention(edge_index_i=index_i, x_i=x_i, x_j=x_j,
                                    num_nodes=None, return_logits=True)
    self.att_y = self.att_x.new_zeros(self.att_x.size(0))
    self.att_y[:n_pos] = 1.
    self._sar_att_context = graph.context


def _positives(self, graph: DistGraph, device: torch.device) -> tuple[Tensor, Tensor]:
    """The positive pairs (global source, global destination) of this rank: its stored
    in-edges, self-loops as PyG's forward (removed, then one per node added)."""
    lo = graph.node_offsets[graph.rank]
    src, dst = global_sources(graph).to(device), graph.destinations().to(device) + lo
    if self.add_self_loops:
        keep = src != dst
        loops = torch.arange(lo, lo + graph.num_nodes, device=device)
        src, dst = torch.cat([src[keep], loops]), torch.cat([dst[keep], loops])
    return src, dst


def _subsampled_positives(self, graph: DistGraph, device: torch.device, seed: int,
                          epoch: int) -> tuple[Tensor, Tensor]:
    """:func:`_positives`, subsampled by ``edge_sample_ratio`` (:func:`positive_mask`)."""
    src, dst = _positives(self, graph, device)
    if self.edge_sample_ratio >= 1.0:
        return src, dst
    lo = graph.node_offsets[graph.rank]
    ids = graph.node_ids.to(device).long() if graph.node_ids is not None else \
        torch.arange(lo, lo + graph.num_nodes, device=device)
    src_ids = global_source_node_ids(graph).to(device)
    if self.add_self_loops:
        keep = global_sources(graph).to(device) != graph.destinations().to(device) + lo
        src_ids = torch.cat([src_ids[keep], ids])
    dst_ids = ids[dst - lo]
    mask = positive_mask(src_ids, dst_ids, seed=seed, epoch=epoch,
                         ratio=self.edge_sample_ratio)
    return src[mask], dst[mask]


def _seed_epoch(self, advance: bool) -> tuple[int, int]:
    """``(seed, epoch)`` of this layer's draws: its index among the model's message-passing
    layers and its count of training forwards over a DistGraph."""
    state = getattr(self, "_sar_state", None)
    seed = int(state.index) if state is not None and state.index is not None else 0
    epoch = int(getattr(self, "_sar_neg_epoch", 0))
    if advance:
        self._sar_neg_epoch = epoch + 1
    return seed, epoch


def sampled_negatives(self, graph: DistGraph, device: torch.device, seed: int, epoch: int
                      ) -> Tensor:
    """This rank's share of the negatives PyG's forward would sample when none are given:
    ``int(neg_sample_ratio * edge_sample_ratio * E)`` pairs for the ``E`` positive edges of the
    whole graph, both ends uniform, existing edges and self-loops redrawn
    (:func:`pyg_sar.link.negative_sampling` with ``reject_existing=True``), keyed by global
    slot numbers with ``seed`` = the layer's index among the model's message-passing layers
    and ``epoch`` = its count of training forwards over a DistGraph: the same pairs for every
    number of ranks (not PyG's own random draw, which no partition can reproduce)."""
    from pyg_sar.core.collectives import sum_over_ranks
    from pyg_sar.link.negatives import negative_sampling
    src, _ = _positives(self, graph, device)
    comm = graph.context.comm if graph.world_size > 1 else None
    total = int(sum_over_ranks(torch.tensor([src.numel()], dtype=torch.long), comm)[0])
    num = int(self.neg_sample_ratio * self.edge_sample_ratio * total)
    rank, p = graph.rank, graph.world_size
    keys = torch.arange(num * rank // p, num * (rank + 1) // p, device=device)
    return negative_sampling(graph, keys, seed=seed, epoch=epoch, reject_existing=True)


def supergat_forward(self, x: Tensor, edge_index, neg_edge_index: Optional[Tensor] = None,
                     batch: Optional[Tensor] = None) -> Tensor:
    """SuperGATConv's forward over a DistGraph (see the module docstring)."""
    if not isinstance(edge_index, DistGraph):
        self._sar_att_context = None
        return self._sar_base.forward(self, x, edge_index, neg_edge_index, batch)
    if batch is not None:
        raise ValueError("pyg_sar: SuperGATConv over a DistGraph: batch (mini-batch negative "
                         "sampling) is not supported; pass neg_edge_index")
    heads, channels = self.heads, self.out_channels
    h = self.lin(x).view(-1, heads, channels)
    out = self.propagate(edge_index, x=h)
    self.att_x = self.att_y = None
    self._sar_att_context = None
    if self.training:
        if neg_edge_index is not None and (neg_edge_index.dim() != 2
                                           or neg_edge_index.shape[0] != 2):
            raise ValueError(f"pyg_sar: SuperGATConv: neg_edge_index must be [2, n] new "
                             f"global ids (got shape {tuple(neg_edge_index.shape)})")
        seed, epoch = _seed_epoch(self, advance=True)
        pos = _subsampled_positives(self, edge_index, h.device, seed, epoch)
        if neg_edge_index is None:
            neg_edge_index = sampled_negatives(self, edge_index, h.device, seed, epoch)
        _attention_pairs(self, h, edge_index, pos, neg_edge_index.to(h.device).long())
    out = out.view(-1, heads * channels) if self.concat is True else out.mean(dim=1)
    if self.bias is not None:
        out = out + self.bias
    return out


def supergat_attention_loss(self) -> Tensor:
    """SuperGATConv.get_attention_loss; after a training forward over a DistGraph the global
    loss over every rank's pairs."""
    if not self.training:
        return self._sar_base.get_attention_loss(self)
    context = getattr(self, "_sar_att_context", None)
    if context is not None:
        from pyg_sar.nn.functional import binary_cross_entropy_with_logits
        return binary_cross_entropy_with_logits(self.att_x.mean(dim=-1), self.att_y,
                                                context=context)
    if getattr(self, "att_x", None) is None:
        name = getattr(self, "_sar_name", type(self).__name__)
        raise RuntimeError(
            f"pyg_sar: layer '{name}' (SuperGATConv): get_attention_loss(): no attention loss "
            f"was computed: call the layer in training mode first (its training forward "
            f"scores the positive and negative pairs)")
    return self._sar_base.get_attention_loss(self)
