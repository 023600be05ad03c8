"""Codecs: how a block of rows is encoded into the bytes really sent, and decoded on receipt.

A codec acts on ``rows``, a ``[R, *row_shape]`` tensor of one source tensor's rows for one
peer, at a compression ``ratio`` >= 1 (1 = lossless). The wire format (row shape and dtype of
the payload) depends only on ``(row_shape, dtype, ratio)``, so a receiver sizes its buffer
from what it already knows. Where a codec cannot send fewer bytes than the rows themselves
(ratio 1, one channel, ...), the rows go as they are (:meth:`Codec.is_raw`): ratio 1 is
bit-identical to no compression.

Every codec here is linear in the rows except quantisation; the gradient of a compressed row
is the codec's adjoint applied to the incoming gradient, which for the channel codecs is the
same encode (the same channels) and for quantisation the straight-through estimator with the
gradient itself quantised (its own noise): see :mod:`pyg_sar.compression.roundtrip`.
"""
from __future__ import annotations

import math
from abc import ABC, abstractmethod
from typing import ClassVar

import torch
from torch import Tensor

from pyg_sar.compression.keys import MessageKey, generator
from pyg_sar.compression.packing import BITS, packed_bytes
from pyg_sar.ops.quantize import BACKENDS, quantize_decode, quantize_encode

RowShape = tuple[int, ...]


class Codec(ABC):
    """Encodes rows into a payload tensor and decodes it (see the module docstring)."""

    name: ClassVar[str] = ""

    @abstractmethod
    def is_raw(self, row_shape: RowShape, dtype: torch.dtype, ratio: float) -> bool:
        """Whether rows of this shape and dtype are sent as they are at ``ratio``."""

    @abstractmethod
    def wire_row(self, row_shape: RowShape, dtype: torch.dtype,
                 ratio: float) -> tuple[RowShape, torch.dtype]:
        """Row shape and dtype of the payload of a non-raw message."""

    @abstractmethod
    def encode(self, rows: Tensor, ratio: float, key: MessageKey) -> Tensor:
        """The payload ``[R, *wire_row_shape]`` of ``rows`` (only called when not raw)."""

    @abstractmethod
    def decode(self, payload: Tensor, row_shape: RowShape, dtype: torch.dtype, ratio: float,
               key: MessageKey) -> Tensor:
        """Rows ``[R, *row_shape]`` of ``dtype`` rebuilt from ``payload``."""

    def encode_rows(self, source: Tensor, index: Tensor, ratio: float,
                    key: MessageKey) -> Tensor:
        """``encode(source[index])``, bit for bit; a codec that can gathers only what it
        sends instead of a full-size copy of the rows."""
        return self.encode(source.index_select(0, index), ratio, key)

    def decode_into(self, out: Tensor, payload: Tensor, ratio: float, key: MessageKey) -> None:
        """Write ``decode(payload, ...)`` into ``out`` (``[R, *row_shape]``), bit for bit."""
        out.copy_(self.decode(payload, tuple(out.shape[1:]), out.dtype, ratio, key))

    def describe(self) -> dict:
        """The codec's name and settings (checked when a checkpoint is resumed)."""
        return {"name": self.name}

    def wire_bytes(self, rows: int, row_shape: RowShape, dtype: torch.dtype,
                   ratio: float) -> int:
        """Bytes that ``rows`` rows take on the wire."""
        if self.is_raw(row_shape, dtype, ratio):
            shape, wire_dtype = row_shape, dtype
        else:
            shape, wire_dtype = self.wire_row(row_shape, dtype, ratio)
        return rows * math.prod(shape) * _itemsize(wire_dtype)

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and other.describe() == self.describe()

    def __hash__(self) -> int:
        return hash((type(self), repr(self)))

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.describe().items() if k != "name")
        return f"{type(self).__name__}({args})"


def _itemsize(dtype: torch.dtype) -> int:
    return torch.empty((), dtype=dtype).element_size()


def kept_channels(channels: int, ratio: float) -> int:
    """Channels kept out of ``channels`` at ``ratio``: ``int(channels / ratio)`` as VARCO
    keeps, but at least 1 (a row is never dropped whole) and all at ratio <= 1."""
    if ratio <= 1.0:
        return channels
    return max(1, min(channels, int(channels / ratio)))


class _ChannelCodec(Codec):
    """Sends ``kept_channels`` of the last dimension of every row (same channels for every
    leading index); the others arrive as zeros."""

    def is_raw(self, row_shape: RowShape, dtype: torch.dtype, ratio: float) -> bool:
        return (len(row_shape) == 0 or not dtype.is_floating_point
                or kept_channels(row_shape[-1], ratio) == row_shape[-1])

    def wire_row(self, row_shape: RowShape, dtype: torch.dtype,
                 ratio: float) -> tuple[RowShape, torch.dtype]:
        return (*row_shape[:-1], kept_channels(row_shape[-1], ratio)), dtype

    @abstractmethod
    def channels(self, total: int, ratio: float, key: MessageKey,
                 device: torch.device) -> Tensor | slice:
        """The kept channels (a slice or sorted indices)."""

    def scale(self, total: int, ratio: float) -> float:
        return 1.0

    def encode(self, rows: Tensor, ratio: float, key: MessageKey) -> Tensor:
        which = self.channels(rows.shape[-1], ratio, key, rows.device)
        if isinstance(which, slice):
            return rows[..., which].contiguous()
        return rows.index_select(rows.dim() - 1, which)

    def encode_rows(self, source: Tensor, index: Tensor, ratio: float,
                    key: MessageKey) -> Tensor:
        which = self.channels(source.shape[-1], ratio, key, source.device)
        if isinstance(which, slice):  # kept channels of the wanted rows: one gather
            return source[..., which].index_select(0, index)
        if source.dim() == 2:
            return source[index.unsqueeze(1), which.unsqueeze(0)]
        return super().encode_rows(source, index, ratio, key)

    def decode(self, payload: Tensor, row_shape: RowShape, dtype: torch.dtype, ratio: float,
               key: MessageKey) -> Tensor:
        out = payload.new_empty((payload.shape[0], *row_shape), dtype=dtype)
        self.decode_into(out, payload, ratio, key)
        return out

    def decode_into(self, out: Tensor, payload: Tensor, ratio: float, key: MessageKey) -> None:
        total = out.shape[-1]
        which = self.channels(total, ratio, key, payload.device)
        out.zero_()
        if isinstance(which, slice):
            out[..., which] = payload
        else:
            out.index_copy_(out.dim() - 1, which, payload.to(out.dtype))
        factor = self.scale(total, ratio)
        if factor != 1.0:
            out.mul_(factor)


class Truncate(_ChannelCodec):
    """VARCO's compressor: keep the first ``int(C / ratio)`` channels of every row."""

    name = "truncate"

    def channels(self, total: int, ratio: float, key: MessageKey,
                 device: torch.device) -> slice:
        return slice(0, kept_channels(total, ratio))


class RandomSubset(_ChannelCodec):
    """Keep a random subset of ``int(C / ratio)`` channels, drawn per message from a seed the
    sender and receiver share (a new subset every step, layer, call and pair of ranks).

    Args:
        rescale: multiply the kept channels by ``C / k`` on receipt, which makes the decoded
            row an unbiased estimate of the row (at the price of more variance).
    """

    name = "subset"

    def __init__(self, rescale: bool = False) -> None:
        self.rescale = bool(rescale)

    def describe(self) -> dict:
        return {"name": self.name, "rescale": self.rescale}

    def channels(self, total: int, ratio: float, key: MessageKey,
                 device: torch.device) -> Tensor:
        k = kept_channels(total, ratio)
        perm = torch.randperm(total, generator=generator(key.shared_seed(),
                                                          torch.device("cpu")))
        return perm[:k].sort().values.to(device)

    def scale(self, total: int, ratio: float) -> float:
        return total / kept_channels(total, ratio) if self.rescale else 1.0


def quantization_bits(ratio: float) -> int:
    """Bits per value at ``ratio`` relative to 32-bit floats: the largest of
    ``(1, 2, 4, 8, 16)`` with ``32 / bits >= ratio`` (1 bit past ratio 32); 32 (raw) at
    ratio <= 1."""
    if ratio <= 1.0:
        return 32
    fitting = [b for b in BITS if 32 / b >= ratio]
    return max(fitting) if fitting else BITS[0]


class Quantize(Codec):
    """Stochastic-rounding integer quantisation with a per-row offset and scale (AdaQP-like).

    Row ``x`` (all its values) becomes codes ``q = floor((x - lo) / s + u)`` (computed as
    ``(x - lo) * (1 / s) + u``, each operation rounded on its own) with
    ``lo = min x``, ``s = (max x - lo) / (2**b - 1)`` and ``u ~ U[0, 1)`` from the message's
    key, packed ``8 / b`` to a byte; ``lo`` and ``s`` travel with the row (in the row's dtype,
    float32 for half types). Decoding gives ``lo + q * s``, an unbiased estimate of ``x``.
    ``b = quantization_bits(ratio)``; rows whose packed form is not smaller are sent raw.

    The noise ``u`` is a keyed hash of (message key, row, value index), so the bytes do not
    depend on the thread count or the backend. Encoding and decoding run in one pass over each
    row in the native kernels (``torch.ops.pyg_sar.quantize_*``); ``backend`` picks them
    (``"auto"``: native where built for the device, else the pure-torch reference, same bytes;
    ``"native"`` / ``"reference"`` force one). The backend is not part of :meth:`describe`: it
    changes no byte.
    """

    name = "quantize"

    def __init__(self, backend: str = "auto") -> None:
        if backend not in BACKENDS:
            raise ValueError(f"Quantize: backend must be one of {BACKENDS} (got {backend!r})")
        self.backend = backend

    def _layout(self, row_shape: RowShape, dtype: torch.dtype,
                ratio: float) -> tuple[int, int, torch.dtype]:
        bits = quantization_bits(ratio)
        meta = dtype if dtype in (torch.float32, torch.float64) else torch.float32
        return bits, math.prod(row_shape), meta

    def is_raw(self, row_shape: RowShape, dtype: torch.dtype, ratio: float) -> bool:
        if not dtype.is_floating_point:
            return True
        bits, count, meta = self._layout(row_shape, dtype, ratio)
        if bits >= 32:
            return True
        return packed_bytes(count, bits) + 2 * _itemsize(meta) >= count * _itemsize(dtype)

    def wire_row(self, row_shape: RowShape, dtype: torch.dtype,
                 ratio: float) -> tuple[RowShape, torch.dtype]:
        bits, count, meta = self._layout(row_shape, dtype, ratio)
        return (packed_bytes(count, bits) + 2 * _itemsize(meta),), torch.uint8

    def encode(self, rows: Tensor, ratio: float, key: MessageKey) -> Tensor:
        bits, count, meta = self._layout(tuple(rows.shape[1:]), rows.dtype, ratio)
        x = rows.reshape(rows.shape[0], count)
        x = x if x.dtype == meta else x.to(meta)
        return quantize_encode(x, bits, key.noise_seed(), backend=self.backend)

    def decode(self, payload: Tensor, row_shape: RowShape, dtype: torch.dtype, ratio: float,
               key: MessageKey) -> Tensor:
        bits, count, meta = self._layout(row_shape, dtype, ratio)
        x = quantize_decode(payload, bits, count, meta, backend=self.backend)
        return x.to(dtype).view(payload.shape[0], *row_shape)


CODECS: dict[str, type[Codec]] = {c.name: c for c in (Truncate, RandomSubset, Quantize)}
