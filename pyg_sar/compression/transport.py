"""Floating-point values on the wire in a narrower dtype (``SARConfig(wire_dtype=...)``),
alone or after a compressor's codec.

A :class:`Transport` is what one source tensor's messages go through: the bound codec of the
layer's compressor, if any, then a cast of the payload's floating-point values to the wire
dtype where that dtype is narrower than theirs (:func:`payload_dtype`). On receipt the payload
is cast back to the codec's payload dtype (the rows' own dtype for channel codecs and raw
rows) and decoded. So, for float32 rows and ``wire_dtype=torch.bfloat16``:

* raw rows cross as bf16 (half the bytes) and arrive as float32 rows rounded to bf16;
* :class:`~pyg_sar.compression.Truncate` / :class:`~pyg_sar.compression.RandomSubset` at
  ratio ``r``: the kept channels cross as bf16 (about ``bytes / (2 r)``);
* :class:`~pyg_sar.compression.Quantize`: its payload is already packed integer codes (with
  the per-row offset and scale inside the bytes), so the wire dtype leaves it alone; rows it
  sends raw (ratio 1, rows too small to pack) are cast like any raw rows.

Rows already in a dtype no wider than the wire dtype (bf16 rows, float16 rows under a bf16
wire, float32 rows under a float32 wire) cross as they are; integer rows are never cast.
The cast rounds to nearest even: it is deterministic, so a rematerialising re-fetch decodes to
exactly the forward's rows, and mode ``"sa"`` (which keeps the received bf16 payload) equals
mode ``"sar"`` bit for bit. The gradients of the rows go back through the same transport.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

import torch
from torch import Tensor

from pyg_sar.compression.codecs import RowShape
from pyg_sar.compression.interface import BoundCodec
from pyg_sar.compression.keys import MessageKey

WIRE_DTYPES = (torch.bfloat16, torch.float32)
"""The wire dtypes ``SARConfig(wire_dtype=...)`` accepts (besides ``None``)."""

_NAMES = {"bfloat16": torch.bfloat16, "bf16": torch.bfloat16, "torch.bfloat16": torch.bfloat16,
          "float32": torch.float32, "fp32": torch.float32, "torch.float32": torch.float32}


def check_wire_dtype(value: Any) -> Optional[torch.dtype]:
    """``value`` as a wire dtype: ``None``, ``torch.bfloat16`` or ``torch.float32`` (names such
    as ``"bfloat16"``, ``"bf16"``, ``"float32"`` are accepted and normalised); anything else
    is a ``ValueError`` naming it. float16 is refused: activations and gradients beyond its
    range (65504) would arrive as infinities, silently."""
    if value is None:
        return None
    if isinstance(value, str) and value.strip().lower() in _NAMES:
        return _NAMES[value.strip().lower()]
    if isinstance(value, torch.dtype) and value in WIRE_DTYPES:
        return value
    hint = (" (float16 is not offered: values beyond its range, 65504, would cross as "
            "infinities; bfloat16 keeps float32's range)"
            if isinstance(value, (str, torch.dtype))
            and value in (torch.float16, "float16", "fp16", "half") else "")
    raise ValueError(f"SARConfig: wire_dtype must be None, torch.bfloat16 or torch.float32 "
                     f"(or one of {sorted(_NAMES)}); got {value!r}{hint}")


def _itemsize(dtype: torch.dtype) -> int:
    return torch.empty((), dtype=dtype).element_size()


def payload_dtype(dtype: torch.dtype, wire_dtype: Optional[torch.dtype]) -> torch.dtype:
    """The dtype values of ``dtype`` cross the network in: ``wire_dtype`` for floating-point
    values wider than it, ``dtype`` otherwise (no wire dtype, integers, narrower floats)."""
    if (wire_dtype is None or not dtype.is_floating_point
            or _itemsize(dtype) <= _itemsize(wire_dtype)):
        return dtype
    return wire_dtype


@dataclass(frozen=True)
class Transport:
    """The encoding of one source tensor's messages: ``codec`` (a compressor bound for the
    propagate call, or ``None``), then floating payload values cast to ``wire_dtype`` (see
    the module docstring). It has :class:`~pyg_sar.compression.BoundCodec`'s interface, so
    the engine's fetcher, returner and halo exchange treat both alike."""

    codec: Optional[BoundCodec] = None
    wire_dtype: Optional[torch.dtype] = None

    @property
    def keyed(self) -> bool:
        """Whether the bytes depend on the message's key (a codec); a plain cast does not,
        so a halo exchange casts all peers' rows at once."""
        return self.codec is not None

    def key(self, tensor: int, owner: int, user: int,
            direction: str = "rows") -> Optional[MessageKey]:
        """The codec's key of the message (``None`` without a codec: a cast needs none)."""
        return None if self.codec is None else self.codec.key(tensor, owner, user, direction)

    def _coded(self, row_shape: RowShape, dtype: torch.dtype) -> tuple[RowShape, torch.dtype,
                                                                        bool]:
        """Row shape and dtype of the codec's payload, and whether the codec encodes at all."""
        c = self.codec
        if c is None or c.codec.is_raw(tuple(row_shape), dtype, c.ratio):
            return tuple(row_shape), dtype, False
        shape, wire = c.codec.wire_row(tuple(row_shape), dtype, c.ratio)
        return tuple(shape), wire, True

    def _cast(self, payload: Tensor) -> Tensor:
        target = payload_dtype(payload.dtype, self.wire_dtype)
        return payload if target == payload.dtype else payload.to(target)

    def is_raw(self, like: Tensor) -> bool:
        """Whether rows shaped like ``like``'s go exactly as they are."""
        _, dtype, coded = self._coded(tuple(like.shape[1:]), like.dtype)
        return not coded and payload_dtype(dtype, self.wire_dtype) == dtype

    def wire_like(self, like: Tensor) -> Tensor:
        """An empty ``[0, *payload row]`` tensor in the payload's wire dtype."""
        shape, dtype, _ = self._coded(tuple(like.shape[1:]), like.dtype)
        return torch.empty((0, *shape), dtype=payload_dtype(dtype, self.wire_dtype),
                           device=like.device)

    def encode(self, rows: Tensor, key: Optional[MessageKey]) -> Tensor:
        return self._cast(rows if self.codec is None else self.codec.encode(rows, key))

    def encode_rows(self, source: Tensor, index: Tensor, key: Optional[MessageKey]) -> Tensor:
        """``encode(source[index], key)`` without a full-size copy where the codec can."""
        if self.codec is None:
            return self._cast(source.index_select(0, index))
        return self._cast(self.codec.encode_rows(source, index, key))

    def decode(self, payload: Tensor, row_shape: RowShape, dtype: torch.dtype,
               key: Optional[MessageKey]) -> Tensor:
        """Rows ``[R, *row_shape]`` of ``dtype`` from ``payload``."""
        _, coded_dtype, coded = self._coded(tuple(row_shape), dtype)
        payload = payload if payload.dtype == coded_dtype else payload.to(coded_dtype)
        return self.codec.decode(payload, tuple(row_shape), dtype, key) if coded else payload

    def decode_into(self, out: Tensor, payload: Tensor, key: Optional[MessageKey]) -> None:
        """``out.copy_(decode(payload, ...))``."""
        _, coded_dtype, coded = self._coded(tuple(out.shape[1:]), out.dtype)
        if not coded:
            out.copy_(payload)  # the cast back to the rows' dtype is exact
        else:
            self.codec.decode_into(out, payload if payload.dtype == coded_dtype
                                   else payload.to(coded_dtype), key)

    def wire_bytes(self, rows: int, row_shape: RowShape, dtype: torch.dtype) -> int:
        """Bytes that ``rows`` rows of ``row_shape`` and ``dtype`` take on the wire."""
        shape, coded_dtype, _ = self._coded(tuple(row_shape), dtype)
        n = 1
        for s in shape:
            n *= s
        return rows * n * _itemsize(payload_dtype(coded_dtype, self.wire_dtype))
