"""Block-wise row traffic of the engine: fetch a peer's boundary rows, return gradients to owners.

Step ``k`` of the ring schedule: rank ``r`` sends rows to ``(r - k) % P`` and receives
the rows of ``(r + k) % P``; gradients travel the opposite way. Both sides know every message
size from the partition (``send_idx`` on one side, ``Block.num_src`` on the other), so empty
messages are skipped symmetrically.

A propagate call's :class:`Wire` labels its traffic in the communicator's ledger
(``comm.traffic``: bytes per layer and direction) and carries its compression, fixed at forward
time (:class:`~pyg_sar.compression.BoundCodec`): the fetcher encodes the rows it sends and
decodes what it receives, the returner does the same with gradients. A message's payload shape
depends only on the rows' count, shape and dtype and on the codec, so both sides size their
buffers alike; its random choices depend only on its key (layer, call, tensor, owner, user), so
a re-fetch sends exactly the bytes the forward fetch sent.

What is compressed is decided in one place, :meth:`Wire.codec_of`: feature tensors go through
the codec, while the tensors a propagate call marks ``exact`` (per-row scalars per head such as
GAT's attention logits ``alpha_src``, ``H`` values a row) never do: a channel codec on a ``[H]``
logit row would zero whole heads' logits on receipt, which changes the attention weights
themselves rather than adding noise to a feature. By default they are sent raw, rows and
gradients alike. A compressor made with ``logit_dtype=torch.bfloat16`` (the ``auto`` preset's
setting) casts them to bf16 in the steps where its codec is lossy for their direction
(:meth:`~pyg_sar.compression.BoundCodec.logit_dtype_of`: it compresses that direction at a
ratio above 1), and sends them raw where the codec is raw (ratio 1), so a ratio-1 schedule
stays bit-identical to no compression. Raw logits cost little next to raw features
(``1 / (C + 1)`` of a layer's traffic for ``C`` channels a head) but much next to 2-4 bit
features: on CiteSeer, a 3-layer GAT with 4 heads of 8 channels, they were 37% of ``auto``'s
bytes (16 of the 44 bytes a row of an inner layer sends on average), and bf16 logits take
``auto`` from 32.4% to 26.7% of full communication's bytes. bf16, not float16: both halve
the bytes, but a logit beyond float16's range (65504) would arrive as an infinity and turn its
node's attention into NaN without an error, while bf16 has float32's range. Its rounding (a
relative ``2**-8``) of a logit ``a`` is an error of up to ``|a| * 2**-8`` in the exponent of
the softmax, of the order of an 8-bit code's step (``1 / 255`` of a row's range) and far
below a 2- or 4-bit one, next to which it travels; the last stage of a schedule that ends raw
sends exact logits again. The cast rounds to nearest, so a re-fetch
sends the forward's bytes. Their bytes are counted in the ledger as sent. A compressor may
also compress one direction only (``Compressor(directions="rows")``: the gradients go raw,
and so do their logits, or the reverse).

Error feedback (``Compressor(error_feedback=...)``) lives entirely on the sending side, inside
the bound codec's encode (:mod:`pyg_sar.compression.feedback`): the payload's shape, the
receiver and the ledger are those of the same codec without it. A re-fetch in the same step
reads the same committed residual, so it sends the forward fetch's bytes.

A wire dtype (``SARConfig(wire_dtype=torch.bfloat16)``, :attr:`Wire.wire_dtype`) narrows the
floating-point values of every feature tensor's payload, rows and gradients, raw or after the
codec (:class:`~pyg_sar.compression.transport.Transport`); they are decoded to the tensor's own
dtype on receipt, and the ledger counts the narrower bytes actually sent. The wire dtype does
not cast the ``exact`` tensors: next to raw or bf16 features they are ``1 / (C + 1)`` of the
layer's traffic, too little to trade the logits' precision for (only a lossy codec's
``logit_dtype`` casts them, see above).
"""
from __future__ import annotations

import time
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Optional

import torch
from torch import Tensor

from pyg_sar.compression.interface import BoundCodec
from pyg_sar.compression.keys import DIRECTIONS
from pyg_sar.compression.transport import Transport
from pyg_sar.distributed.streaming import ring_peers, start_exchange
from pyg_sar.graph import DistGraph

# Gradient messages use their own tags: in backward a rank fetches rows from and returns
# gradients to the same peers, and distinct tags keep the two streams apart whatever the order in
# which the transport matches them.
ROW_TAG, GRAD_TAG = 0, 64


@dataclass(frozen=True)
class Wire:
    """How one propagate call's traffic is labelled, compressed and cast.

    Attributes:
        label: the layer's name in ``comm.traffic`` (``None``: not labelled).
        codec: the compression of its rows and gradients (``None``: none).
        exact: indices of the source tensors never encoded by the codec nor cast by the wire
            dtype (attention logits): raw, or in the codec's ``logit_dtype`` where it is
            lossy (see the module docstring).
        halo: halo mode's rows already fetched in this call, by tensor index (``None``: not
            kept): a source tensor that two steps of one layer call read (GATv2's ``x_l`` in
            its scores and its messages) crosses the network once
            (:func:`pyg_sar.core.halo.with_halo`).
    """

    label: Optional[str] = None
    codec: Optional[BoundCodec] = None
    exact: frozenset = frozenset()
    halo: Optional[dict] = field(default=None, compare=False, repr=False)
    wire_dtype: Optional[torch.dtype] = None

    @property
    def transforms(self) -> bool:
        """Whether any tensor's messages are encoded (a codec or a wire dtype)."""
        return self.codec is not None or self.wire_dtype is not None

    def codec_of(self, tensor: int, direction: str = "rows") -> Optional[Transport]:
        """The encoding of source tensor ``tensor``'s messages in ``direction`` (``"rows"``
        or ``"grads"``): the codec, where it compresses that direction
        (:meth:`BoundCodec.compresses`), then the wire dtype (``None``: raw). An ``exact``
        tensor: a cast to the codec's logit dtype where the codec is lossy for ``direction``
        (:meth:`BoundCodec.logit_dtype_of`), else raw."""
        if direction not in DIRECTIONS:
            raise ValueError(f"Wire.codec_of: direction must be one of {DIRECTIONS} "
                             f"(got {direction!r})")
        if tensor in self.exact:
            narrow = None if self.codec is None else self.codec.logit_dtype_of(direction)
            return None if narrow is None else Transport(None, narrow)
        if not self.transforms:
            return None
        codec = self.codec
        if codec is not None and not codec.compresses(direction):
            codec = None
        if codec is None and self.wire_dtype is None:
            return None
        return Transport(codec, self.wire_dtype)


NO_WIRE = Wire()


def count(comm, sent: int, recv: int, messages: int, wait_s: float = 0.0,
          traffic: Optional[tuple[Optional[str], str]] = None) -> None:
    """Add traffic to ``comm.stats`` (communicators without counters are skipped) and, for
    ``traffic = (layer, direction)`` with a layer name, to ``comm.traffic``."""
    stats = getattr(comm, "stats", None)
    if stats is not None:
        stats.bytes_sent += sent
        stats.bytes_recv += recv
        stats.messages += messages
        stats.wait_s += wait_s
    ledger = getattr(comm, "traffic", None)
    if traffic is not None and traffic[0] is not None and ledger is not None:
        ledger.add(traffic[0], traffic[1], sent, recv)


def _nbytes(t: Tensor) -> int:
    return t.numel() * t.element_size()


class _Ready:
    """A finished exchange (nothing to send or receive)."""

    def __init__(self, value: Optional[Tensor]) -> None:
        self.value = value

    def wait(self) -> Optional[Tensor]:
        return self.value


def exchange_rows(graph: DistGraph, step: int, send: Sequence[Tensor],
                  recv_like: Sequence[Tensor], recv_rows: int, reverse: bool = False,
                  traffic: Optional[tuple[Optional[str], str]] = None) -> list:
    """Start one step's exchange of several tensors (one message per tensor).

    ``send[i]`` goes to this step's destination; a buffer shaped like ``recv_like[i]`` with
    ``recv_rows`` rows is filled from this step's source. ``reverse`` swaps the two peers (the
    gradient direction). ``traffic``: ``(layer, direction)`` for the ledger.
    """
    comm = graph.context.comm
    send_to, recv_from = ring_peers(graph.rank, graph.world_size, step)
    if reverse:
        send_to, recv_from = recv_from, send_to
    pending = []
    base = GRAD_TAG if reverse else ROW_TAG
    for i, (s, like) in enumerate(zip(send, recv_like)):
        recv = like.new_empty((recv_rows, *like.shape[1:]))
        if s.shape[0] == 0 and recv_rows == 0:
            pending.append(_Ready(recv))
            continue
        pending.append(start_exchange(comm, s.contiguous() if s.shape[0] else None, send_to,
                                      recv if recv_rows else None, recv_from, tag=base + i))
        count(comm, _nbytes(s), _nbytes(recv), int(s.shape[0] > 0), traffic=traffic)
        if recv_rows == 0:
            pending[-1] = _EmptyRecv(pending[-1], recv)
    return pending


class _EmptyRecv:
    """Waits for a send-only exchange and hands back the empty receive buffer."""

    def __init__(self, pending, recv: Tensor) -> None:
        self.pending, self.recv = pending, recv

    def wait(self) -> Tensor:
        self.pending.wait()
        return self.recv


def pipeline_depth(graph: DistGraph, depth: Optional[int]) -> int:
    """The prefetch depth to use: ``depth`` if given; otherwise 1 where the transport moves
    data in the background (the fetch of step k+1 overlaps the computation of step k) and 0
    where it does not (a posted fetch would only hold its send and receive buffers)."""
    if depth is not None:
        return depth
    return 1 if getattr(graph.context.comm, "progresses_in_background", True) else 0


def tensor_ids(ids: Optional[Sequence[int]], n: int) -> list[int]:
    out = list(range(n)) if ids is None else [int(i) for i in ids]
    if len(out) != n:
        raise ValueError(f"exchange: {len(out)} tensor ids for {n} tensors")
    return out


def decode_rows(graph: DistGraph, wire: Wire, step: int, payloads: Sequence[Tensor],
                tensors: Sequence[Tensor], ids: Sequence[int]) -> list[Tensor]:
    """Rows of ``tensors`` (shape and dtype) from the payloads this rank received at ring
    step ``step``, keyed as they were sent. Decoding depends only on the payload and its key,
    so decoding a kept payload again in backward gives the forward's rows bit for bit."""
    if not wire.transforms:
        return list(payloads)
    owner, me = ring_peers(graph.rank, graph.world_size, step)[1], graph.rank
    out = []
    for p, t, i in zip(payloads, tensors, ids):
        codec = wire.codec_of(i, "rows")
        out.append(p if codec is None else
                   codec.decode(p, t.shape[1:], t.dtype, codec.key(i, owner, me)))
    return out


class RowFetcher:
    """Fetches the boundary rows of every remote block, ``depth`` steps ahead of the consumer
    (``None``: see :func:`pipeline_depth`).

    ``wire`` labels and compresses the traffic; ``ids`` are the tensors' indices within the
    propagate call (their keys; default ``0..n-1``); ``direction`` is the ledger's
    (``"rows"``, or ``"refetch"`` in a backward pass).
    """

    def __init__(self, graph: DistGraph, tensors: Sequence[Tensor], depth: Optional[int],
                 wire: Wire = NO_WIRE, ids: Optional[Sequence[int]] = None,
                 direction: str = "rows") -> None:
        self.graph = graph
        self.tensors = list(tensors)
        self.depth = pipeline_depth(graph, depth)
        self.next_step = 1
        self.in_flight: deque = deque()
        self.wire, self.ids = wire, tensor_ids(ids, len(self.tensors))
        self.traffic = (wire.label, direction)

    def _launch(self, step: int) -> None:
        g = self.graph
        send_to, recv_from = ring_peers(g.rank, g.world_size, step)
        idx = g.send_idx[send_to]
        codecs = [self.wire.codec_of(i, "rows") for i in self.ids]  # None: sent raw
        # encode_rows gathers only what is sent (no full-size copy of the rows)
        send = [t.index_select(0, idx) if c is None else
                c.encode_rows(t, idx, c.key(i, g.rank, send_to))
                for t, c, i in zip(self.tensors, codecs, self.ids)]
        like = [t if c is None else c.wire_like(t) for t, c in zip(self.tensors, codecs)]
        rows = g.blocks[recv_from].num_src
        self.in_flight.append((step, recv_from, exchange_rows(g, step, send, like, rows,
                                                              traffic=self.traffic)))

    def prefetch(self, upto: int) -> None:
        """Launch every step up to ``upto`` (inclusive) that is not launched yet."""
        while self.next_step <= min(upto, self.graph.world_size - 1):
            self._launch(self.next_step)
            self.next_step += 1

    def start(self) -> RowFetcher:
        self.prefetch(self.depth)
        return self

    def get(self, step: int) -> list[Tensor]:
        """Rows of the block of step ``step`` (steps must be consumed in order)."""
        return self.decode(step, self.get_payloads(step))

    def get_payloads(self, step: int) -> list[Tensor]:
        """What arrived for the block of step ``step``, as it crossed the network (the
        codec's payload; the rows themselves where nothing is compressed); :meth:`decode`
        turns it into rows, as often as needed."""
        self.prefetch(step)
        got_step, recv_from, pending = self.in_flight.popleft()
        assert got_step == step, (got_step, step)
        t = time.perf_counter()
        payloads = [p.wait() for p in pending]
        count(self.graph.context.comm, 0, 0, 0, time.perf_counter() - t)
        self.prefetch(step + self.depth)
        return payloads

    def decode(self, step: int, payloads: Sequence[Tensor]) -> list[Tensor]:
        """The rows of the payloads received at ``step`` (see :func:`decode_rows`)."""
        return decode_rows(self.graph, self.wire, step, payloads, self.tensors, self.ids)


class GradReturner:
    """Sends gradients of fetched rows back to their owners and adds what comes back.

    At most one step's exchange is kept in flight, so the pending gradient buffers stay the
    size of one block; where the transport does not move data in the background, not even
    that while the next block is computed (:meth:`before_next_block`).
    """

    def __init__(self, graph: DistGraph, grads: list[Optional[Tensor]], wire: Wire = NO_WIRE,
                 ids: Optional[Sequence[int]] = None,
                 dtypes: Optional[Sequence[torch.dtype]] = None) -> None:
        self.graph = graph
        self.wire, self.ids = wire, tensor_ids(ids, len(grads))
        # The dtype each tensor's gradients cross in (its rows' dtype), where it differs from
        # the buffer's: bf16 rows' gradients cross as bf16 and are added into float32 buffers.
        self.dtypes = dtypes
        self.traffic = (wire.label, "grads")
        # The caller's list, read when gradients arrive: an entry may be filled in after this
        # returner is made (the local block's gradient, computed first).
        self.grads = grads
        self.pending: Optional[tuple] = None
        self.overlap = getattr(graph.context.comm, "progresses_in_background", True)

    def before_next_block(self) -> None:
        """Call before computing the next block's gradients: finishes the pending return
        first unless it can progress during that computation."""
        if not self.overlap:
            self.flush()

    def send(self, step: int, block_grads: Sequence[Tensor]) -> None:
        """Return ``block_grads`` (grads of the rows fetched at ``step``) to their owner."""
        self.flush()
        g = self.graph
        send_to, recv_from = ring_peers(g.rank, g.world_size, step)
        idx = g.send_idx[send_to]  # my rows that the peer of this step used
        live = [i for i, gr in enumerate(self.grads) if gr is not None]
        send = [block_grads[i] for i in live]
        like = [self._like(i) for i in live]
        if self.wire.transforms:
            # The gradients go back to the rows' owner (recv_from) and come to me from the
            # user of my rows (send_to): the keys of the rows' messages, direction "grads".
            codecs = [self.wire.codec_of(self.ids[i], "grads") for i in live]
            send = [s if c is None else
                    c.encode(s.contiguous(), c.key(self.ids[i], recv_from, g.rank, "grads"))
                    for s, c, i in zip(send, codecs, live)]
            like = [t if c is None else c.wire_like(t) for t, c in zip(like, codecs)]
        pending = exchange_rows(g, step, send, like, int(idx.numel()), reverse=True,
                                traffic=self.traffic)
        self.pending = (idx, live, pending)
        self._user = send_to  # the rank whose gradients of my rows arrive (their keys)

    def flush(self) -> None:
        if self.pending is None:
            return
        idx, live, pending = self.pending
        t = time.perf_counter()
        got_all = [p.wait() for p in pending]
        count(self.graph.context.comm, 0, 0, 0, time.perf_counter() - t)
        if self.wire.transforms:
            me = self.graph.rank
            codecs = [self.wire.codec_of(self.ids[i], "grads") for i in live]
            got_all = [got if c is None else
                       c.decode(got, self.grads[i].shape[1:], self._like(i).dtype,
                                c.key(self.ids[i], me, self._user, "grads"))
                       for i, c, got in zip(live, codecs, got_all)]
        for i, got in zip(live, got_all):
            if got.shape[0]:
                self.grads[i].index_add_(0, idx, got.to(self.grads[i].dtype))
        self.pending = None

    def _like(self, i: int) -> Tensor:
        """A tensor with the shape of tensor ``i``'s gradient rows and the dtype they cross in."""
        buf = self.grads[i]
        if self.dtypes is None or self.dtypes[i] == buf.dtype:
            return buf
        return buf.new_empty((0, *buf.shape[1:]), dtype=self.dtypes[i])

