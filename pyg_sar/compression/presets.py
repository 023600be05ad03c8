"""``auto``: a per-layer compression preset (``python -m pyg_sar.train --compression auto``).

Every message-passing layer quantises along a bit ladder (:func:`bit_stages`): 4 bits until
80% of training, 8 until 95%, then raw (the last layer too: it carries a third of the bytes of
a 3-layer SAGE with ``project_first``, so it must be compressed for a large saving). The inner
layers' ladder and the last layer's are separate parameters, so a variant can set them apart.
:data:`AUTO` holds these parameters (benchmarks and docs quote it); :func:`auto` takes any of
them as keyword arguments to try variants.

An earlier ladder started the inner layers at 2 bits (2 until 45%, 4 until 80%, 8 until 95%):
it sent a little less (21.9% against 22.6% of full communication's bytes on WordNet's GAT,
random partition, P = 4) but ended 0.98 points below full communication there, where the
4-bit start ends within its seed spread (``benchmarks/results/compression_real.md``, method
``auto-2bit``).

GAT's attention logits (the tensors a layer sends ``exact``, ``H`` values a row) cross in
bfloat16 while their layer's codec is lossy, and raw in the last, lossless stage
(``logit_dtype``, :mod:`pyg_sar.core.exchange`). Sent raw they are a ninth of a 4-head x 8
channel layer's full traffic but were 37% of the earlier 2-bit ladder's bytes on CiteSeer (a
2-bit row of 32 features takes 16 bytes with its offset and scale, its 4 float32 logits 16
more): with that ladder raw logits put a 3-layer GAT at 32.4% of full communication's bytes,
bf16 logits at 26.7%. bfloat16
rather than float16 (the same bytes): a logit beyond float16's range would arrive as an
infinity, silently. ``logit_dtype="raw"`` sends them raw throughout.

No error feedback by default: ``Quantize`` rounds stochastically and without bias, so feeding
the residual back only adds the previous step's error to each message (on WordNet, random
partition, the 2-bit ladder with feedback on both directions ended 1.3 points lower than
without in the study that chose it: ``benchmarks/results/compression_study.md``).

Usage::

    from pyg_sar.compression import auto
    model = pyg_sar.convert(model, pyg_sar.SARConfig(compression=auto(epochs)))
    for epoch in range(epochs):
        ...; optimizer.step(); pyg_sar.compression.step_all(model)

The rule holds two compressors (inner layers, last layer). With ``error_feedback`` switched on
they keep the residuals of their layers, about (send rows + halo rows) x channels per layer and
direction.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Optional

from pyg_sar.compression.codecs import Quantize
from pyg_sar.compression.interface import Compressor, check_logit_dtype
from pyg_sar.compression.schedules import bit_stages

AUTO: dict[str, Any] = {
    "codec": "quantize",
    "bits": (4, 8),               # inner layers' bit ladder ...
    "ends": (0.80, 0.95),         # ... and where each stage ends (fractions of training)
    "last_bits": (4, 8),          # the last layer's ladder (today the same)
    "last_ends": (0.80, 0.95),
    "error_feedback": "none",     # unbiased rounding: feedback would add last step's error
    "directions": "both",
    "logit_dtype": "bfloat16",    # GAT's attention logits while lossy (raw: "raw")
}
"""The parameters of :func:`auto` (after each stage the next one; raw after the last end)."""


class AutoRule:
    """The per-layer rule :func:`auto` returns: ``inner`` for every message-passing layer but
    the last, ``last`` for the last one (``SARConfig(compression=rule)``).

    Attributes:
        inner: the compressor of the inner layers.
        last: the compressor of the last layer.
        params: the preset's parameters (:data:`AUTO` with the overrides) and
            ``total_steps``.
    """

    def __init__(self, inner: Compressor, last: Compressor, params: dict[str, Any]) -> None:
        self.inner, self.last, self.params = inner, last, params

    def __call__(self, name: str, index: int, count: int) -> Optional[Compressor]:
        return self.last if index == count - 1 else self.inner

    def describe(self) -> dict[str, Any]:
        """The preset's parameters (JSON-friendly: tuples become lists)."""
        return {k: list(v) if isinstance(v, tuple) else v for k, v in self.params.items()}

    def __repr__(self) -> str:
        return f"AutoRule(inner={self.inner!r}, last={self.last!r})"


def auto(total_steps: int, *, seed: int = 0, bits: Optional[Sequence[int]] = None,
         ends: Optional[Sequence[float]] = None, last_bits: Optional[Sequence[int]] = None,
         last_ends: Optional[Sequence[float]] = None, error_feedback: Optional[str] = None,
         directions: Optional[str] = None, logit_dtype: Any = None) -> AutoRule:
    """The ``auto`` preset laid out over ``total_steps`` optimizer steps.

    Every keyword left ``None`` takes its value from :data:`AUTO`; ``bits``/``ends`` are the
    inner layers' ladder, ``last_bits``/``last_ends`` the last layer's (see
    :func:`~pyg_sar.compression.bit_stages`), ``error_feedback`` and ``directions`` go to both
    :class:`~pyg_sar.compression.Compressor` objects (``directions`` alone, say ``"rows"``,
    also narrows the preset's feedback to that direction), ``logit_dtype`` too (``"raw"``:
    the logits are never cast; see :func:`~pyg_sar.compression.interface.check_logit_dtype`).
    A model with one message-passing layer gets the last layer's compressor.
    """
    if logit_dtype is not None:  # normalised to a name, so describe() stays JSON-friendly
        checked = check_logit_dtype(logit_dtype)
        logit_dtype = "raw" if checked is None else str(checked).replace("torch.", "")
    given = {"bits": bits, "ends": ends, "last_bits": last_bits, "last_ends": last_ends,
             "error_feedback": error_feedback, "directions": directions,
             "logit_dtype": logit_dtype}
    params = dict(AUTO)
    params.update({k: tuple(v) if isinstance(v, (list, tuple)) else v
                   for k, v in given.items() if v is not None})
    if error_feedback is None and directions is not None and params["error_feedback"] == "both":
        params["error_feedback"] = directions  # feed back only what is compressed
    params["total_steps"] = total_steps

    def make(ladder: Sequence[int], stage_ends: Sequence[float]) -> Compressor:
        extra = {k: params[k] for k, default in (("error_feedback", "none"),
                                                  ("directions", "both"),
                                                  ("logit_dtype", "raw"))
                 if params[k] != default}  # defaults are not passed: old describe() strings
        return Compressor(Quantize(), bit_stages(ladder, stage_ends, total_steps), seed=seed,
                          **extra)

    return AutoRule(make(params["bits"], params["ends"]),
                    make(params["last_bits"], params["last_ends"]), params)
