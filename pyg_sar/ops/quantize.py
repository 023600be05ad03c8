r"""Stochastic-rounding quantisation of message rows: ``torch.ops.pyg_sar.quantize_encode`` /
``quantize_decode`` with a pure-torch fallback.

Each function runs the native kernel when the library has one for the tensor's device and
otherwise :mod:`pyg_sar.ops.quantize_reference` (with a warning, or an error under
``PYG_SAR_REQUIRE_NATIVE=1``); both produce the same bytes and values bit for bit.
``backend="reference"`` forces the pure-torch path, ``backend="native"`` the kernel (an error if
it is missing). Rows are float32, float64, bfloat16 or float16 (the half types are quantised
as their exact float32 values: the payload of ``rows.float()``, header in float32; decoding to a
half type decodes in float32 and rounds once); bits are 1, 2, 4, 8 or 16. See
:mod:`pyg_sar.ops.quantize_reference` for the format and the noise.
"""
from __future__ import annotations

import torch
from torch import Tensor

from pyg_sar.ops import quantize_reference as ref
from pyg_sar.ops._native import _load, warn_reference_fallback
from pyg_sar.ops._native import has_op_kernel as _has

BACKENDS = ("auto", "native", "reference")
OPS = ("quantize_encode", "quantize_decode")


def quantize_backend(op: str, device: torch.device | str, backend: str = "auto") -> str:
    """``"native"`` or ``"reference"``: which implementation of ``op`` runs on ``device``
    under ``backend`` (warns, or raises under ``PYG_SAR_REQUIRE_NATIVE``, on a fallback)."""
    if backend not in BACKENDS:
        raise ValueError(f"pyg_sar.ops.quantize: backend must be one of {BACKENDS} "
                         f"(got {backend!r})")
    if op not in OPS:
        raise ValueError(f"pyg_sar.ops.quantize: op must be one of {OPS} (got {op!r})")
    device = torch.device(device)
    if backend == "reference":
        return "reference"
    if _has(op, device):
        return "native"
    if backend == "native":
        raise RuntimeError(f"pyg_sar: torch.ops.pyg_sar.{op} has no {device.type} kernel "
                           f"({_load() or 'not built into pyg_sar._C'})")
    warn_reference_fallback(op, device.type, "same bytes")
    return "reference"


def quantize_encode(rows: Tensor, bits: int, seed: int, *, backend: str = "auto") -> Tensor:
    """``rows [R, D]`` (float32, float64, bfloat16, float16) -> payload
    ``[R, row_bytes(D, bits, dtype)]`` uint8: the packed codes of each row, then its ``lo`` and
    ``step`` in the rows' dtype (float32 for bfloat16 / float16)."""
    if quantize_backend("quantize_encode", rows.device, backend) == "native":
        return torch.ops.pyg_sar.quantize_encode(rows, int(bits), int(seed))
    return ref.quantize_encode_reference(rows, int(bits), int(seed))


def quantize_decode(payload: Tensor, bits: int, count: int, dtype: torch.dtype, *,
                    backend: str = "auto") -> Tensor:
    """The ``[R, count]`` rows of ``dtype`` (float32, float64, bfloat16, float16) that
    :func:`quantize_encode` encoded into ``payload``."""
    if quantize_backend("quantize_decode", payload.device, backend) == "native":
        return torch.ops.pyg_sar.quantize_decode(payload, int(bits), int(count), dtype)
    return ref.quantize_decode_reference(payload, int(bits), int(count), dtype)
