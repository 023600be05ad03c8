"""Linear (kernelised) global attention over a partitioned graph, exact across ranks.

PyG's ``SGFormerAttention``, ``PolynormerAttention`` and ``PerformerAttention`` let every node
attend to every node of its graph, but through a kernel: per-node feature maps ``q``, ``k``,
``v``, then sums over all nodes (``sum_l k_l v_l^T`` and ``sum_l k_l``) that every query reads.
Everything else (projections, normalisation, ``LayerNorm``, output layers, dropout) acts on one
node's row at a time. So each rank computes the maps of its own rows, sums them over its rows,
and adds those partial sums over ranks with :func:`~pyg_sar.core.collectives.sum_over_ranks_grad`
(forward: all-reduce; backward: all-reduce of the gradient of the sums, which is every rank's
use of them). Each rank's output rows then equal those of one process on the whole graph, and
so does every gradient once parameter gradients are summed over ranks (as grad_sync does for
every layer): each partial sum holds only its rank's rows, so nothing is counted twice.

Cost per layer and step: one all-reduce forward and one backward of the sums only, independent
of the node count: SGFormer ``H*M*(M+1)`` numbers (``H`` heads of ``M`` channels), Polynormer
``M*H*(M+1)``, Performer ``H*m*(M+1)`` (``m`` random features) plus 2 forward (a check that
its projection matrix is equal on every rank). Where PyG uses the node count ``N`` (SGFormer,
twice), the global count ``graph.num_global_nodes`` is used.

The functions take the rank's rows ``x`` as ``[n, F]`` (the output is then ``[n, C]``) or as
PyG's dense batch of one graph ``[1, n, F]`` (output ``[1, n, C]``), and an optional PyG
``mask`` over those rows. A batch of several graphs (``x`` of batch size > 1, or a ``batch``
vector naming more than one graph on any rank) is refused: the sums would then be per graph.
Collective: every rank calls the same function in the same order, also a rank without rows.

Model level: :func:`sgmodule_forward` and :func:`polynormer_forward` are PyG's forwards of
``SGModule`` and ``Polynormer`` over a DistGraph for one graph (PyG's sort by ``batch`` and
``to_dense_batch`` are then the identity), the global attention through the functions above;
their GNN parts (GCNConv, GATConv, batch norms) must have been converted by
:func:`pyg_sar.convert`. They are restated rather than run as PyG's because PyG's
``to_dense_batch`` fails on a rank without rows (``batch.max()`` of an empty tensor), which
would leave the other ranks waiting in the sums' all-reduce. ``SGFormer`` runs PyG's own
forward: its global branch is an ``SGModule``. Dropout is per row and drawn per rank, so
outputs equal one process's only without dropout (or in eval mode).
"""
from __future__ import annotations

from typing import Optional

import torch
import torch.nn.functional as F
from torch import Tensor
from torch_geometric.nn.attention import (
    PerformerAttention,
    PolynormerAttention,
    SGFormerAttention,
)
from torch_geometric.nn.attention.performer import PerformerProjection, generalized_kernel
from torch_geometric.nn.models import Polynormer
from torch_geometric.nn.models.sgformer import SGModule

from pyg_sar.core.collectives import sum_over_ranks_grad
from pyg_sar.core.reduce import global_max
from pyg_sar.graph import DistGraph


def _comm(graph: DistGraph):
    return graph.context.comm if graph.world_size > 1 else None


def _rows(name: str, x: Tensor, graph: DistGraph, mask: Optional[Tensor],
          batch: Optional[Tensor]) -> tuple[Tensor, bool, Optional[Tensor]]:
    """``x`` as ``[1, n, F]``, whether the input was ``[n, F]``, and the mask as ``[1, n]``;
    refuses a batch of several graphs and rows that are not the graph's local nodes."""
    if not isinstance(graph, DistGraph):
        raise ValueError(f"pyg_sar: {name}: graph must be a DistGraph "
                         f"(got {type(graph).__name__})")
    if x.dim() == 3:
        if x.shape[0] != 1:
            raise ValueError(f"pyg_sar: {name}: x is a batch of {x.shape[0]} graphs (shape "
                             f"{tuple(x.shape)}); global attention across ranks takes one "
                             f"graph (batch size 1)")
        squeeze = False
    elif x.dim() == 2:
        x, squeeze = x[None], True
    else:
        raise ValueError(f"pyg_sar: {name}: x must be [n, F] or [1, n, F] "
                         f"(got shape {tuple(x.shape)})")
    if x.shape[1] != graph.num_nodes:
        raise ValueError(f"pyg_sar: {name}: x has {x.shape[1]} rows but rank {graph.rank} "
                         f"holds {graph.num_nodes} nodes")
    if mask is not None:
        mask = mask.reshape(1, -1) if mask.dim() == 1 else mask
        if tuple(mask.shape) != (1, x.shape[1]) or mask.dtype != torch.bool:
            raise ValueError(f"pyg_sar: {name}: mask must be bool [1, {x.shape[1]}] or "
                             f"[{x.shape[1]}] (got {mask.dtype} {tuple(mask.shape)})")
    if batch is not None:
        if tuple(batch.shape) != (x.shape[1],):
            raise ValueError(f"pyg_sar: {name}: batch must have shape [{x.shape[1]}] "
                             f"(got {tuple(batch.shape)})")
        if batch.numel() and int(batch.min()) < 0:
            raise ValueError(f"pyg_sar: {name}: batch has a negative graph id "
                             f"{int(batch.min())}")
        # Collective, and the same value on every rank: all ranks refuse together.
        top = global_max(graph, batch.detach().to(torch.float64))
        if float(top) > 0:
            raise ValueError(f"pyg_sar: {name}: batch names {int(top) + 1} graphs (largest "
                             f"graph id {int(top)}); global attention across ranks takes one "
                             f"graph (batch=None or all zeros)")
    return x, squeeze, mask


def global_sums(graph: DistGraph, *parts: Tensor) -> tuple[Tensor, ...]:
    """Each of ``parts`` (this rank's partial sums) summed over ranks, differentiably, in
    ONE all-reduce of their concatenation (forward and backward)."""
    flat = torch.cat([p.reshape(-1) for p in parts])
    total = sum_over_ranks_grad(flat, _comm(graph))
    out, start = [], 0
    for p in parts:
        out.append(total[start:start + p.numel()].view(p.shape))
        start += p.numel()
    return tuple(out)


def sgformer_attention_forward(module: SGFormerAttention, x: Tensor, graph: DistGraph,
                               mask: Optional[Tensor] = None, *,
                               batch: Optional[Tensor] = None) -> Tensor:
    """:meth:`SGFormerAttention.forward` on this rank's rows of one graph: ``kvs`` and
    ``ks_sum`` summed over all ranks' rows, ``N`` the global node count.

    Args:
        module: the PyG module (its parameters equal on every rank).
        x: this rank's rows, ``[n, F]`` or ``[1, n, F]`` with ``n = graph.num_nodes``.
        graph: this rank's DistGraph (its communicator and global node count).
        mask: PyG's validity mask over the rows (``[1, n]`` or ``[n]``), or ``None``.
        batch: optional graph id of each row; more than one graph over all ranks is refused.
    """
    x, squeeze, mask = _rows("SGFormerAttention", x, graph, mask, batch)
    B, n = x.shape[:2]
    N = graph.num_global_nodes
    qs, ks, vs = module.q(x), module.k(x), module.v(x)
    qs, ks, vs = (t.reshape(B, n, module.heads, module.head_channels) for t in (qs, ks, vs))
    if mask is not None:
        vs.masked_fill_(~mask[:, :, None, None], 0.)
    epsilon = 1e-6  # PyG's: zeros replaced before the L2 normalisation
    qs[qs == 0] = epsilon
    ks[ks == 0] = epsilon
    qs, ks = (t / torch.linalg.norm(t, ord=2, dim=-1, keepdim=True) for t in (qs, ks))
    kvs, ks_sum = global_sums(graph, torch.einsum("blhm,blhd->bhmd", ks, vs), ks.sum(dim=1))
    attention_num = torch.einsum("bnhm,bhmd->bnhd", qs, kvs) + N * vs
    normalizer = torch.einsum("bnhm,bhm->bnh", qs, ks_sum).unsqueeze(-1) + N
    out = (attention_num / normalizer).mean(dim=2)
    return out[0] if squeeze else out


def polynormer_attention_forward(module: PolynormerAttention, x: Tensor, graph: DistGraph,
                                 mask: Optional[Tensor] = None, *,
                                 batch: Optional[Tensor] = None) -> Tensor:
    """:meth:`PolynormerAttention.forward` on this rank's rows of one graph: ``kv`` and
    ``k_sum`` summed over all ranks' rows; the rest (``h_lins``, ``LayerNorm``, ``lin_out``,
    dropout) per row. Arguments as :func:`sgformer_attention_forward`."""
    x, squeeze, mask = _rows("PolynormerAttention", x, graph, mask, batch)
    B, n = x.shape[:2]
    D, H = module.head_channels, module.heads
    h = module.h_lins(x)
    k = module.k(x).sigmoid().view(B, n, D, H)
    q = k if module.qk_shared else F.sigmoid(module.q(x)).view(B, n, D, H)
    v = module.v(x).view(B, n, D, H)
    if mask is not None:
        v.masked_fill_(~mask[:, :, None, None], 0.)
    kv, k_sum = global_sums(graph, torch.einsum("bndh,bnmh->bdmh", k, v),
                            torch.einsum("bndh->bdh", k))
    num = torch.einsum("bndh,bdmh->bnmh", q, kv)
    den = torch.einsum("bndh,bdh->bnh", q, k_sum).unsqueeze(2)
    out = (num / (den + 1e-6)).reshape(B, n, D * H)  # explicit: n may be 0
    out = module.lns(out) * (h + module.beta)
    out = module.dropout(F.relu(module.lin_out(out)))
    return out[0] if squeeze else out


def _check_same_projection(matrix: Tensor, graph: DistGraph) -> None:
    """Refuse a projection matrix that differs between ranks (a ``redraw_projection_matrix()``
    on some ranks only, or with unequal seeds): the ranks would compute different attentions
    without a word. One all-reduce of 2 numbers: the largest and the negated smallest checksum
    over ranks (equal matrices give bit-equal checksums: same values, same arithmetic)."""
    comm = _comm(graph)
    if comm is None:
        return
    weights = torch.arange(1, matrix.numel() + 1, dtype=torch.float64, device=matrix.device)
    check = (matrix.detach().reshape(-1).to(torch.float64) * weights.sqrt()).sum()
    both = torch.stack([check, -check]).contiguous()
    comm.all_reduce(both, op="max")
    if float(both[0]) != -float(both[1]):
        raise RuntimeError(
            f"pyg_sar: PerformerAttention: fast_attn.projection_matrix differs between ranks "
            f"(checksums from {-float(both[1])!r} to {float(both[0])!r}; rank {graph.rank} has "
            f"{float(check)!r}): redraw_projection_matrix() must run on every rank with the "
            f"same random state (torch.manual_seed), or not at all after the first forward")


def performer_attention_forward(module: PerformerAttention, x: Tensor, graph: DistGraph,
                                mask: Optional[Tensor] = None, *,
                                batch: Optional[Tensor] = None) -> Tensor:
    """:meth:`PerformerAttention.forward` on this rank's rows of one graph: the kernelised
    keys' sum and ``K'^T V`` summed over all ranks' rows. The projection matrix is a buffer
    and must be equal on every rank (pyg_sar's first-forward broadcast makes it so; a
    ``redraw_projection_matrix()`` on some ranks only breaks it): every call checks it with
    one all-reduce of 2 numbers and raises a ``RuntimeError`` if it differs. Arguments as
    :func:`sgformer_attention_forward`."""
    x, squeeze, mask = _rows("PerformerAttention", x, graph, mask, batch)
    fast = module.fast_attn
    # PyG's class, or the class pyg_sar.convert gives it (nn/module_forwards.py)
    if getattr(type(fast), "_sar_base", type(fast)) is not PerformerProjection:
        raise ValueError(f"pyg_sar: PerformerAttention: fast_attn must be PyG's "
                         f"PerformerProjection (got {type(fast).__name__})")
    _check_same_projection(fast.projection_matrix, graph)
    B, n = x.shape[:2]
    q, k, v = (t.reshape(B, n, module.heads, module.head_channels).permute(0, 2, 1, 3)
               for t in (module.q(x), module.k(x), module.v(x)))
    if mask is not None:
        v.masked_fill_(~mask[:, None, :, None], 0.)
    q = generalized_kernel(q, fast.projection_matrix, fast.kernel)
    k = generalized_kernel(k, fast.projection_matrix, fast.kernel)
    k_sum, kv = global_sums(graph, k.sum(dim=-2), k.transpose(-2, -1) @ v)
    d_inv = 1.0 / (q @ k_sum.unsqueeze(-1))
    out = torch.einsum("...L,...Ld->...Ld", d_inv.squeeze(-1), q @ kv)
    out = out.permute(0, 2, 1, 3).reshape(B, n, module.heads * module.head_channels)
    out = module.dropout(module.attn_out(out))
    return out[0] if squeeze else out


# ------------------------------------------------------------------------ model level
def sgmodule_forward(module: SGModule, x: Tensor, graph: DistGraph,
                     batch: Optional[Tensor] = None) -> Tensor:
    """:meth:`SGModule.forward` (SGFormer's global branch) on this rank's rows ``[n, F]`` of
    one graph: PyG sorts by ``batch`` and pads with ``to_dense_batch``, which for one graph is
    the identity and an all-true mask, so this is PyG's layer loop on ``x[None]`` with each
    attention through :func:`sgformer_attention_forward`. Returns ``[n, C]``."""
    x, squeeze, _ = _rows("SGModule", x, graph, None, batch)
    if not squeeze:
        raise ValueError(f"pyg_sar: SGModule: x must be [n, F] (got shape {tuple(x.shape)})")
    x = module.fcs[0](x)
    x = module.bns[0](x)
    x = module.activation(x)
    x = F.dropout(x, p=module.dropout, training=module.training)
    layer_ = [x]
    for i, attn in enumerate(module.attns):
        x = sgformer_attention_forward(attn, x, graph)
        x = (x + layer_[i]) / 2.
        x = module.bns[i + 1](x)
        x = module.activation(x)
        x = F.dropout(x, p=module.dropout, training=module.training)
        layer_.append(x)
    return x[0]


def polynormer_forward(model: Polynormer, x: Tensor, edge_index: DistGraph,
                       batch: Optional[Tensor] = None) -> Tensor:
    """:meth:`Polynormer.forward` over a DistGraph: the local layers as PyG runs them (their
    convs and batch norms converted by :func:`pyg_sar.convert`); once ``model._global`` is
    set, the global attention of one graph (``batch`` ``None`` or all zeros) through
    :func:`polynormer_attention_forward` (PyG's sort and ``to_dense_batch`` are the identity
    for one graph)."""
    graph = edge_index
    x = F.dropout(x, p=model.in_drop, training=model.training)
    x_local = 0
    for i, local_conv in enumerate(model.local_convs):
        if model.pre_ln:
            x = model.pre_lns[i](x)
        h = F.relu(model.h_lins[i](x))
        x = local_conv(x, graph) + model.lins[i](x)
        if model.post_bn:
            x = model.post_bns[i](x)
        x = F.relu(x)
        x = F.dropout(x, p=model.dropout, training=model.training)
        x = (1 - model.beta) * model.lns[i](h * x) + model.beta * x
        x_local = x_local + x
    if model._global:
        x_global, _, _ = _rows("Polynormer", model.ln(x_local), graph, None, batch)
        for attn in model.global_attn:
            x_global = polynormer_attention_forward(attn, x_global, graph)
        x = model.pred_global(x_global[0])
    else:
        x = model.pred_local(x_local)
    return F.log_softmax(x, dim=-1)


__all__ = ["global_sums", "performer_attention_forward", "polynormer_attention_forward",
           "polynormer_forward", "sgformer_attention_forward",
           "sgmodule_forward"]
