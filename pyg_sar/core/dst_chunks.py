"""Destination chunks: a propagate whose layer normalises over each node's in-edges inside
``message`` (TransformerConv, HGTConv, RGATConv, ... call PyG's ``softmax`` over ``index``).

The block walk (:mod:`pyg_sar.core.sar`) gives a node's in-edges one source rank at a time, so a
normalisation inside ``message`` would see only part of them. Here the rank's destination nodes
are cut instead into ``P`` contiguous chunks of about equal in-edge counts, and each chunk is
computed with **all** of its nodes' in-edges at once: the layer's own ``message`` and
``aggregate`` (PyG's code, unchanged) over the chunk's edges, with the source rows the chunk
reads fetched from their owners by one all-to-all per source tensor. A rank holds one chunk's
rows and per-edge tensors at a time, as the block walk holds one block's.

Backward (mode ``"sar"``): chunk by chunk, the rows are fetched again, the chunk is recomputed
under autograd with the forward's RNG and autocast state (dropout replays exactly), and the
gradients of the fetched rows go back to their owners, which add them to their own rows. Mode
``"sa"`` keeps the fetched payloads of the forward instead of fetching again.

Which rows a chunk reads from which owner is fixed by the partition; it is worked out once per
view (one all-to-all of the requested row positions, :func:`chunk_plan`) and cached on the
graph. Every rank runs the same number of chunks and the same collectives in the same order,
also for empty chunks.

Traffic is labelled and compressed as the block walk's (:class:`~pyg_sar.core.exchange.Wire`):
the message of tensor ``t`` in chunk ``c`` from ``owner`` to ``user`` is keyed with tensor index
``t + CHUNK_KEY_STRIDE * (c + 1)``, so each chunk's message has a key of its own, the same in
the forward fetch and its re-fetch. A remote row read by several chunks of a rank crosses once
per chunk.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Optional, Protocol

import torch
from torch import Tensor

from pyg_sar.core.exchange import NO_WIRE, Wire
from pyg_sar.core.halo import _buffer, _decode, _encode, counted_all_to_all, halo_offsets
from pyg_sar.core.precision import AutocastState
from pyg_sar.core.sar import _as_dtypes, _Replay, _rng_state, _zeros_acc
from pyg_sar.core.views import GraphView, ViewBlock
from pyg_sar.graph import DistGraph

# Compression keys of chunk messages: tensor index t of chunk c is keyed t + STRIDE * (c + 1),
# apart from the block walk's and halo mode's keys (t < STRIDE).
CHUNK_KEY_STRIDE = 1 << 16


class ChunkProgram(Protocol):
    """Computes one chunk's output rows: the layer's messages over the chunk's edges,
    aggregated into the chunk's destination nodes."""

    def chunk(self, block: ViewBlock, src: Sequence[Tensor], dst: Sequence[Tensor],
              edge: Sequence[Tensor]) -> Tensor: ...


@dataclass
class Chunk:
    """Destination nodes ``[start, stop)`` of the rank with all their in-edges.

    ``block`` is the chunk's CSR: rows are chunk-local destinations, columns index the
    chunk's source rows ``[local rows read; fetched rows]``. ``edges`` are the view edge ids
    of the block's edges; ``local_src`` the rank's own source rows the chunk reads;
    ``recv_counts`` how many rows it fetches from each rank (in rank order, as they follow
    the local rows); ``send_index`` the rank's rows that the other ranks' chunks of the same
    index fetch, ``send_counts[q]`` of them for rank ``q``, in rank order."""

    start: int
    stop: int
    block: ViewBlock
    edges: Tensor
    local_src: Tensor
    recv_counts: list[int]
    send_index: Tensor
    send_counts: list[int]


def _bounds(deg: Tensor, count_: int) -> list[int]:
    """``count_ + 1`` boundaries of contiguous destination ranges of about equal in-edges
    (``deg``: every destination's in-edges)."""
    before = torch.cumsum(deg, 0) - deg  # in-edges of the nodes before each node
    total = max(int(deg.sum()), 1)
    which = torch.clamp(before * count_ // total, max=count_ - 1)
    starts = torch.searchsorted(which, torch.arange(count_, device=deg.device))
    return [*(int(s) for s in starts.cpu()), int(deg.numel())]


def _requests(graph: DistGraph, uniq: Tensor, offsets: list[int]) -> tuple[Tensor, list[Tensor]]:
    """The rank's own source rows among ``uniq`` (sorted ids over [local rows; halo rows]),
    and for every rank the positions in its halo rows of the rest."""
    n_src = graph.num_src_nodes
    local = uniq[uniq < n_src]
    asked = []
    for q, b in enumerate(graph.blocks):
        if q == graph.rank:
            asked.append(uniq[:0])
            continue
        lo = offsets[q]
        inside = (uniq >= lo) & (uniq < lo + b.num_src)
        asked.append(uniq[inside] - lo)
    return local, asked


def _build(view: GraphView, num_chunks: int) -> list[Chunk]:
    graph = view.graph
    world, me, device = graph.world_size, graph.rank, graph.device
    offsets = halo_offsets(graph)
    edge_index = view.edge_index(offsets)
    src, dst = edge_index[0], edge_index[1]
    order = torch.argsort(dst, stable=True)
    deg = torch.bincount(dst, minlength=graph.num_nodes)
    bounds = _bounds(deg, num_chunks)
    edge_at = [0, *torch.cumsum(deg, 0).tolist()]  # first sorted edge of every node
    parts = []
    for c in range(num_chunks):
        a, b = bounds[c], bounds[c + 1]
        edges = order[edge_at[a]:edge_at[b]]
        uniq, col = torch.unique(src.index_select(0, edges), sorted=True, return_inverse=True)
        row = dst.index_select(0, edges) - a
        rowptr = torch.zeros(b - a + 1, dtype=torch.long, device=device)
        rowptr[1:] = torch.cumsum(torch.bincount(row, minlength=b - a), 0)
        local, asked = _requests(graph, uniq, offsets)
        block = ViewBlock(me, rowptr, col, row, int(uniq.numel()), 0)
        parts.append((a, b, block, edges, local, asked))
    # Tell every owner which of its rows each chunk reads: request counts [peer, chunk], then
    # the positions (in the order the owner sends its halo rows, ``send_idx``).
    asked_counts = torch.tensor([[int(p[5][q].numel()) for p in parts] for q in range(world)],
                                dtype=torch.long, device=device)
    got_counts = torch.empty_like(asked_counts)
    comm = graph.context.comm if world > 1 else None
    if comm is not None:
        comm.all_to_all_single(got_counts.view(-1), asked_counts.view(-1),
                               [num_chunks] * world, [num_chunks] * world)
    else:
        got_counts.copy_(asked_counts)
    send = torch.cat([p[5][q] for q in range(world) for p in parts])
    got = send
    if comm is not None:
        got = send.new_empty(int(got_counts.sum()))
        comm.all_to_all_single(got, send, got_counts.sum(1).tolist(),
                               asked_counts.sum(1).tolist())
    # positions[q][c]: what rank q's chunk c asks of this rank, as rows of this rank
    positions = [[graph.send_idx[q].to(device).index_select(0, p)
                  for p in part.split(got_counts[q].tolist())]
                 for q, part in enumerate(got.split(got_counts.sum(1).tolist()))]
    return [Chunk(a, b, block, edges, local, [int(t.numel()) for t in asked],
                  torch.cat([positions[q][c] for q in range(world)]),
                  got_counts[:, c].tolist())
            for c, (a, b, block, edges, local, asked) in enumerate(parts)]


def chunk_plan(view: GraphView) -> list[Chunk]:
    """The view's destination chunks (one per rank), cached on the graph. Collective the
    first time: every rank must ask for the same views in the same order."""
    return view.graph.cached_for(view, ("dst_chunks",),
                                 lambda: _build(view, view.graph.world_size))


@dataclass
class ChunkedPropagation:
    """Everything one chunked propagate call needs besides its tensors."""

    view: GraphView
    program: ChunkProgram
    mode: str = "sar"
    replay_rng: bool = False
    wire: Wire = NO_WIRE


def _key_tensor(tensor: int, chunk: int) -> int:
    return tensor + CHUNK_KEY_STRIDE * (chunk + 1)


def _fetch(graph: DistGraph, wire: Wire, chunk: Chunk, c: int, tensor: int, x: Tensor,
           label: str) -> Tensor:
    """The payload of the rows of ``x`` (a source tensor) that chunk ``c`` reads from the
    other ranks, as received (decode with :func:`_decode_fetched`)."""
    me, codec = graph.rank, wire.codec_of(tensor, "rows")
    key = _key_tensor(tensor, c)
    rows = x.index_select(0, chunk.send_index)
    send = _encode(codec, rows, chunk.send_counts, key, lambda q: (me, q, "rows"))
    out = _buffer(codec, x, sum(chunk.recv_counts))
    counted_all_to_all(graph, out, send, chunk.recv_counts, chunk.send_counts,
                       (wire.label, label))
    return out


def _decode_fetched(wire: Wire, chunk: Chunk, c: int, tensor: int, payload: Tensor,
                    like: Tensor, me: int) -> Tensor:
    codec = wire.codec_of(tensor, "rows")
    return _decode(codec, payload, chunk.recv_counts, like, _key_tensor(tensor, c),
                   lambda s: (s, me, "rows"))


def _give_back(graph: DistGraph, wire: Wire, chunk: Chunk, c: int, tensor: int, grad: Tensor,
               into: Tensor) -> None:
    """Send the gradients of the fetched rows to their owners; add the ones received for
    this rank's rows into ``into``."""
    me, codec = graph.rank, wire.codec_of(tensor, "grads")
    key = _key_tensor(tensor, c)
    send = _encode(codec, grad.contiguous(), chunk.recv_counts, key, lambda s: (s, me, "grads"))
    back = _buffer(codec, grad, sum(chunk.send_counts))
    counted_all_to_all(graph, back, send, chunk.send_counts, chunk.recv_counts,
                       (wire.label, "grads"))
    back = _decode(codec, back, chunk.send_counts, grad, key, lambda q: (me, q, "grads"))
    into.index_add_(0, chunk.send_index, back.to(into.dtype))


def _chunk_rows(graph: DistGraph, wire: Wire, chunk: Chunk, c: int, src: Sequence[Tensor],
                payloads: Optional[Sequence[Tensor]], label: str) -> tuple[list, list, list]:
    """Every source tensor's local and fetched rows of chunk ``c`` (fetching unless the
    payloads are given), and the payloads as received."""
    local, fetched, got = [], [], []
    for i, x in enumerate(src):
        payload = (payloads[i] if payloads is not None
                   else _fetch(graph, wire, chunk, c, i, x, label) if graph.world_size > 1
                   else x[:0])
        got.append(payload)
        local.append(x.index_select(0, chunk.local_src))
        fetched.append(_decode_fetched(wire, chunk, c, i, payload, x, graph.rank)
                       if graph.world_size > 1 else x[:0])
    return local, fetched, got


_LEADING = 4  # (prop, n_src, n_dst, n_edge) before the tensors


class DstChunkPropagate(torch.autograd.Function):
    """Chunked propagate over the rank's destination nodes; see the module docstring."""

    @staticmethod
    def forward(ctx, prop: ChunkedPropagation, n_src: int, n_dst: int, n_edge: int,
                *inputs: Tensor):
        src = list(inputs[:n_src])
        dst = list(inputs[n_src:n_src + n_dst])
        edge = list(inputs[n_src + n_dst:n_src + n_dst + n_edge])
        graph = prop.view.graph
        chunks = chunk_plan(prop.view)
        outs, rng, kept = [], [], []
        for c, ch in enumerate(chunks):
            local, fetched, got = _chunk_rows(graph, prop.wire, ch, c, src, None, "rows")
            if prop.mode == "sa":
                kept.append(got)
            rows = [torch.cat([lo, fe]) for lo, fe in zip(local, fetched)]
            rng.append(_rng_state(graph.device) if prop.replay_rng else None)
            outs.append(prop.program.chunk(ch.block, rows, [d[ch.start:ch.stop] for d in dst],
                                           [e.index_select(0, ch.edges) for e in edge]))
        out = torch.cat(outs) if len(outs) > 1 else outs[0]
        if out._is_view():
            out = out.detach()
        ctx.prop, ctx.counts, ctx.rng = prop, (n_src, n_dst, n_edge), rng
        ctx.autocast = AutocastState.capture()
        # mode "sa": the payloads as received, chunk by chunk (n_src per chunk)
        ctx.save_for_backward(*inputs, *(t for got in kept for t in got))
        return out

    @staticmethod
    def backward(ctx, grad_out: Tensor):
        prop: ChunkedPropagation = ctx.prop
        n_src, n_dst, n_edge = ctx.counts
        n_in = len(ctx.needs_input_grad) - _LEADING
        inputs, kept = ctx.saved_tensors[:n_in], ctx.saved_tensors[n_in:]
        src = list(inputs[:n_src])
        dst = list(inputs[n_src:n_src + n_dst])
        edge = list(inputs[n_src + n_dst:n_src + n_dst + n_edge])
        params = list(inputs[n_src + n_dst + n_edge:])
        needs = ctx.needs_input_grad[_LEADING:]
        grad_src = [_zeros_acc(t) if n else None for t, n in zip(src, needs[:n_src])]
        grad_dst = [_zeros_acc(t) if n else None
                    for t, n in zip(dst, needs[n_src:n_src + n_dst])]
        grad_edge = [_zeros_acc(t) if n else None
                     for t, n in zip(edge, needs[n_src + n_dst:n_src + n_dst + n_edge])]
        grad_par = [_zeros_acc(t) if n else None
                    for t, n in zip(params, needs[n_src + n_dst + n_edge:])]
        graph, wire = prop.view.graph, prop.wire
        grad_out = grad_out.contiguous()
        for c, ch in enumerate(chunk_plan(prop.view)):
            payloads = kept[c * n_src:(c + 1) * n_src] if prop.mode == "sa" else None
            local, fetched, _ = _chunk_rows(graph, wire, ch, c, src, payloads, "refetch")
            with torch.enable_grad():
                leaves = _Leaves(local, fetched, grad_src,
                                 [d[ch.start:ch.stop] for d in dst], grad_dst,
                                 [e.index_select(0, ch.edges) for e in edge], grad_edge)
                with _Replay(ctx.rng[c], graph.device), ctx.autocast.replay():
                    out = prop.program.chunk(ch.block, leaves.rows(), leaves.dst,
                                             leaves.edge)
                wrt = leaves.wrt() + [p for p, gr in zip(params, grad_par) if gr is not None]
                grads = (list(torch.autograd.grad(out, wrt, grad_out[ch.start:ch.stop],
                                                  allow_unused=True))
                         if wrt and out.requires_grad else [None] * len(wrt))
            _add_grads(graph, wire, ch, c, leaves, grads, grad_src, grad_dst, grad_edge,
                       grad_par)
        return (*(None,) * _LEADING, *_as_dtypes(grad_src, src), *_as_dtypes(grad_dst, dst),
                *_as_dtypes(grad_edge, edge), *_as_dtypes(grad_par, params))


class _Leaves:
    """One chunk's inputs as autograd leaves (those whose gradient is needed require it)."""

    def __init__(self, local, fetched, grad_src, dst, grad_dst, edge, grad_edge) -> None:
        def leaf(t: Tensor, need) -> Tensor:
            return t.detach().requires_grad_(need is not None)
        self.local = [leaf(t, g) for t, g in zip(local, grad_src)]
        self.fetched = [leaf(t, g) for t, g in zip(fetched, grad_src)]
        self.dst = [leaf(t, g) for t, g in zip(dst, grad_dst)]
        self.edge = [leaf(t, g) for t, g in zip(edge, grad_edge)]

    def rows(self) -> list[Tensor]:
        return [torch.cat([lo, fe]) for lo, fe in zip(self.local, self.fetched)]

    def wrt(self) -> list[Tensor]:
        return [t for t in (*self.local, *self.fetched, *self.dst, *self.edge)
                if t.requires_grad]


def _add_grads(graph: DistGraph, wire: Wire, ch: Chunk, c: int, leaves: _Leaves,
               grads: list, grad_src, grad_dst, grad_edge, grad_par) -> None:
    """Add one chunk's gradients into the buffers; the fetched rows' go to their owners
    (every rank sends for every source tensor whose gradient is needed, also zeros)."""
    it = iter(grads)
    got = {id(t): next(it) for t in leaves.wrt()}
    for i, acc in enumerate(grad_src):
        if acc is None:
            continue
        g_local = got[id(leaves.local[i])]
        if g_local is not None:
            acc.index_add_(0, ch.local_src, g_local.to(acc.dtype))
        g_fetched = got[id(leaves.fetched[i])]
        if g_fetched is None:
            g_fetched = torch.zeros_like(leaves.fetched[i])
        if graph.world_size > 1:
            _give_back(graph, wire, ch, c, i, g_fetched, acc)
    for acc, t in zip(grad_dst, leaves.dst):
        g = got.get(id(t)) if acc is not None else None
        if g is not None:
            acc[ch.start:ch.stop] += g.to(acc.dtype)
    for acc, t in zip(grad_edge, leaves.edge):
        g = got.get(id(t)) if acc is not None else None
        if g is not None:
            acc.index_add_(0, ch.edges, g.to(acc.dtype))
    for acc in grad_par:
        if acc is not None:
            g = next(it)
            if g is not None:
                acc.add_(g.to(acc.dtype))


def dst_chunk_propagate(prop: ChunkedPropagation, src: Sequence[Tensor], dst: Sequence[Tensor],
                        edge: Sequence[Tensor], params: Sequence[Tensor]) -> Tensor:
    """Run one chunked propagate; differentiable in all tensors given."""
    return DstChunkPropagate.apply(prop, len(src), len(dst), len(edge), *src, *dst, *edge,
                                   *params)
