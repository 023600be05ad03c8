"""Python wrappers of the native operators ``torch.ops.pyg_sar.*`` (built from csrc/).

* :func:`gather_aggregate`: fused gather + sum/mean/max/min aggregation over a CSR graph, with
  autograd; :func:`gather_aggregate_reference` is its pure-torch oracle and fallback.
* :func:`gat_attention` / :func:`gatv2_attention`: fused GAT/GATv2 attention (online edge
  softmax + aggregation, no per-edge tensor) with the block-level ops the engine folds over
  source ranks (``gat_block_forward_``, ``gat_finalize``, ``gat_block_backward``, ...).
* :func:`quantize_encode` / :func:`quantize_decode`: fused stochastic-rounding quantisation of
  message rows (per-row scale, keyed noise, bit packing in one pass); pure-torch oracle in
  :mod:`pyg_sar.ops.quantize_reference`.
* :func:`native_available`: whether the native library ``pyg_sar._C`` is built.
"""
from pyg_sar.ops._gat_attention import (
    attention_state,
    fused_attention_available,
    gat_attention,
    gat_block_backward,
    gat_block_forward_,
    gat_dropout_mask,
    gat_finalize,
    gat_transpose,
    gatv2_attention,
    gatv2_block_backward,
    gatv2_block_forward_,
)
from pyg_sar.ops._gather_aggregate import GatherAggregate, gather_aggregate
from pyg_sar.ops._native import native_available
from pyg_sar.ops.quantize import quantize_decode, quantize_encode
from pyg_sar.ops.reference import gather_aggregate_reference

# Register torch.ops.pyg_sar.* now when the library is built; never raises (see native_available).
native_available()

__all__ = [
    "native_available",
    "gather_aggregate",
    "gather_aggregate_reference",
    "GatherAggregate",
    "attention_state",
    "fused_attention_available",
    "gat_attention",
    "gat_transpose",
    "gatv2_attention",
    "gat_block_forward_",
    "gat_block_backward",
    "gatv2_block_forward_",
    "gatv2_block_backward",
    "gat_finalize",
    "gat_dropout_mask",
    "quantize_encode",
    "quantize_decode",
]
