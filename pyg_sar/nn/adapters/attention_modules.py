"""Replacement forwards of PyG's linear global-attention modules, as registered in
:data:`pyg_sar.nn.conversion.registry.MODULE_FORWARDS` (see :mod:`pyg_sar.nn.module_forwards`).

Each has the signature of the PyG module's ``forward`` and runs over the DistGraph of the
current call (:func:`~pyg_sar.nn.module_forwards.graph_of`) with the exact forwards of
:mod:`pyg_sar.nn.adapters.linear_attention`: the rank's rows in, the rank's rows out, the global
sums added over ranks. ``Polynormer`` takes the DistGraph as its ``edge_index`` and is registered
with :func:`~pyg_sar.nn.adapters.linear_attention.polynormer_forward` directly; ``SGFormer`` runs
PyG's forward, its ``SGModule`` this module's. One graph only: a ``batch``
naming several graphs (or a dense batch of several) raises a ``ValueError`` on every rank.
"""
from __future__ import annotations

from typing import Optional

import torch
from torch import Tensor
from torch_geometric.nn.attention import (
    PerformerAttention,
    PolynormerAttention,
    SGFormerAttention,
)
from torch_geometric.nn.attention.performer import PerformerProjection, generalized_kernel
from torch_geometric.nn.models.sgformer import SGModule

from pyg_sar.nn.adapters import linear_attention as la
from pyg_sar.nn.conversion.call_graph import graph_of


def sgmodule(self: SGModule, x: Tensor, batch: Optional[Tensor]) -> Tensor:
    """``SGModule.forward(x, batch)``:
    :func:`~pyg_sar.nn.adapters.linear_attention.sgmodule_forward`."""
    return la.sgmodule_forward(self, x, graph_of(self), batch)


def sgformer_attention(self: SGFormerAttention, x: Tensor,
                       mask: Optional[Tensor] = None) -> Tensor:
    """``SGFormerAttention.forward(x, mask)`` over the rank's rows."""
    return la.sgformer_attention_forward(self, x, graph_of(self), mask)


def polynormer_attention(self: PolynormerAttention, x: Tensor,
                         mask: Optional[Tensor] = None) -> Tensor:
    """``PolynormerAttention.forward(x, mask)`` over the rank's rows."""
    return la.polynormer_attention_forward(self, x, graph_of(self), mask)


def performer_attention(self: PerformerAttention, x: Tensor,
                        mask: Optional[Tensor] = None) -> Tensor:
    """``PerformerAttention.forward(x, mask)`` over the rank's rows."""
    return la.performer_attention_forward(self, x, graph_of(self), mask)


def performer_projection(self: PerformerProjection, q: Tensor, k: Tensor, v: Tensor) -> Tensor:
    """``PerformerProjection.forward(q, k, v)`` with ``[1, H, n, D]`` inputs of the rank's
    ``n`` rows: PyG's ``linear_attention`` with the kernelised keys' sum and ``K'^T V``
    summed over ranks (the projection matrix checked equal on every rank)."""
    graph = graph_of(self)
    if q.dim() != 4 or q.shape[0] != 1 or q.shape[2] != graph.num_nodes:
        raise ValueError(f"pyg_sar: PerformerProjection: q must be [1, heads, "
                         f"{graph.num_nodes}, channels] (one graph, this rank's rows; got "
                         f"shape {tuple(q.shape)})")
    la._check_same_projection(self.projection_matrix, graph)
    q = generalized_kernel(q, self.projection_matrix, self.kernel)
    k = generalized_kernel(k, self.projection_matrix, self.kernel)
    k_sum, kv = la.global_sums(graph, k.sum(dim=-2), k.transpose(-2, -1) @ v)
    d_inv = 1.0 / (q @ k_sum.unsqueeze(-1))
    return torch.einsum("...L,...Ld->...Ld", d_inv.squeeze(-1), q @ kv)


__all__ = ["performer_attention", "performer_projection", "polynormer_attention",
           "sgformer_attention", "sgmodule"]
