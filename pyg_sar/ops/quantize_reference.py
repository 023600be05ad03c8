r"""Pure-torch stochastic-rounding quantisation: the oracle of the native kernels
(``csrc/ops/quantize_math.h``) and their fallback where none applies.

Row ``r`` (``count`` values) of a message keyed by ``seed`` becomes codes
``q = clamp(floor((x - lo) * (1 / step) + u), 0, 2**bits - 1)`` with ``lo = min x``,
``step = (max x - lo) / (2**bits - 1)`` (1 for a constant row), packed by
bit packing (layout below), followed by ``lo`` and
``step`` in the rows' dtype (bfloat16 / float16 rows are quantised as their exact float32 values,
header in float32). The noise ``u`` of value ``c`` is a keyed hash, identical for any
thread count and on every backend: ``key = combine(seed, r)`` and
``h(t) = mix64(key + (t + 1) * GOLDEN)`` (SplitMix64, :mod:`pyg_sar.ops.sampling_rng`); float64
takes the top 53 bits of ``h(c)``, float32 24 bits of ``h(c // 2)`` (its upper half for even
``c``, its lower half for odd ``c``: one hash serves two values), so ``u`` is exact in the
dtype and lies in ``[0, 1)``. Every product and sum is a separate torch op (rounded on its
own), as the kernels compute them. Non-finite rows get unspecified codes (their header
carries the inf / NaN).

Packed layout (``bits`` < 8): code ``j`` of a byte sits in bits ``j * bits .. (j + 1) * bits - 1``,
the last byte padded with zero codes; 8 bits: one byte per code; 16 bits: the int16
``code - 32768`` in native (little-endian) byte order.
"""
from __future__ import annotations

import torch
from torch import Tensor

from pyg_sar.ops.sampling_rng import GOLDEN, _signed, combine_tensor, mix64_tensor

BITS = (1, 2, 4, 8, 16)
DTYPES = (torch.float32, torch.float64, torch.bfloat16, torch.float16)
_LOW = (torch.bfloat16, torch.float16)  # quantised as their (exact) float32 values


def _acc(dtype: torch.dtype) -> torch.dtype:
    return torch.float32 if dtype in _LOW else dtype


def packed_bytes(count: int, bits: int) -> int:
    """Bytes that ``count`` codes of ``bits`` bits take when packed."""
    return (count * bits + 7) // 8


def row_bytes(count: int, bits: int, dtype: torch.dtype) -> int:
    """Bytes of one payload row: packed codes, then ``lo`` and ``step`` in ``dtype`` (float32
    for bfloat16 / float16 rows)."""
    return packed_bytes(count, bits) + 2 * torch.empty((), dtype=_acc(dtype)).element_size()


def check_bits(op: str, bits: int) -> None:
    if bits not in BITS:
        raise ValueError(f"{op}: bits must be one of {BITS} (got {bits!r})")


def check_dtype(op: str, dtype: torch.dtype, what: str) -> None:
    if dtype not in DTYPES:
        name = str(dtype).removeprefix("torch.")
        raise RuntimeError(f"{op}: {what} has dtype {name}, which the native kernels do not "
                           f"support (supported: float32, float64, bfloat16, float16)")


def noise(rows: int, count: int, seed: int, dtype: torch.dtype,
          device: torch.device | str = "cpu") -> Tensor:
    """The ``[rows, count]`` rounding noise of a message keyed by ``seed`` (see the module)."""
    r = torch.arange(rows, dtype=torch.int64, device=device).unsqueeze(1)
    key = combine_tensor(torch.full_like(r, _signed(seed)), r)
    if dtype == torch.float32:  # values 2t and 2t + 1 share hash t: upper and lower 24 bits
        t = torch.arange((count + 1) // 2, dtype=torch.int64, device=device).unsqueeze(0)
        h = mix64_tensor(key + (t + 1) * _signed(GOLDEN))
        pair = torch.stack([(h >> 40) & 0xFFFFFF, (h >> 8) & 0xFFFFFF], dim=2)
        return pair.view(rows, -1)[:, :count].to(torch.float32) * 2.0 ** -24
    c = torch.arange(count, dtype=torch.int64, device=device).unsqueeze(0)
    h = mix64_tensor(key + (c + 1) * _signed(GOLDEN))
    return ((h >> 11) & ((1 << 53) - 1)).to(torch.float64) * 2.0 ** -53


def pack(codes: Tensor, bits: int) -> Tensor:
    """``[R, D]`` codes in ``[0, 2**bits)`` (any integer or integral float dtype) ->
    ``[R, packed_bytes(D, bits)]`` uint8 (layout in the module docstring)."""
    rows, count = codes.shape
    if codes.numel() == 0:
        return torch.zeros((rows, packed_bytes(count, bits)), dtype=torch.uint8,
                           device=codes.device)
    if bits == 16:
        return (codes.to(torch.int32) - 32768).to(torch.int16).view(torch.uint8).view(
            rows, 2 * count)
    codes = codes.to(torch.uint8)
    if bits == 8:
        return codes
    per = 8 // bits
    pad = (-count) % per
    if pad:
        codes = torch.cat([codes, codes.new_zeros(rows, pad)], dim=1)
    codes = codes.view(rows, (count + pad) // per, per)
    out = codes[..., 0].clone()
    for j in range(1, per):
        out |= codes[..., j] << (bits * j)
    return out


def unpack(data: Tensor, bits: int, count: int) -> Tensor:
    """The ``[R, count]`` codes :func:`pack` packed into ``data`` (``uint8`` up to 8 bits,
    ``int32`` for 16)."""
    rows = data.shape[0]
    if rows == 0 or count == 0:  # nothing to view as int16
        return data.new_zeros((rows, count), dtype=torch.int32 if bits == 16 else torch.uint8)
    if bits == 16:
        data = data.clone(memory_format=torch.contiguous_format)  # offset 0: int16 view
        return data.view(torch.int16).view(rows, count).to(torch.int32) + 32768
    if bits == 8:
        return data
    shifts = torch.arange(0, 8, bits, device=data.device, dtype=torch.uint8)
    codes = (data.unsqueeze(-1) >> shifts) & ((1 << bits) - 1)
    return codes.reshape(rows, data.shape[1] * (8 // bits))[:, :count]


def quantize_encode_reference(rows: Tensor, bits: int, seed: int) -> Tensor:
    """``rows [R, D]`` (float32, float64, bfloat16, float16) -> payload
    ``[R, row_bytes(D, bits, dtype)]`` uint8 (bfloat16 / float16 rows: the payload of
    ``rows.float()``)."""
    op = "quantize_encode"
    if rows.dim() != 2:
        raise ValueError(f"{op}: rows must be 2-D [R, D] (got shape {tuple(rows.shape)})")
    check_dtype(op, rows.dtype, "rows")
    check_bits(op, bits)
    if rows.dtype in _LOW:
        return quantize_encode_reference(rows.float(), bits, seed)
    count = rows.shape[1]
    if rows.shape[0] == 0 or count == 0:
        lo = step = rows.new_zeros(rows.shape[0], 1)
        if count:
            return rows.new_zeros((0, row_bytes(count, bits, rows.dtype)), dtype=torch.uint8)
        step = torch.ones_like(step)
        return torch.cat([lo, step], dim=1).view(torch.uint8)
    levels = (1 << bits) - 1
    lo, hi = torch.aminmax(rows, dim=1, keepdim=True)
    step = (hi - lo) / levels
    step = torch.where(step > 0, step, torch.ones_like(step))  # constant row: all codes 0
    codes = (rows - lo).mul_(torch.reciprocal(step))
    codes.add_(noise(rows.shape[0], count, seed, rows.dtype, rows.device))
    codes.floor_().clamp_(0, levels)
    header = torch.cat([lo, step], dim=1).view(torch.uint8)
    return torch.cat([pack(codes, bits), header], dim=1)


def quantize_decode_reference(payload: Tensor, bits: int, count: int,
                              dtype: torch.dtype) -> Tensor:
    """The ``[R, count]`` rows of ``dtype`` that :func:`quantize_encode_reference` encoded
    (bfloat16 / float16: decoded in float32, rounded once)."""
    op = "quantize_decode"
    check_bits(op, bits)
    check_dtype(op, dtype, "dtype")
    if dtype in _LOW:
        return quantize_decode_reference(payload, bits, count, torch.float32).to(dtype)
    if count < 0:
        raise ValueError(f"{op}: count must be >= 0 (got {count})")
    want = row_bytes(count, bits, dtype)
    if payload.dim() != 2 or payload.dtype != torch.uint8 or payload.shape[1] != want:
        raise ValueError(f"{op}: payload must be 2-D uint8 with {want} bytes per row for "
                         f"{count} values at {bits} bits in {dtype} (got {payload.dtype} "
                         f"{tuple(payload.shape)})")
    body = packed_bytes(count, bits)
    # copies: a chunk of a larger buffer may start at an offset no dtype view allows
    header = payload[:, body:].clone(memory_format=torch.contiguous_format).view(dtype)
    codes = unpack(payload[:, :body], bits, count)
    return codes.to(dtype).mul_(header[:, 1:2]).add_(header[:, :1])
