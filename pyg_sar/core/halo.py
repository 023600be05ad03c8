"""Halo mode: one autograd-aware all-to-all per tensor fetches every remote row a rank needs.

The vanilla domain-parallel baseline: the fetched halo stays in the autograd graph until
backward, so its memory does not fall with P on dense graphs.

With a compressing :class:`~pyg_sar.core.exchange.Wire`, every peer's chunk is encoded with
the key of its message (owner, user, tensor), as the block walk's fetcher and returner do, and
decoded on receipt; gradients of the halo rows go back the same way (direction ``"grads"``,
which the codec may leave raw: ``Compressor(directions=...)``).
Tensors the wire marks ``exact`` (attention logits) go raw (:meth:`Wire.codec_of`). A wire
dtype alone (no codec) needs no key: all peers' chunks are cast at once.
"""
from __future__ import annotations

import time
from typing import Optional

import torch
from torch import Tensor

from pyg_sar.compression.transport import Transport
from pyg_sar.core.exchange import NO_WIRE, Wire, count
from pyg_sar.graph import DistGraph


def halo_offsets(graph: DistGraph) -> list[int]:
    """Row offset of every source rank's rows in ``[local rows; halo rows]`` (by source rank;
    the local rows are those of the source node set, ``num_src_nodes``)."""
    offsets, at = [], graph.num_src_nodes
    for s, b in enumerate(graph.blocks):
        offsets.append(0 if s == graph.rank else at)
        if s != graph.rank:
            at += b.num_src
    return offsets


def _encode(codec: Optional[Transport], rows: Tensor, counts: list[int], tensor: int,
            keys) -> Tensor:
    """``rows`` (chunks of ``counts`` rows, one per peer) encoded chunk by chunk; ``keys(q)``
    is the (owner, user, direction) of peer ``q``'s chunk."""
    if codec is None or codec.is_raw(rows):
        return rows.contiguous()
    if not codec.keyed:
        return codec.encode(rows, None).contiguous()
    chunks = rows.split(counts)
    return torch.cat([codec.encode(c, codec.key(tensor, *keys(q)))
                      for q, c in enumerate(chunks)]).contiguous()


def _encode_rows(codec: Optional[Transport], x: Tensor, graph: DistGraph, tensor: int,
                 keys) -> Tensor:
    """The rows of ``x`` each peer reads, encoded peer by peer without first gathering them
    at full size (``keys`` as in :func:`_encode`)."""
    if codec is None or codec.is_raw(x):
        return x.index_select(0, graph.send_index())
    if not codec.keyed:
        return codec.encode_rows(x, graph.send_index(), None).contiguous()
    return torch.cat([codec.encode_rows(x, idx, codec.key(tensor, *keys(q)))
                      for q, idx in enumerate(graph.send_idx)]).contiguous()


def _decode(codec: Optional[Transport], payload: Tensor, counts: list[int], like: Tensor,
            tensor: int, keys) -> Tensor:
    """Rows shaped like ``like``'s from the peers' chunks of ``payload``, each decoded
    straight into its place in the output."""
    if codec is None or codec.is_raw(like):
        return payload
    if not codec.keyed:
        return codec.decode(payload, tuple(like.shape[1:]), like.dtype, None)
    out = like.new_empty((sum(counts), *like.shape[1:]))
    for q, (dst, chunk) in enumerate(zip(out.split(counts), payload.split(counts))):
        codec.decode_into(dst, chunk, codec.key(tensor, *keys(q)))
    return out


def counted_all_to_all(graph: DistGraph, out: Tensor, send: Tensor, out_counts: list[int],
                       in_counts: list[int], traffic: tuple[Optional[str], str]) -> None:
    """One all-to-all of ``send`` (``in_counts`` rows to each rank) into ``out``
    (``out_counts`` rows from each rank), its bytes and wait counted in the communicator's
    stats and, under ``traffic = (layer label, direction)``, in its ledger."""
    t = time.perf_counter()
    graph.context.comm.all_to_all_single(out, send, out_counts, in_counts)
    count(graph.context.comm, send.numel() * send.element_size(),
          out.numel() * out.element_size(), graph.world_size - 1, time.perf_counter() - t,
          traffic=traffic)


def _buffer(codec: Optional[Transport], like: Tensor, rows: int) -> Tensor:
    wire = like if codec is None else codec.wire_like(like)
    return wire.new_empty((rows, *wire.shape[1:]))


class _HaloFetch(torch.autograd.Function):
    @staticmethod
    def forward(ctx, graph: DistGraph, wire: Wire, tensor: int, x: Tensor) -> Tensor:
        me, codec = graph.rank, wire.codec_of(tensor, "rows")
        send = _encode_rows(codec, x, graph, tensor, lambda q: (me, q, "rows"))
        out = _buffer(codec, x, sum(graph.recv_counts))
        counted_all_to_all(graph, out, send, graph.recv_counts, graph.send_counts,
                           (wire.label, "rows"))
        # the gradients' encoding and the label, not the wire: its halo cache holds this
        # function's output (a reference cycle through ctx)
        ctx.graph, ctx.codec, ctx.label = graph, wire.codec_of(tensor, "grads"), wire.label
        ctx.tensor, ctx.num_rows = tensor, x.shape[0]
        return _decode(codec, out, graph.recv_counts, x, tensor, lambda s: (s, me, "rows"))

    @staticmethod
    def backward(ctx, grad: Tensor):
        graph: DistGraph = ctx.graph
        tensor, me, codec = ctx.tensor, graph.rank, ctx.codec
        idx = graph.send_index()
        send = _encode(codec, grad.contiguous(), graph.recv_counts, tensor,
                       lambda s: (s, me, "grads"))
        back = _buffer(codec, grad, int(idx.numel()))
        counted_all_to_all(graph, back, send, graph.send_counts, graph.recv_counts,
                           (ctx.label, "grads"))
        back = _decode(codec, back, graph.send_counts, grad, tensor, lambda q: (me, q, "grads"))
        gx = grad.new_zeros((ctx.num_rows, *grad.shape[1:])).index_add_(0, idx, back)
        return None, None, None, gx


def with_halo(graph: DistGraph, x: Tensor, wire: Wire = NO_WIRE, tensor: int = 0) -> Tensor:
    """``[x; rows of x's remote sources]``; gradients of the halo rows return to their owners.

    ``wire`` labels and compresses the traffic; ``tensor`` is ``x``'s index within the
    propagate call (its compression key). Where the wire keeps its halo rows
    (``wire.halo``), a second call for the same tensor ``x`` returns the first call's result:
    each source tensor crosses the network once per layer call.
    """
    if graph.world_size == 1:
        return x
    kept = None if wire.halo is None else wire.halo.get(tensor)
    if kept is not None and kept[0] is x:
        return kept[1]
    out = torch.cat([x, _HaloFetch.apply(graph, wire, tensor, x)], dim=0)
    if wire.halo is not None:
        wire.halo[tensor] = (x, out)
    return out
