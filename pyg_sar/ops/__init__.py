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

Dtypes (every native op, CPU and CUDA): inputs float32, float64, bfloat16 or float16
(:data:`NATIVE_DTYPES`); bfloat16 / float16 are computed in float32, their accumulator dtype
(:func:`accumulate_dtype`, ``at::opmath_type``). A dtype outside the set raises a
``RuntimeError`` naming the op, the dtype and the supported set; nothing falls back to another
precision silently. What the engine relies on:

* ``torch.ops.pyg_sar.gather_aggregate(rowptr, col, x, w, reduce)`` with bfloat16 / float16 ``x``
  returns ``out`` in float32 (the accumulator), so blocks fold in float32; ``w`` may be ``x``'s
  dtype or float32 (a float32 weight multiplies in float32, as ``w * x`` would promote).
  ``torch.ops.pyg_sar.gather_aggregate_backward(grad_out, ..., x_dtype=None)`` takes ``grad_out``
  in ``x``'s dtype or float32 and returns ``grad_x`` in ``x_dtype`` (default: ``x_src``'s dtype,
  else ``grad_out``'s; pass ``x_dtype`` when ``x_src`` is not given) and ``grad_weight`` in the
  weight's dtype. The autograd wrapper :func:`gather_aggregate` instead returns ``x``'s dtype.
* GAT / GATv2 block ops: bfloat16 / float16 inputs with ``m``, ``l``, ``acc`` in float32
  (:func:`attention_state` allocates them so; a state in another dtype raises a
  ``RuntimeError`` naming the tensors and dtypes); :func:`gat_finalize` returns float32;
  ``gat_block_backward`` / ``gatv2_block_backward`` take ``grad_out`` in float32 or the inputs'
  dtype and return every gradient in the inputs' dtype.
* :func:`quantize_encode` of bfloat16 / float16 rows produces the bytes of ``rows.float()``
  (header in float32); :func:`quantize_decode` to such a dtype decodes in float32 and rounds
  once.
* :func:`supports_dtype` (``op``, ``dtype``, ``device``) says whether a native kernel takes a
  dtype on a device, for callers that choose between the kernel and a fallback.
"""
import torch

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
from pyg_sar.ops._native import has_op_kernel, native_available
from pyg_sar.ops.quantize import quantize_decode, quantize_encode
from pyg_sar.ops.reference import NATIVE_DTYPES, accumulate_dtype, gather_aggregate_reference

# Register torch.ops.pyg_sar.* now when the library is built; never raises (see native_available).
native_available()

#: The ops whose floating inputs follow the dtype contract above.
DTYPE_OPS = ("gather_aggregate", "gather_aggregate_backward", "gat_block_forward_",
             "gat_block_backward", "gatv2_block_forward_", "gatv2_block_backward",
             "gat_finalize", "gat_dropout_mask", "quantize_encode", "quantize_decode")


def supports_dtype(op: str, dtype: torch.dtype, device: torch.device | str = "cpu") -> bool:
    """Whether ``torch.ops.pyg_sar.<op>`` is built with a kernel for ``device`` and takes floating
    inputs of ``dtype`` (one of :data:`NATIVE_DTYPES`; bfloat16 / float16 computed in float32).

    Raises:
        ValueError: ``op`` is not one of :data:`DTYPE_OPS`.
    """
    if op not in DTYPE_OPS:
        raise ValueError(f"pyg_sar.ops.supports_dtype: op must be one of {DTYPE_OPS} "
                         f"(got {op!r})")
    if dtype not in NATIVE_DTYPES:
        return False
    if op in ("gat_finalize", "gat_dropout_mask"):  # composite: every backend
        return native_available() and hasattr(torch.ops.pyg_sar, op)
    return has_op_kernel(op, torch.device(device))


__all__ = [
    "native_available",
    "NATIVE_DTYPES",
    "DTYPE_OPS",
    "accumulate_dtype",
    "supports_dtype",
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
