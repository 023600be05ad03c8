"""Compression of the rows that cross the network (seed: VARCO,
arXiv 2406.17611; docs/compression.md).

* :class:`Compressor` (:mod:`.interface`): a codec and a ratio schedule, set through
  ``SARConfig(compression=...)`` for all layers, per layer (a dict of layer name ->
  compressor, a callable, :func:`all_but_last`), advanced with :meth:`Compressor.step`.
* Codecs (:mod:`.codecs`): :class:`Truncate` (VARCO), :class:`RandomSubset`,
  :class:`Quantize` (stochastic rounding, per-row scale, packed bits).
* Wire dtype (:mod:`.transport`): ``SARConfig(wire_dtype=torch.bfloat16)`` sends floating
  rows and gradients as bf16, alone or after a codec (:class:`Transport`).
* Schedules (:mod:`.schedules`): :class:`Fixed`, :class:`Linear` (:func:`varco`),
  :class:`Exponential`, :class:`Step`, :class:`KeepFraction`, :class:`Stages`
  (:func:`bit_stages`).
* Error feedback (:mod:`.feedback`): :class:`Feedback`, the per-rank residuals of
  ``Compressor(error_feedback=...)``.
* Preset (:mod:`.presets`): :func:`auto` (``--compression auto``), its parameters :data:`AUTO`.
"""
from __future__ import annotations

from pyg_sar.compression.codecs import (
    CODECS,
    Codec,
    Quantize,
    RandomSubset,
    Truncate,
    kept_channels,
    quantization_bits,
)
from pyg_sar.compression.factory import make_compressor, make_schedule
from pyg_sar.compression.feedback import Feedback
from pyg_sar.compression.interface import (
    BoundCodec,
    Compressor,
    all_but_last,
    compressors_of,
    resolve,
    step_all,
)
from pyg_sar.compression.keys import MessageKey
from pyg_sar.compression.presets import AUTO, auto
from pyg_sar.compression.roundtrip import roundtrip
from pyg_sar.compression.schedules import (
    SCHEDULES,
    Exponential,
    Fixed,
    KeepFraction,
    Linear,
    Schedule,
    Stages,
    Step,
    bit_stages,
    varco,
)
from pyg_sar.compression.transport import (
    WIRE_DTYPES,
    Transport,
    check_wire_dtype,
    payload_dtype,
)

__all__ = ["AUTO", "CODECS", "SCHEDULES", "WIRE_DTYPES", "BoundCodec", "Codec", "Compressor",
           "Exponential", "Feedback", "Fixed", "KeepFraction", "Linear", "MessageKey",
           "Quantize", "RandomSubset", "Schedule", "Stages", "Step", "Transport", "Truncate",
           "all_but_last", "auto", "bit_stages", "check_wire_dtype", "compressors_of",
           "kept_channels", "make_compressor", "make_schedule", "payload_dtype",
           "quantization_bits", "resolve", "roundtrip", "step_all", "varco"]
