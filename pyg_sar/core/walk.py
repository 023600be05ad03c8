"""The one block walk of the engine: fetch → compute → fold (forward), re-fetch → recompute →
return gradients (backward).

Every distributed propagate (a layer's own message with a combine rule in
:mod:`pyg_sar.core.sar`, the fused attention kernels in :mod:`pyg_sar.core.fused_attention`)
and the global attention over every node (:mod:`pyg_sar.core.global_attention`, whose view's
blocks are all of each rank's rows) walks a view's blocks the same way: at step ``k = 0..P-1``
it visits the block of source rank ``(rank + k) % P`` (``k = 0`` is the local block), whose
boundary rows are fetched ``depth`` steps ahead over the ring
(:class:`~pyg_sar.core.exchange.RowFetcher`) and freed after use; in backward the gradients
of a remote block's rows go back to their owner (:class:`~pyg_sar.core.exchange.GradReturner`)
while the next block is computed. Mode ``"sa"``
keeps what the forward walk received for the backward one instead of fetching again: the
payloads as they crossed the network, so under a lossy codec it holds the compressed bytes (the
kept channels, the packed codes), not decoded full-size rows, and decodes them again when a
backward step needs the rows (decoding is deterministic given the message's key, so the rows
are bit for bit the forward's).

The walk owns everything that crosses the network, so anything applied to that traffic
(counting, compression) has exactly one place: the fetcher and the returner it creates, both
given the propagation's :class:`~pyg_sar.core.exchange.Wire` (its layer label and its codec,
bound at forward time). A SAR re-fetch is labelled ``refetch`` in the traffic ledger but keyed
like the forward fetch, so it receives exactly the rows the forward pass received.

Gradients of low-precision (bfloat16 / float16) source rows are summed over blocks in float32:
the consumer's gradient buffers are float32 (:func:`pyg_sar.core.precision.accumulate_dtype`);
a remote block's gradients cross in the rows' own dtype (:meth:`BlockWalk.give_back`), as the
rows did, and their owner adds them into its float32 buffer.
"""
from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Optional

from torch import Tensor

from pyg_sar.core.exchange import (
    NO_WIRE,
    GradReturner,
    RowFetcher,
    Wire,
    decode_rows,
    tensor_ids,
)
from pyg_sar.core.views import GraphView, ViewBlock


@dataclass
class Step:
    """One step of a walk: the block of source rank ``src_rank`` and its source rows."""

    k: int
    src_rank: int
    block: ViewBlock
    rows: Optional[list[Tensor]]  # None when the backward walk does not need the rows


class BlockWalk:
    """Walks the blocks of ``view`` for one propagate call (see the module docstring).

    Args:
        view: the blocks to walk.
        src: this rank's source tensors (what remote blocks fetch).
        mode: ``"sar"`` (fetch again in backward) or ``"sa"`` (keep the forward's rows).
        depth: prefetch depth (``None``: see :func:`pyg_sar.core.exchange.pipeline_depth`).
        wire: label and compression of the traffic (the same object in forward and backward).
        ids: index of each source tensor within the propagate call (its compression key;
            default ``0..n-1``), for a backward walk over a subset of the forward's tensors.
        keep: mode ``"sa"``: whether the backward walk will need the rows (``False`` for a
            linear aggregation without an edge-weight gradient: nothing is kept).
        every_block: also visit remote blocks without edges (global attention's view, whose
            blocks hold rows, not edges: :func:`pyg_sar.core.global_attention.ring_view`).
    """

    def __init__(self, view: GraphView, src: Sequence[Tensor], mode: str,
                 depth: Optional[int], wire: Wire = NO_WIRE,
                 ids: Optional[Sequence[int]] = None, keep: bool = True,
                 every_block: bool = False) -> None:
        self.view, self.src, self.mode, self.depth = view, list(src), mode, depth
        self.wire, self.ids = wire, ids
        self.keeps = mode == "sa" and keep
        self.every_block = every_block
        self.graph = view.graph
        # mode "sa": the payloads received in forward, step by step (n per remote step)
        self.kept: list[Tensor] = []

    def _order(self) -> Iterator[tuple[int, int, ViewBlock]]:
        world, rank = self.graph.world_size, self.graph.rank
        for k in range(world):
            s = (rank + k) % world
            yield k, s, self.view.blocks[s]

    def forward(self) -> Iterator[Step]:
        """The forward steps. The local block comes first, even without edges (a combine rule
        may need it to size its state); remote blocks without edges are skipped."""
        fetcher = None
        if self.graph.world_size > 1 and self.src:
            fetcher = RowFetcher(self.graph, self.src, self.depth, self.wire, self.ids).start()
        for k, s, block in self._order():
            if k == 0:
                rows = self.src
            elif fetcher is None:
                rows = []
            elif self.keeps:
                payloads = fetcher.get_payloads(k)
                self.kept.extend(payloads)
                rows = fetcher.decode(k, payloads) if self._visits(block) else []
            else:
                rows = fetcher.get(k)
            if k > 0 and not self._visits(block):
                continue
            yield Step(k, s, block, rows)

    def backward(self, grads: list[Optional[Tensor]], need_rows: bool = True,
                 kept: Sequence[Tensor] = ()) -> Iterator[Step]:
        """The backward steps; the consumer hands each remote step's source-row gradients to
        :meth:`give_back` and accumulates the local step's into ``grads`` itself.

        ``grads`` (one entry per source tensor, ``None`` where no gradient is needed) is
        read when gradients come back, so an entry may be filled during the local step.
        ``kept`` is what the forward walk kept (mode ``"sa"``: payloads, decoded here step by
        step). Remote blocks without edges are not yielded: zero gradients are returned for
        them.
        """
        g = self.graph
        world = g.world_size
        fetcher = None
        if need_rows and self.mode == "sar" and world > 1 and self.src:
            fetcher = RowFetcher(g, self.src, self.depth, self.wire, self.ids,
                                 direction="refetch").start()
        self._returner = (GradReturner(g, grads, self.wire, self.ids,
                                       dtypes=[t.dtype for t in self.src])
                          if world > 1 else None)
        n = len(self.src)
        for k, s, block in self._order():
            if self._returner is not None:
                self._returner.before_next_block()
            if k == 0:
                rows = self.src
            elif not need_rows:
                rows = None
            elif self.mode == "sa":
                rows = decode_rows(g, self.wire, k, kept[(k - 1) * n:k * n], self.src,
                                   tensor_ids(self.ids, n))
            else:
                rows = fetcher.get(k)
            if k > 0 and not self._visits(block):
                self._returner.send(k, [_empty_like(t, block.num_src) for t in self.src])
                continue
            yield Step(k, s, block, rows)
        if self._returner is not None:
            self._returner.flush()

    def _visits(self, block: ViewBlock) -> bool:
        """Whether a remote block is a step of the walk (one without edges is skipped)."""
        return self.every_block or block.num_edges > 0

    def give_back(self, step: Step, block_grads: Sequence[Optional[Tensor]]) -> None:
        """Return the gradients of a remote step's rows to their owner (``None``: zeros), in
        the rows' dtype (a float32 block sum of bf16 rows is rounded to bf16 once, here)."""
        rows = step.block.num_src
        self._returner.send(step.k, [_empty_like(t, rows) if gr is None else gr.to(t.dtype)
                                     for gr, t in zip(block_grads, self.src)])


def _empty_like(t: Tensor, rows: int) -> Tensor:
    """A zero gradient for ``rows`` fetched rows of ``t`` (only shape and dtype matter)."""
    return t.new_zeros((rows, *t.shape[1:]))
