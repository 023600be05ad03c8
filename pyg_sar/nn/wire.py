"""The :class:`~pyg_sar.core.exchange.Wire` of a converted layer's propagate call: its name in
the traffic ledger and, when the layer is compressed and in training mode (or the compressor
says ``in_eval``), its compressor bound for this call (ratio and key fixed now, kept with the
propagation for its backward pass)."""
from __future__ import annotations

from torch_geometric.nn.conv import MessagePassing

from pyg_sar.core.exchange import Wire


def layer_wire(layer: MessagePassing) -> Wire:
    """The wire of one propagate call of ``layer`` (binds its compressor: call it once per
    call, on every rank in the same order)."""
    label = getattr(layer, "_sar_name", None)
    comp = getattr(layer, "_sar_compressor", None)
    if comp is None or not comp.applies(layer.training):
        return Wire(label)
    return Wire(label, comp.bind(layer._sar_layer_index))
