"""Exact softmax attention of every node over every node of a partitioned graph, as a ring.

Each rank holds the query, key and value rows of its own nodes (``[n_r, H, d]``). The output
row of node ``i`` is ``softmax_j(<q_i, k_j> * scale) v_j`` over ALL nodes ``j`` of the graph
(one graph, no mask), as ``torch.nn.MultiheadAttention`` computes it over the whole node set.

Forward is the engine's block walk (:class:`~pyg_sar.core.walk.BlockWalk`) over
:func:`ring_view`, whose block ``s`` is every row of rank ``s``: at step ``k`` rank ``r``
receives all key and value rows of rank ``s = (r + k) % P`` (ledger direction ``rows``) while
sending its own to ``(r - k) % P``, and folds them into an online
softmax (running max ``m``, denominator ``l`` and accumulator per query and head), tile by tile
(``tile_rows`` queries x ``tile_rows`` keys). Nothing of size ``N x N`` or ``n_r x N`` is kept:
backward uses the saved ``q, k, v``, the output and ``lse = m + log l`` ``[n_r, H]``.

Backward follows FlashAttention-2: ``D = rowsum(dO * O)``; per tile the probabilities are
recomputed as ``P = exp(S - lse)``, ``dV_s += P^T dO``, ``dS = P * (dO V_s^T - D)``,
``dQ += scale dS K_s``, ``dK_s += scale dS^T Q``. Mode ``"sar"`` fetches the remote keys and
values again (direction ``refetch``), mode ``"sa"`` keeps the forward's (``(N - n_r) (d + d_v)
H`` more numbers per rank); ``dK_s, dV_s`` go back to rank ``s`` (the walk's gradient
return, direction ``grads``), which adds them to its own. Mode ``"halo"`` is the
baseline: every rank gathers all ``N`` key and value rows and runs plain dense attention with
autograd (its ``n_r x N`` attention matrix is saved for backward).

Without dropout, on CPU in float32 / float64 with ``d_v == d``, each ring step instead calls
torch's fused CPU attention kernel (``_scaled_dot_product_flash_attention_for_cpu``), which
returns the step's output and log-sum-exp; steps merge exactly by their log-sum-exp. Backward
calls the matching fused backward per step with the GLOBAL output and ``lse``, which gives the
same FlashAttention-2 terms as above. Elsewhere (dropout, other dtypes or devices, ``d_v != d``)
the tiled loop runs (:func:`_fused_ok` decides).

Traffic of rank ``r`` per call, ``b`` bytes per element, ``C = H (d + d_v)``: forward receives
``(N - n_r) C b`` and sends ``(P - 1) n_r C b``; backward in mode ``sar`` receives the same again
and sends ``(N - n_r) C b`` of gradients (receives ``(P - 1) n_r C b``); ``sa`` and ``halo`` only
the gradients.

Attention dropout (``dropout = p > 0``) multiplies each normalised weight by ``0`` or
``1 / (1 - p)`` after the softmax, as PyG and torch apply it (the denominator sums the undropped
weights). The multiplier of query ``i``, key ``j`` and head ``h`` is the fused GAT kernels'
counter-based draw (:func:`pyg_sar.ops.gat_dropout_mask` with source ``j`` and destination ``i``
as their original ids, ``DistGraph.node_ids``, else the new ids) under the caller's ``seed``:
it depends neither on the partition nor on the tiles, and backward recomputes the forward's
mask ``Z`` tile by tile (``dV_s += (P Z)^T dO``, ``dS = P ((dO V_s^T) Z - D)``, ``D`` from the
dropped output). It cannot equal torch's own mask (one Bernoulli draw over ``[H, N, N]``). It
needs the native library (:func:`pyg_sar.ops.native_available`).
"""
from __future__ import annotations

import math
from typing import Optional

import torch
from torch import Tensor

from pyg_sar.core.exchange import NO_WIRE, Wire
from pyg_sar.core.precision import accumulate_dtype
from pyg_sar.core.views import GraphView, stored_view
from pyg_sar.core.walk import BlockWalk
from pyg_sar.graph import Block, DistGraph

MODES = ("sar", "sa", "halo")
# Default tile: about this many score elements (H x Tq x Tk) per tile array (a tile step holds
# about four such arrays: scores, probabilities, mask, their gradient; 64 MiB in float64).
DEFAULT_TILE_ELEMENTS = 1 << 21
def _private_op(name: str, arguments: tuple[str, ...]):
    """torch's private op ``aten::name`` if this torch has it with exactly the arguments
    pyg_sar passes (names, in order), else ``None``, and the tiled path runs: a private op's
    signature may change in any torch release, and a positional call would then misread it."""
    op = getattr(torch.ops.aten, name, None)
    schema = getattr(getattr(op, "default", None), "_schema", None)
    if schema is None or tuple(a.name for a in schema.arguments) != arguments:
        return None
    return op


# torch's fused CPU attention (FlashAttention-style, returns the log-sum-exp) and its backward;
# None where this torch lacks them. Module attribute so tests can force the tiled path.
_FLASH_CPU = _private_op("_scaled_dot_product_flash_attention_for_cpu",
                         ("query", "key", "value", "dropout_p", "is_causal", "attn_mask",
                          "scale"))
_FLASH_CPU_BACKWARD = _private_op("_scaled_dot_product_flash_attention_for_cpu_backward",
                                  ("grad_out", "query", "key", "value", "out", "logsumexp",
                                   "dropout_p", "is_causal", "attn_mask", "scale"))
USE_FUSED = True


def _check(graph: DistGraph, q: Tensor, k: Tensor, v: Tensor, scale: float, dropout: float,
           mode: str, tile_rows: Optional[int], wire: Wire) -> None:
    if mode not in MODES:
        raise ValueError(f"ring_attention: mode must be one of {MODES} (got {mode!r})")
    if not (isinstance(dropout, (int, float)) and 0.0 <= dropout <= 1.0):
        raise ValueError(f"ring_attention: dropout must lie in [0, 1] (got {dropout!r})")
    if dropout > 0.0:
        from pyg_sar.ops import native_available
        if not native_available():
            raise ValueError(f"ring_attention: dropout={dropout!r} draws its mask with the "
                             f"native library (pyg_sar.ops), which is not built here")
    for name, t in (("q", q), ("k", k), ("v", v)):
        if not isinstance(t, Tensor) or t.dim() != 3:
            raise ValueError(f"ring_attention: {name} must be a tensor [rows, heads, channels] "
                             f"(got {getattr(t, 'shape', type(t).__name__)})")
    if q.shape != k.shape:
        raise ValueError(f"ring_attention: q and k must have the same shape (got "
                         f"{list(q.shape)} and {list(k.shape)})")
    if v.shape[:2] != q.shape[:2]:
        raise ValueError(f"ring_attention: v must have q's rows and heads (got "
                         f"{list(v.shape)} for q {list(q.shape)})")
    rows = graph.node_offsets[graph.rank + 1] - graph.node_offsets[graph.rank]
    if q.shape[0] != rows:
        raise ValueError(f"ring_attention: rank {graph.rank} owns {rows} nodes but q has "
                         f"{q.shape[0]} rows")
    if getattr(graph, "_bipartite", False):
        raise ValueError("ring_attention: a bipartite graph has no single node set to attend "
                         "over")
    if not math.isfinite(scale):
        raise ValueError(f"ring_attention: scale must be finite (got {scale!r})")
    if tile_rows is not None and (not isinstance(tile_rows, int) or tile_rows < 1):
        raise ValueError(f"ring_attention: tile_rows must be a positive integer or None "
                         f"(got {tile_rows!r})")
    if wire.transforms:
        raise ValueError("ring_attention: compressed or narrowed wires are not supported "
                         "(the wire may only carry a ledger label)")


def ring_attention(graph: DistGraph, q: Tensor, k: Tensor, v: Tensor, *, scale: float,
                   dropout: float = 0.0, seed: int = 0, mode: str = "sar",
                   tile_rows: Optional[int] = None, wire: Optional[Wire] = None,
                   depth: Optional[int] = None) -> Tensor:
    """Softmax attention of this rank's queries over every node's keys and values.

    Args:
        graph: the partitioned graph (only its ranks and node ranges are read).
        q, k: ``[n_r, H, d]`` this rank's query and key rows (``n_r`` = nodes it owns).
        v: ``[n_r, H, d_v]`` its value rows.
        scale: multiplier of the scores ``<q_i, k_j>`` (``d ** -0.5`` in multi-head attention).
        dropout: attention dropout probability (applied to the normalised weights).
        seed: the dropout draw's seed (the same on every rank; the caller draws it once per
            forward call).
        mode: ``"sar"`` (backward fetches remote keys and values again), ``"sa"`` (keeps them
            from forward) or ``"halo"`` (gathers all of them, dense attention with autograd).
        tile_rows: queries and keys per tile (``None``: about ``2**21`` scores per tile).
        wire: its ``label`` names the traffic in ``comm.traffic`` (no compression).
        depth: remote blocks fetched ahead of the one being computed (``None``: 1 where the
            transport moves data in the background, else 0); each holds ``n_s H (d + d_v)``
            numbers more.

    Returns:
        ``[n_r, H, d_v]``: row ``i`` is ``sum_j softmax_j(<q_i, k_j> scale) v_j`` over all
        ``N`` nodes of the graph.
    """
    wire = NO_WIRE if wire is None else wire
    _check(graph, q, k, v, scale, dropout, mode, tile_rows, wire)
    if depth is not None and (not isinstance(depth, int) or depth < 0):
        raise ValueError(f"ring_attention: depth must be a non-negative integer or None "
                         f"(got {depth!r})")
    if tile_rows is None:
        tile_rows = max(1, int(math.sqrt(DEFAULT_TILE_ELEMENTS / max(q.shape[1], 1))))
    drop = (float(dropout), int(seed)) if dropout > 0.0 else None
    if mode == "halo":
        keys = _GatherRows.apply(graph, wire.label, k, v)
        zmask = None
        if drop is not None:
            ids = node_ids_of(graph)
            zmask = dropout_tile(ids[graph.rank], torch.cat(ids), q.shape[1], *drop, q.dtype)
        return dense_attention(q, keys[0], keys[1], scale, zmask)
    return RingAttention.apply(graph, q, k, v, float(scale), mode, tile_rows, wire.label, drop,
                               depth)


def dense_attention(q: Tensor, k: Tensor, v: Tensor, scale: float,
                    drop: Optional[Tensor] = None) -> Tensor:
    """Plain attention with autograd (the halo baseline): ``[n_q, H, d_v]``; ``drop``
    ``[n_q, H, n_k]``: dropout multipliers of the normalised weights."""
    a = torch.softmax(torch.einsum("qhd,khd->qhk", q, k) * scale, dim=-1)
    if drop is not None:
        a = a * drop
    return torch.einsum("qhk,khe->qhe", a, v)


def dropout_tile(q_ids: Tensor, k_ids: Tensor, heads: int, p: float, seed: int,
                 dtype: torch.dtype) -> Tensor:
    """``[Tq, H, Tk]`` dropout multipliers (0 or ``1 / (1 - p)``) of queries ``q_ids`` and keys
    ``k_ids`` (original ids): the fused GAT kernels' draw with source = key, destination =
    query."""
    from pyg_sar.ops import gat_dropout_mask
    tq, tk = q_ids.numel(), k_ids.numel()
    src = k_ids.repeat(tq)
    dst = q_ids.repeat_interleave(tk)
    mask = gat_dropout_mask(src, dst, heads, p, seed, dtype)  # [tq * tk, H]
    return mask.view(tq, tk, heads).permute(0, 2, 1).to(q_ids.device)


def node_ids_of(graph: DistGraph) -> list[Tensor]:
    """Original id of every node of every rank (``DistGraph.node_ids``, else the new ids),
    indexed by rank: all rows, exchanged once over the ring (collective, not in the ledger),
    then cached on the graph."""
    def build() -> list[Tensor]:
        world, rank = graph.world_size, graph.rank
        own = graph.node_ids
        if own is None:
            own = graph.node_offsets[rank] + torch.arange(_rows_of(graph, rank),
                                                          device=graph.device)
        own = own.to(torch.long).view(-1, 1)
        ids = [own.new_zeros(0)] * world
        for step in BlockWalk(ring_view(graph), [own], "sar", None, every_block=True).forward():
            ids[step.src_rank] = step.rows[0].view(-1)
        return ids
    return graph.cached(("ring_attention_node_ids",), build)


def _rows_of(graph: DistGraph, rank: int) -> int:
    return graph.node_offsets[rank + 1] - graph.node_offsets[rank]


def ring_view(graph: DistGraph) -> GraphView:
    """The view global attention walks (:class:`~pyg_sar.core.walk.BlockWalk` with
    ``every_block``): block ``s`` holds no edges but all ``n_s`` rows of rank ``s``, so step
    ``k`` of the walk fetches every row of rank ``(r + k) % P`` and the backward walk returns
    their gradients to it. Built once per graph and cached on it."""
    def build() -> GraphView:
        world, rank, n, dev = graph.world_size, graph.rank, graph.num_nodes, graph.device
        none = torch.zeros(0, dtype=torch.long, device=dev)
        rowptr = torch.zeros(n + 1, dtype=torch.long, device=dev)
        blocks = [Block(s, rowptr, none, _rows_of(graph, s), 0, None, _row=none)
                  for s in range(world)]
        every_row = torch.arange(n, device=dev)
        send = [none if q == rank else every_row for q in range(world)]
        everyone = DistGraph(rank, world, graph.node_offsets, blocks, send,
                             torch.zeros(n, dtype=torch.long, device=dev), graph.context,
                             graph.node_ids)
        return stored_view(everyone)
    return graph.cached(("global_attention_ring_view",), build)


def _walk(graph: DistGraph, k: Tensor, v: Tensor, mode: str, label: Optional[str],
          depth: Optional[int]) -> BlockWalk:
    """The ring walk over every rank's keys and values (mode ``"sa"`` keeps what crossed)."""
    return BlockWalk(ring_view(graph), [k, v], mode, depth, Wire(label=label), every_block=True)


def _tiles(n: int, size: int):
    for start in range(0, n, size):
        yield start, min(n, start + size)


class RingAttention(torch.autograd.Function):
    """Forward and backward of :func:`ring_attention` in modes ``"sar"`` and ``"sa"``."""

    @staticmethod
    def forward(ctx, graph: DistGraph, q: Tensor, k: Tensor, v: Tensor, scale: float,
                mode: str, tile: int, label: Optional[str],
                drop: Optional[tuple[float, int]], depth: Optional[int]) -> Tensor:
        ctx.graph, ctx.scale, ctx.mode, ctx.tile, ctx.label = graph, scale, mode, tile, label
        ctx.drop, ctx.depth = drop, depth
        ctx.fused = _fused_ok(q, k, v, drop)
        ctx.walk = walk = _walk(graph, k, v, mode, label, depth)
        if ctx.fused:
            out, lse = _fused_forward(walk, q, scale)
            ctx.save_for_backward(q, k, v, out, lse)
            return out
        wide = accumulate_dtype(torch.promote_types(q.dtype, v.dtype))
        n, heads, dv = v.shape
        m = q.new_full((n, heads), float("-inf"), dtype=wide)
        l = q.new_zeros((n, heads), dtype=wide)
        acc = q.new_zeros((n, heads, dv), dtype=wide)
        qw = q.to(wide) * scale
        ids = node_ids_of(graph) if drop is not None else None
        for walked in walk.forward():
            step, (ks, vs) = walked.k, walked.rows
            if ks.shape[0] == 0 or n == 0:
                continue
            ks, vs = ks.to(wide), vs.to(wide)
            for q0, q1 in _tiles(n, tile):
                for k0, k1 in _tiles(ks.shape[0], tile):
                    s = torch.einsum("qhd,khd->qhk", qw[q0:q1], ks[k0:k1])
                    m_old = m[q0:q1]
                    m_new = torch.maximum(m_old, s.amax(-1))
                    # exp(-inf - -inf) is NaN: a row without scores yet keeps a zero scale
                    resc = torch.where(torch.isinf(m_new), torch.zeros_like(m_new),
                                       torch.exp(m_old - m_new))
                    p = torch.exp(s - m_new.unsqueeze(-1))
                    l[q0:q1] = l[q0:q1] * resc + p.sum(-1)
                    if drop is not None:  # after the denominator: it sums undropped weights
                        p = p * _tile_mask(graph, ids, step, q0, q1, k0, k1, drop, heads,
                                           wide)
                    acc[q0:q1] = acc[q0:q1] * resc.unsqueeze(-1) + torch.einsum(
                        "qhk,khe->qhe", p, vs[k0:k1])
                    m[q0:q1] = m_new
        out_wide = acc / torch.where(l > 0, l, torch.ones_like(l)).unsqueeze(-1)
        lse = m + torch.log(l)
        ctx.save_for_backward(q, k, v, out_wide, lse)
        return out_wide.to(torch.promote_types(q.dtype, v.dtype))

    @staticmethod
    def backward(ctx, grad_out: Tensor):
        q, k, v, out, lse = ctx.saved_tensors
        graph, scale, tile = ctx.graph, ctx.scale, ctx.tile
        wide, drop = out.dtype, ctx.drop
        ids = node_ids_of(graph) if drop is not None else None
        n, heads = q.shape[0], q.shape[1]
        go = grad_out.to(wide)
        big_d = None if ctx.fused else (go * out).sum(-1)  # [n, H]
        qw = q.to(wide)
        dq = torch.zeros_like(qw)
        dk = torch.zeros(k.shape, dtype=wide, device=k.device)
        dv = torch.zeros(v.shape, dtype=wide, device=v.device)
        walk, ctx.walk = ctx.walk, None
        # the gradients of this rank's rows that the other ranks return are added here
        for walked in walk.backward([dk, dv], kept=walk.kept):
            step, (ks, vs) = walked.k, walked.rows
            ksw, vsw = ks.to(wide), vs.to(wide)
            dks, dvs = torch.zeros_like(ksw), torch.zeros_like(vsw)
            if ctx.fused:
                if n and ks.shape[0]:
                    dqs, dks, dvs = _fused_step_backward(go, qw, ksw, vsw, out, lse, scale)
                    dq += dqs
            elif n:
                for q0, q1 in _tiles(n, tile):
                    qt, got = qw[q0:q1], go[q0:q1]
                    for k0, k1 in _tiles(ksw.shape[0], tile):
                        kt, vt = ksw[k0:k1], vsw[k0:k1]
                        s = torch.einsum("qhd,khd->qhk", qt, kt) * scale
                        p = torch.exp(s - lse[q0:q1].unsqueeze(-1))
                        dp = torch.einsum("qhe,khe->qhk", got, vt)
                        pz = p
                        if drop is not None:  # the forward's mask, drawn again
                            z = _tile_mask(graph, ids, step, q0, q1, k0, k1, drop, heads, wide)
                            pz, dp = p * z, dp * z
                        dvs[k0:k1] += torch.einsum("qhk,qhe->khe", pz, got)
                        ds = p * (dp - big_d[q0:q1].unsqueeze(-1)) * scale
                        dq[q0:q1] += torch.einsum("qhk,khd->qhd", ds, kt)
                        dks[k0:k1] += torch.einsum("qhk,qhd->khd", ds, qt)
            if step == 0:
                dk += dks
                dv += dvs
            else:  # dK_s, dV_s go back to their owner (r + step), in k's and v's dtype
                walk.give_back(walked, [dks, dvs])
        return (None, dq.to(q.dtype), dk.to(k.dtype), dv.to(v.dtype), None, None, None, None,
                None, None)


def _fused_ok(q: Tensor, k: Tensor, v: Tensor, drop: Optional[tuple[float, int]]) -> bool:
    """Whether forward and backward run torch's fused CPU attention per ring step: no dropout
    (the fused kernel's own dropout is not our mask), CPU float32 / float64 (the kernel keeps
    the input dtype; bfloat16 / float16 keep the tiled path's float32 accumulation), q, k, v of
    one dtype, ``d_v == d`` (the kernel's requirement), and a torch that has the kernels."""
    return (USE_FUSED and drop is None and _FLASH_CPU is not None
            and _FLASH_CPU_BACKWARD is not None
            and all(t.device.type == "cpu" for t in (q, k, v))
            and q.dtype in (torch.float32, torch.float64) and k.dtype == v.dtype == q.dtype
            and v.shape[-1] == q.shape[-1] and q.shape[-1] > 0)


def _bhnd(t: Tensor) -> Tensor:
    """``[n, H, d]`` as the kernels' ``[1, H, n, d]`` (a view)."""
    return t.transpose(0, 1).unsqueeze(0)


def _fused_forward(walk: BlockWalk, q: Tensor, scale: float) -> tuple[Tensor, Tensor]:
    """The ring with one fused kernel call per step: step ``s`` gives ``out_s`` and
    ``lse_s`` over block ``s``'s keys; blocks merge as ``lse = logaddexp(lse, lse_s)``,
    ``out = out exp(lse_old - lse) + out_s exp(lse_s - lse)`` (exact). Returns ``out
    [n, H, d]`` and ``lse [1, H, n]`` (mode ``sa``: the walk keeps the remote blocks)."""
    n = q.shape[0]
    out4 = lse = None
    q4 = _bhnd(q)
    v = walk.src[1]
    for walked in walk.forward():
        ks, vs = walked.rows
        if ks.shape[0] == 0 or n == 0:
            continue
        o_s, lse_s = _FLASH_CPU(q4, _bhnd(ks), _bhnd(vs), 0.0, False, scale=scale)
        if out4 is None:
            out4, lse = o_s, lse_s
            continue
        new = torch.logaddexp(lse, lse_s)
        out4 = (out4 * torch.exp(lse - new).unsqueeze(-1)
                + o_s * torch.exp(lse_s - new).unsqueeze(-1))
        lse = new
    if out4 is None:  # no rows here (n == 0): every block was skipped
        return q.new_zeros(v.shape), q.new_zeros((1, q.shape[1], n))
    return out4[0].transpose(0, 1), lse


def _fused_step_backward(go: Tensor, q: Tensor, ks: Tensor, vs: Tensor, out: Tensor,
                         lse: Tensor, scale: float) -> tuple[Tensor, Tensor, Tensor]:
    """``dQ`` contribution and ``dK_s, dV_s`` of one ring step (``[rows, H, d]``): the fused
    backward given the GLOBAL output and ``lse`` recomputes this block's probabilities as
    ``exp(S - lse)`` and ``D = rowsum(dO O)``, i.e. the exact FlashAttention-2 terms."""
    dq4, dk4, dv4 = _FLASH_CPU_BACKWARD(_bhnd(go), _bhnd(q), _bhnd(ks), _bhnd(vs), _bhnd(out),
                                        lse, 0.0, False, scale=scale)
    return (dq4[0].transpose(0, 1), dk4[0].transpose(0, 1), dv4[0].transpose(0, 1))


def _tile_mask(graph: DistGraph, ids: list[Tensor], step: int, q0: int, q1: int, k0: int,
               k1: int, drop: tuple[float, int], heads: int, dtype: torch.dtype) -> Tensor:
    """Dropout multipliers of queries ``q0:q1`` x keys ``k0:k1`` of step ``step``'s block."""
    src = (graph.rank + step) % graph.world_size
    return dropout_tile(ids[graph.rank][q0:q1], ids[src][k0:k1], heads, *drop,
                        dtype)



class _GatherRows(torch.autograd.Function):
    """All ``N`` rows of ``k`` and ``v`` in owner order (halo mode), gathered by the ring walk;
    backward returns each rank's gradient rows to their owner, which adds them."""

    @staticmethod
    def forward(ctx, graph: DistGraph, label: Optional[str], k: Tensor, v: Tensor):
        parts: list = [None] * graph.world_size
        walk = _walk(graph, k, v, "sar", label, None)
        for walked in walk.forward():
            parts[walked.src_rank] = walked.rows
        ctx.walk = walk
        ctx.offsets = graph.node_offsets
        return (torch.cat([p[0] for p in parts]), torch.cat([p[1] for p in parts]))

    @staticmethod
    def backward(ctx, grad_k: Tensor, grad_v: Tensor):
        walk, ctx.walk = ctx.walk, None
        off = ctx.offsets
        r = walk.graph.rank
        dk = grad_k[off[r]:off[r + 1]].clone()
        dv = grad_v[off[r]:off[r + 1]].clone()
        for walked in walk.backward([dk, dv], need_rows=False):
            s = walked.src_rank
            if s != r:
                walk.give_back(walked, [grad_k[off[s]:off[s + 1]], grad_v[off[s]:off[s + 1]]])
        return None, None, dk, dv
