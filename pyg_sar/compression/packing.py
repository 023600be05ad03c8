"""Bit packing of small unsigned integer codes into bytes (what quantisation really sends)."""
from __future__ import annotations

import torch
from torch import Tensor

BITS = (1, 2, 4, 8, 16)


def packed_bytes(count: int, bits: int) -> int:
    """Bytes that ``count`` codes of ``bits`` bits take when packed."""
    _check_bits(bits)
    return (count * bits + 7) // 8


def pack(codes: Tensor, bits: int) -> Tensor:
    """Pack ``codes`` (``[R, D]`` integers in ``[0, 2**bits)``) into ``[R, packed_bytes(D)]``
    ``uint8``; code ``j`` of a byte sits in bits ``j * bits .. (j + 1) * bits - 1``."""
    _check_bits(bits)
    rows, count = codes.shape
    if codes.numel() == 0:
        return torch.zeros((rows, packed_bytes(count, bits)), dtype=torch.uint8,
                           device=codes.device)
    if bits == 16:  # two bytes per code (stored as int16 with an offset, viewed as bytes)
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
    """The ``[R, count]`` codes that :func:`pack` packed into ``data`` (``uint8`` up to 8
    bits, ``int32`` for 16)."""
    _check_bits(bits)
    rows = data.shape[0]
    if bits == 16:
        data = data.clone(memory_format=torch.contiguous_format)  # offset 0: int16 view
        return data.view(torch.int16).view(rows, count).to(torch.int32) + 32768
    if bits == 8:
        return data
    shifts = torch.arange(0, 8, bits, device=data.device, dtype=torch.uint8)
    codes = (data.unsqueeze(-1) >> shifts) & ((1 << bits) - 1)
    return codes.reshape(rows, data.shape[1] * (8 // bits))[:, :count]


def _check_bits(bits: int) -> None:
    if bits not in BITS:
        raise ValueError(f"bit packing: bits must be one of {BITS} (got {bits!r})")
