"""Softmax global attention of graph transformers across ranks: PyG's ``GPSConv``.

``GPSConv`` adds to a local message-passing layer a global attention in which every node of a
graph attends to every node of it (``torch.nn.MultiheadAttention``, or PyG's
``PerformerAttention``). Everything else in it (dropout, residuals, norms, the MLP) acts on one
node's row at a time, or is a batch norm, which pyg_sar runs over all ranks' rows.

* :func:`mha_forward`: ``torch.nn.MultiheadAttention`` as self-attention over all ``N`` nodes of
  one graph, each rank giving its own rows: the query, key and value projections per row, then
  :func:`~pyg_sar.core.global_attention.ring_attention` (exact softmax over every node, keys and
  values walked around the ranks as a ring, nothing of size ``n_r x N`` kept in mode ``"sar"``),
  then the output projection per row. Attention dropout (``dropout`` of the module, in training
  mode) draws its multipliers from a seed drawn once per call from torch's generator
  (``torch.manual_seed`` governs it; equal on every rank when their seeds are) and the original
  node ids, so they do not depend on the partition: P ranks give what one process gives with
  the same seed, though not torch's own mask (one Bernoulli draw over ``[H, N, N]``).
* :func:`gps_forward`: PyG's ``GPSConv.forward`` over a :class:`~pyg_sar.DistGraph` for one
  graph (``batch`` ``None`` or all zeros, checked; PyG's ``to_dense_batch`` is then the
  identity), its local conv and batch norms converted by :func:`pyg_sar.convert`, and for the
  call its ``MultiheadAttention`` running :func:`mha_forward` (``attn_type="multihead"``) or
  its converted ``PerformerAttention``
  (:func:`~pyg_sar.nn.adapters.linear_attention.performer_attention_forward`, ``"performer"``).

Cost of one multi-head call on rank ``r`` (``E`` channels, ``b`` bytes per number): the
ring's traffic, ledger label ``"<module name>.attn"``: forward receives the other ranks' key and
value rows, ``(N - n_r) 2E b``; mode ``"sar"`` fetches them again in backward; every mode sends
``(N - n_r) 2E b`` of their gradients back. Compute ``O(n_r N E)``, as one process's share.

GPSConv's own ``dropout`` (on node rows) is drawn per rank, as every row-wise dropout of a
converted model: outputs equal one process's only without it (or in eval mode).

Refused with a reason: ``add_bias_kv`` and ``add_zero_attn`` (extra key rows that belong to no
node), ``kdim`` / ``vdim`` other than ``embed_dim`` (not self-attention), a batch of several
graphs, an ``attn_type`` other than these two. Collective: every rank calls in the same order,
also a rank without rows.
"""
from __future__ import annotations

from typing import Optional

import torch
import torch.nn.functional as F
from torch import Tensor
from torch_geometric.nn.attention import PerformerAttention

from pyg_sar.config import MODES
from pyg_sar.core.exchange import Wire
from pyg_sar.core.global_attention import ring_attention
from pyg_sar.graph import DistGraph
from pyg_sar.nn.adapters.linear_attention import _rows
from pyg_sar.nn.conversion.call_graph import GRAPH, for_this_call, graph_of
from pyg_sar.nn.norm import DistributedBatchNorm

ATTN_TYPES = ("multihead", "performer")


def check_mha(mha: torch.nn.MultiheadAttention, where: str = "MultiheadAttention") -> None:
    """Raise a ``ValueError`` naming the option if ``mha`` cannot run as exact self-attention
    over the nodes of a graph."""
    if not isinstance(mha, torch.nn.MultiheadAttention):
        raise ValueError(f"pyg_sar: {where}: expected torch.nn.MultiheadAttention "
                         f"(got {type(mha).__name__})")
    if mha.bias_k is not None or mha.bias_v is not None:
        raise ValueError(f"pyg_sar: {where}: add_bias_kv=True appends a learned key and value "
                         f"row that belongs to no node; not supported across ranks")
    if mha.add_zero_attn:
        raise ValueError(f"pyg_sar: {where}: add_zero_attn=True appends a zero key and value "
                         f"row that belongs to no node; not supported across ranks")
    if mha.kdim != mha.embed_dim or mha.vdim != mha.embed_dim:
        raise ValueError(f"pyg_sar: {where}: kdim={mha.kdim}, vdim={mha.vdim} differ from "
                         f"embed_dim={mha.embed_dim}: keys and values are not the nodes' own "
                         f"rows (self-attention over a graph needs them equal)")


def _projections(mha: torch.nn.MultiheadAttention, x: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    """Query, key and value rows ``[n, E]`` as torch computes them (one packed weight, or three
    when ``_qkv_same_embed_dim`` is False; the bias is packed in either case)."""
    if mha._qkv_same_embed_dim:
        return F.linear(x, mha.in_proj_weight, mha.in_proj_bias).chunk(3, dim=-1)
    b = (None,) * 3 if mha.in_proj_bias is None else mha.in_proj_bias.chunk(3)
    return (F.linear(x, mha.q_proj_weight, b[0]), F.linear(x, mha.k_proj_weight, b[1]),
            F.linear(x, mha.v_proj_weight, b[2]))


def mha_forward(mha: torch.nn.MultiheadAttention, x: Tensor, graph: DistGraph, *,
                mode: str = "sar", tile_rows: Optional[int] = None,
                label: Optional[str] = None) -> Tensor:
    """``mha(x, x, x, need_weights=False)[0]`` of one graph's ``N`` nodes, on this rank's rows.

    Args:
        mha: the module (checked by :func:`check_mha`).
        x: ``[n_r, E]`` this rank's rows (``n_r = graph.num_nodes``).
        graph: the partitioned graph (only its ranks, node ranges and ids are read).
        mode: ``"sar"``, ``"sa"`` or ``"halo"`` (see
            :func:`~pyg_sar.core.global_attention.ring_attention`).
        tile_rows: query and key rows per tile (``None``: the engine's default).
        label: the traffic ledger's label of the key/value rows and their gradients.

    Returns:
        ``[n_r, E]``: the rows of torch's output over the whole graph (equal up to rounding
        without dropout; with dropout, the counter-based mask described in the module docs).
    """
    check_mha(mha)
    if mode not in MODES:
        raise ValueError(f"pyg_sar: MultiheadAttention: mode must be one of {MODES} "
                         f"(got {mode!r})")
    if x.dim() != 2 or x.shape[1] != mha.embed_dim:
        raise ValueError(f"pyg_sar: MultiheadAttention: x must be [rows, {mha.embed_dim}] "
                         f"(got shape {tuple(x.shape)})")
    n, heads, d = x.shape[0], mha.num_heads, mha.head_dim
    q, k, v = (t.reshape(n, heads, d) for t in _projections(mha, x))
    p = float(mha.dropout) if mha.training else 0.0
    # One draw per call, from torch's generator, only when it is used (as fused attention).
    seed = int(torch.randint(0, 2**62, ())) if p > 0.0 else 0
    out = ring_attention(graph, q, k, v, scale=d ** -0.5, dropout=p, seed=seed, mode=mode,
                         tile_rows=tile_rows, wire=Wire(label=label))
    return F.linear(out.reshape(n, heads * d), mha.out_proj.weight, mha.out_proj.bias)


def _config_mode(module: torch.nn.Module) -> str:
    """The engine mode of a converted GPSConv: its own ``SARConfig`` if ``convert`` set one,
    else its converted local conv's, else ``"sar"``."""
    config = getattr(module, "_sar_config", None)
    if config is None and module.conv is not None:
        state = module.conv.__dict__.get("_sar_state")
        config = getattr(state, "config", None)
    return getattr(config, "mode", "sar")


def check_gps(module: torch.nn.Module) -> None:
    """Raise a ``ValueError`` naming the option if this GPSConv cannot run across ranks."""
    attn_type = getattr(module, "attn_type", None)
    if attn_type not in ATTN_TYPES:
        raise ValueError(f"pyg_sar: GPSConv: attn_type={attn_type!r} is not supported across "
                         f"ranks (supported: {', '.join(ATTN_TYPES)})")
    if attn_type == "multihead":
        check_mha(module.attn, "GPSConv.attn (MultiheadAttention)")
        if not module.attn.batch_first:  # PyG's GPSConv makes it batch-first
            raise ValueError("pyg_sar: GPSConv.attn (MultiheadAttention): batch_first=False "
                             "is not the module GPSConv builds")
    elif not isinstance(module.attn, PerformerAttention):
        raise ValueError(f"pyg_sar: GPSConv: attn_type='performer' but attn is "
                         f"{type(module.attn).__name__}")


def gps_refusal(module: torch.nn.Module) -> Optional[str]:
    """Why this GPSConv is refused (checked by :func:`pyg_sar.convert` before it changes
    anything), or ``None``."""
    try:
        check_gps(module)
    except ValueError as e:
        return str(e).removeprefix("pyg_sar: ")
    return None


def _ring_attention_forward(mha: torch.nn.MultiheadAttention, graph: DistGraph, mode: str,
                            label: str):
    """The ``forward`` a GPSConv's ``MultiheadAttention`` has for one call over ``graph``:
    PyG's call ``attn(h, h, h, key_padding_mask=~mask, need_weights=False)`` on the dense
    batch of one graph, ``[1, n_r, E]`` with nothing padded, as :func:`mha_forward`."""
    def forward(query: Tensor, key: Tensor, value: Tensor,
                key_padding_mask: Optional[Tensor] = None, need_weights: bool = True,
                attn_mask: Optional[Tensor] = None, average_attn_weights: bool = True,
                is_causal: bool = False) -> tuple[Tensor, None]:
        if not (query is key and key is value) or query.dim() != 3 or query.shape[0] != 1:
            raise ValueError(f"pyg_sar: GPSConv.attn: expected self-attention over one graph, "
                             f"[1, rows, channels] (got query shape {tuple(query.shape)})")
        if need_weights or attn_mask is not None or is_causal:
            raise ValueError("pyg_sar: GPSConv.attn: attention weights, attn_mask and "
                             "is_causal are not supported across ranks")
        if key_padding_mask is not None and bool(key_padding_mask.any()):
            raise ValueError("pyg_sar: GPSConv.attn: padded rows (a batch of several graphs) "
                             "are not supported across ranks")
        return mha_forward(mha, query[0], graph, mode=mode, label=label)[None], None
    return forward


def gps_forward(self: torch.nn.Module, x: Tensor, edge_index: DistGraph,
                batch: Optional[Tensor] = None, **kwargs) -> Tensor:
    """``GPSConv.forward`` on this rank's rows ``x`` ``[n_r, C]`` of one graph: PyG's forward.

    Around it: the checks (:func:`check_gps`; ``x`` the graph's rows; ``batch`` ``None`` or all
    zeros on every rank), the batch norms bound to the graph's ranks, and, for this call, the
    global attention over every rank's rows: the ``MultiheadAttention`` as :func:`mha_forward`
    in the mode of the model's ``SARConfig``, a ``PerformerAttention`` as its converted forward
    (:func:`~pyg_sar.nn.adapters.linear_attention.performer_attention_forward`). PyG's forward
    runs with ``batch=None``, which for one graph is the same (``to_dense_batch`` gives all the
    rows, nothing padded) and also holds on a rank without rows. The local conv is converted
    by :func:`pyg_sar.convert` and called with the DistGraph and ``kwargs``.
    """
    # A partition passed whole: the converted module's call bound its DistGraph.
    graph = edge_index if isinstance(edge_index, DistGraph) else graph_of(self)
    check_gps(self)
    _rows("GPSConv", x, graph, None, batch)  # a DistGraph, x's rows, one graph on all ranks
    for module in self.modules():  # as convert's pre-hook: statistics over graph's ranks
        if isinstance(module, DistributedBatchNorm):
            module.bind(graph.context)
    pyg_forward = getattr(type(self), "_sar_base", type(self)).forward  # PyG's GPSConv
    if self.attn_type == "multihead":
        name = getattr(self, "_sar_name", None) or "GPSConv"
        attention = _ring_attention_forward(self.attn, graph, _config_mode(self),
                                            f"{name}.attn")
        with for_this_call(self.attn, "forward", attention):
            return pyg_forward(self, x, graph, None, **kwargs)
    with for_this_call(self.attn, GRAPH, graph):
        return pyg_forward(self, x, graph, None, **kwargs)


__all__ = ["ATTN_TYPES", "check_gps", "check_mha", "gps_forward", "gps_refusal", "mha_forward"]
