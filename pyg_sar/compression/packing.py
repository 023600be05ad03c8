"""Bit packing of small unsigned integer codes into bytes (what quantisation really sends).

The layout is the quantisation kernels' (:mod:`pyg_sar.ops.quantize_reference`, shared with
``csrc/ops/quantize_math.h``): code ``j`` of a byte sits in bits ``j * bits .. (j + 1) * bits - 1``,
the last byte padded with zero codes; 16-bit codes are the int16 ``code - 32768``, two bytes.
"""
from __future__ import annotations

from torch import Tensor

from pyg_sar.ops import quantize_reference as _ref

BITS = _ref.BITS


def packed_bytes(count: int, bits: int) -> int:
    """Bytes that ``count`` codes of ``bits`` bits take when packed."""
    _check_bits(bits)
    return _ref.packed_bytes(count, bits)


def pack(codes: Tensor, bits: int) -> Tensor:
    """Pack ``codes`` (``[R, D]`` integers in ``[0, 2**bits)``) into ``[R, packed_bytes(D)]``
    ``uint8``."""
    _check_bits(bits)
    return _ref.pack(codes, bits)


def unpack(data: Tensor, bits: int, count: int) -> Tensor:
    """The ``[R, count]`` codes that :func:`pack` packed into ``data`` (``uint8`` up to 8
    bits, ``int32`` for 16)."""
    _check_bits(bits)
    return _ref.unpack(data, bits, count)


def _check_bits(bits: int) -> None:
    if bits not in BITS:
        raise ValueError(f"bit packing: bits must be one of {BITS} (got {bits!r})")
