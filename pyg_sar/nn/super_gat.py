r"""SuperGATConv over a DistGraph, with its self-supervised attention loss.

PyG's ``SuperGATConv`` in training mode scores, besides its output, the attention logits of
positive edges (the graph's edges with self-loops, subsampled by ``edge_sample_ratio``) and of
negative pairs (``neg_edge_index``, or sampled from the whole graph inside ``forward``), and
``get_attention_loss()`` is the binary cross-entropy of those logits. Over a partition:

* the positives are every rank's stored in-edges (self-loops handled as PyG does: removed, then
  one per node added); each edge's source row is fetched from its owner with
  :func:`pyg_sar.gather` (the stored edges' global source ids come from one exchange of the
  ranks' send lists, cached on the graph). Only ``edge_sample_ratio=1.0`` (PyG's default)
  is supported: PyG's subsampling is a random mask over its own edge order;
* the negatives must be given: ``neg_edge_index`` of NEW global ids, this rank's share, e.g.
  from :func:`pyg_sar.link.negative_sampling` keyed by ``(seed, epoch)`` so that every number
  of ranks draws the same pairs (:func:`pyg_sar.link.negatives.reference_negative_sampling`
  gives them single-process, for PyG's ``forward(x, edge_index, neg_edge_index)``); both ends
  are gathered. Without them the output is computed and ``get_attention_loss()`` raises;
* ``get_attention_loss()`` is global: the mean over the pairs of all ranks
  (:func:`pyg_sar.nn.functional.binary_cross_entropy_with_logits`), equal to PyG's for the
  same negatives.

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


def _gather(h: Tensor, index: Tensor, graph: DistGraph) -> Tensor:
    from pyg_sar.link.gather import gather
    return gather(h, index, node_offsets=graph.node_offsets, context=graph.context,
                  name="supergat")


def _attention_pairs(self, h: Tensor, graph: DistGraph, neg: Tensor) -> None:
    """``att_x`` / ``att_y`` of PyG's training forward: logits of the positives (the stored
    edges, self-loops as PyG) and of the negatives ``neg`` (new global ids)."""
    lo = graph.node_offsets[graph.rank]
    src, dst = global_sources(graph), graph.destinations().to(h.device) + lo
    if self.add_self_loops:
        keep = src != dst
        loops = torch.arange(lo, lo + graph.num_nodes, device=h.device)
        src, dst = torch.cat([src[keep], loops]), torch.cat([dst[keep], loops])
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
    if self.training and neg_edge_index is not None:
        if self.edge_sample_ratio != 1.0:
            raise ValueError(f"pyg_sar: SuperGATConv(edge_sample_ratio="
                             f"{self.edge_sample_ratio}) subsamples the positive edges at "
                             f"random over PyG's edge order; over a DistGraph only 1.0 (every "
                             f"edge, PyG's default) is supported")
        if neg_edge_index.dim() != 2 or neg_edge_index.shape[0] != 2:
            raise ValueError(f"pyg_sar: SuperGATConv: neg_edge_index must be [2, n] new "
                             f"global ids (got shape {tuple(neg_edge_index.shape)})")
        _attention_pairs(self, h, edge_index, neg_edge_index.to(h.device).long())
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
            f"was computed: over a DistGraph the negative pairs must be given, since PyG "
            f"samples positive and negative edges from the whole graph inside forward, which "
            f"a rank's part cannot reproduce. Pass neg_edge_index=pyg_sar.link."
            f"negative_sampling(graph, keys, seed=..., epoch=...) (new global ids, the same "
            f"pairs for every number of ranks; the loss is then exact). Supported: "
            f"SuperGATConv's output (the attention propagation), exact in training and eval "
            f"with or without negatives; without them train on the task loss alone (drop "
            f"the get_attention_loss() term), or run the layer on a Tensor edge_index")
    return self._sar_base.get_attention_loss(self)
