"""The :class:`~pyg_sar.core.exchange.Wire` of a converted layer's propagate call: its name in
the traffic ledger, the wire dtype of its configuration (``SARConfig.wire_dtype``, in every
mode) and, when the layer is compressed and in training mode (or the compressor
says ``in_eval``), its compressor bound for this call (ratio and key fixed now, kept with the
propagation for its backward pass; an evaluation-mode call binds without error feedback and
with its own call counter, :meth:`~pyg_sar.compression.Compressor.bind`).

One layer call binds its compressor once, so every mode draws the same keys for it. A call
that crosses the network in two steps (a halo-mode GAT/GATv2: its ``edge_updater`` fetches
the logits or ``x_l``, then ``propagate`` fetches ``x``) binds in the first step and hands the
wire to the second (:func:`hold_wire`); the wire keeps the halo rows fetched in the first step
so a tensor read by both crosses once.
"""
from __future__ import annotations

from collections.abc import Iterable

from torch_geometric.nn.conv import MessagePassing

from pyg_sar.core.exchange import Wire

_HELD = "_sar_held_wire"


def layer_wire(layer: MessagePassing, exact: Iterable[int] = ()) -> Wire:
    """The wire of one propagate call of ``layer`` (binds its compressor: call it once per
    call, on every rank in the same order). ``exact``: indices of the source tensors the
    codec never encodes (attention logits: raw, or in the compressor's ``logit_dtype`` where
    it is lossy; see :mod:`pyg_sar.core.exchange`). A wire held by
    :func:`hold_wire` earlier in the same layer call is returned instead (and released)."""
    held = layer.__dict__.pop(_HELD, None)
    if held is not None:
        return held
    label = getattr(layer, "_sar_name", None)
    comp = getattr(layer, "_sar_compressor", None)
    config = getattr(layer, "_sar_config", None)
    wire_dtype = None if config is None else config.wire_dtype
    exact = frozenset(int(i) for i in exact)
    if comp is None or not comp.applies(layer.training):
        return Wire(label, exact=exact, halo={}, wire_dtype=wire_dtype)
    return Wire(label, comp.bind(layer._sar_layer_index, layer.training), exact, halo={},
                wire_dtype=wire_dtype)


def hold_wire(layer: MessagePassing, wire: Wire) -> None:
    """Keep ``wire`` for the next :func:`layer_wire` of ``layer`` (the rest of this call)."""
    layer.__dict__[_HELD] = wire


def release_held_wire(layer: MessagePassing) -> None:
    """Drop a wire held by a call of ``layer`` that ended before its ``propagate`` took it
    (an exception in between): the next call must bind afresh, not reuse its ratio, keys and
    halo rows."""
    layer.__dict__.pop(_HELD, None)
