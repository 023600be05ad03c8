r"""Schedules: the compression ratio as a function of the training step ``t``.

A ratio is ``>= 1``; 1 is lossless. Decaying schedules go from ``r_max`` at ``t = 0`` to
``r_min`` (1 by default, so training ends on full communication) at ``t = decay_steps`` and
stay there:

* :class:`Linear` (VARCO, arXiv 2406.17611):
  :math:`r(t) = \max(r_{max} - t (r_{max} - r_{min}) / D, r_{min})`; the paper's form
  :math:`\max(r_{max} - s t (r_{max} - r_{min}) / (T - 2), r_{min})` is :func:`varco`
  (``D = (T - 2) / s``);
* :class:`Exponential`: :math:`r(t) = r_{max} (r_{min} / r_{max})^{\min(t, D) / D}`;
* :class:`Step`: the exponential one held constant over ``stages`` equal stages:
  :math:`r(t) = r_{max} (r_{min} / r_{max})^{\min(\lfloor t \cdot stages / D \rfloor,
  stages) / stages}`;
* :class:`Fixed`: a constant ratio (the fixed-rate baselines);
* :class:`KeepFraction`: the *kept fraction* :math:`f = 1/r` grows polynomially,
  :math:`f(t) = f_0 + (f_1 - f_0) \min(t / D, 1)^p`; its mean kept fraction over
  ``[0, D]`` is :math:`f_0 + (f_1 - f_0) / (p + 1)`, so a power above 1 spends longer at a
  small fraction and still ends at ``f_1``;
* :class:`Stages`: piecewise-constant ratios, ``r_i`` while ``t < until_i``, then ``final``;
  :func:`bit_stages` builds the stages of a bit-width ladder for
  :class:`~pyg_sar.compression.Quantize` (ratio ``32 / bits`` quantises at exactly ``bits``).
"""
from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Sequence

from pyg_sar.compression.packing import BITS  # the packed widths Quantize supports


class Schedule(ABC):
    """The compression ratio at training step ``t`` (``t >= 0``)."""

    name: str = ""

    def __call__(self, t: int) -> float:
        if not isinstance(t, int) or isinstance(t, bool) or t < 0:
            raise ValueError(f"{type(self).__name__}: step must be an integer >= 0 (got {t!r})")
        return self.ratio(t)

    @abstractmethod
    def ratio(self, t: int) -> float:
        """The ratio at step ``t`` (already checked)."""

    @abstractmethod
    def describe(self) -> dict:
        """The schedule's name and parameters (checked when a checkpoint is resumed)."""

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.describe().items() if k != "name")
        return f"{type(self).__name__}({args})"


def _check_ratio(owner: str, name: str, value: float) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not (
            math.isfinite(value) and value >= 1.0):
        raise ValueError(f"{owner}: {name} must be a finite number >= 1 (1 = lossless) "
                         f"(got {value!r})")
    return float(value)


class Fixed(Schedule):
    """The same ratio at every step."""

    name = "fixed"

    def __init__(self, ratio: float) -> None:
        self.value = _check_ratio("Fixed", "ratio", ratio)

    def ratio(self, t: int) -> float:
        return self.value

    def describe(self) -> dict:
        return {"name": self.name, "ratio": self.value}


class _Decaying(Schedule):
    def __init__(self, r_max: float, r_min: float = 1.0, decay_steps: float = 300) -> None:
        owner = type(self).__name__
        self.r_max = _check_ratio(owner, "r_max", r_max)
        self.r_min = _check_ratio(owner, "r_min", r_min)
        if self.r_min > self.r_max:
            raise ValueError(f"{owner}: r_min must be <= r_max (got r_min={r_min!r}, "
                             f"r_max={r_max!r})")
        if isinstance(decay_steps, bool) or not isinstance(decay_steps, (int, float)) or not (
                math.isfinite(decay_steps) and decay_steps > 0):
            raise ValueError(f"{owner}: decay_steps must be a finite number > 0 "
                             f"(got {decay_steps!r})")
        self.decay_steps = float(decay_steps)

    def describe(self) -> dict:
        return {"name": self.name, "r_max": self.r_max, "r_min": self.r_min,
                "decay_steps": self.decay_steps}


class Linear(_Decaying):
    """VARCO's linear decay from ``r_max`` to ``r_min`` over ``decay_steps`` steps."""

    name = "linear"

    def ratio(self, t: int) -> float:
        return max(self.r_max - t * (self.r_max - self.r_min) / self.decay_steps, self.r_min)


class Exponential(_Decaying):
    """Geometric decay from ``r_max`` to ``r_min`` over ``decay_steps`` steps."""

    name = "exponential"

    def ratio(self, t: int) -> float:
        if t >= self.decay_steps:
            return self.r_min
        return self.r_max * (self.r_min / self.r_max) ** (t / self.decay_steps)


class Step(_Decaying):
    """Geometric decay in ``stages`` constant stages, reaching ``r_min`` at ``decay_steps``."""

    name = "step"

    def __init__(self, r_max: float, r_min: float = 1.0, decay_steps: float = 300,
                 stages: int = 4) -> None:
        super().__init__(r_max, r_min, decay_steps)
        if isinstance(stages, bool) or not isinstance(stages, int) or stages < 1:
            raise ValueError(f"Step: stages must be an integer >= 1 (got {stages!r})")
        self.stages = stages

    def ratio(self, t: int) -> float:
        stage = min(math.floor(t * self.stages / self.decay_steps), self.stages)
        if stage >= self.stages:
            return self.r_min
        return self.r_max * (self.r_min / self.r_max) ** (stage / self.stages)

    def describe(self) -> dict:
        return {**super().describe(), "stages": self.stages}


def _check_positive_number(owner: str, name: str, value: float) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not (
            math.isfinite(value) and value > 0):
        raise ValueError(f"{owner}: {name} must be a finite number > 0 (got {value!r})")
    return float(value)


class KeepFraction(Schedule):
    """The kept fraction ``f = 1 / ratio`` grows from ``start`` to ``end`` over
    ``decay_steps`` steps as ``f(t) = start + (end - start) * min(t / decay_steps, 1) ** power``.

    Args:
        start: the kept fraction at step 0 (``0 < start <= end``).
        end: the kept fraction from ``decay_steps`` on (``<= 1``; 1, the default, is lossless).
        decay_steps: steps to reach ``end`` (> 0).
        power: the polynomial's exponent (> 0): 1 is linear in the fraction; 3 with
            ``start = 1/32`` keeps about 27% of the bytes on average and spends the last
            20% of ``decay_steps`` at half the channels or more.
    """

    name = "fraction"

    def __init__(self, start: float, end: float = 1.0, decay_steps: float = 300,
                 power: float = 1.0) -> None:
        for name, value in (("start", start), ("end", end)):
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not (
                    math.isfinite(value) and 0 < value <= 1):
                raise ValueError(f"KeepFraction: {name} must be a kept fraction in (0, 1] "
                                 f"(got {value!r})")
        if start > end:
            raise ValueError(f"KeepFraction: start must be <= end (got start={start!r}, "
                             f"end={end!r})")
        self.start, self.end = float(start), float(end)
        self.decay_steps = _check_positive_number("KeepFraction", "decay_steps", decay_steps)
        self.power = _check_positive_number("KeepFraction", "power", power)

    def fraction(self, t: int) -> float:
        """The kept fraction at step ``t``."""
        if t >= self.decay_steps:
            return self.end
        return self.start + (self.end - self.start) * (t / self.decay_steps) ** self.power

    def mean_fraction(self) -> float:
        """The mean kept fraction over ``[0, decay_steps]`` (the integral of :meth:`fraction`
        divided by ``decay_steps``)."""
        return self.start + (self.end - self.start) / (self.power + 1)

    def ratio(self, t: int) -> float:
        return 1.0 / self.fraction(t)

    def describe(self) -> dict:
        return {"name": self.name, "start": self.start, "end": self.end,
                "decay_steps": self.decay_steps, "power": self.power}


class Stages(Schedule):
    """Piecewise-constant ratios: ``stages[i][0]`` while ``t < stages[i][1]`` (the first stage
    whose end is past ``t``), then ``final``.

    Args:
        stages: ``(ratio, until)`` pairs, ratios ``>= 1`` and ``until`` integer steps, strictly
            increasing and ``>= 1``.
        final: the ratio from the last ``until`` on (default 1: lossless).
    """

    name = "stages"

    def __init__(self, stages: Sequence[tuple[float, int]], final: float = 1.0) -> None:
        if isinstance(stages, (str, bytes)) or not isinstance(stages, Sequence) or not stages:
            raise ValueError(f"Stages: stages must be a non-empty sequence of (ratio, until) "
                             f"pairs (got {stages!r})")
        pairs: list[tuple[float, int]] = []
        for i, pair in enumerate(stages):
            if isinstance(pair, (str, bytes)) or not isinstance(pair, Sequence) or len(pair) != 2:
                raise ValueError(f"Stages: stage {i} must be a (ratio, until) pair (got "
                                 f"{pair!r})")
            ratio = _check_ratio("Stages", f"stage {i}'s ratio", pair[0])
            until = pair[1]
            if isinstance(until, bool) or not isinstance(until, int) or until < 1:
                raise ValueError(f"Stages: stage {i}'s until must be an integer step >= 1 "
                                 f"(got {until!r})")
            if pairs and until <= pairs[-1][1]:
                raise ValueError(f"Stages: the stages' until must be strictly increasing "
                                 f"(stage {i} ends at {until} after stage {i - 1} at "
                                 f"{pairs[-1][1]})")
            pairs.append((ratio, until))
        self.stages = pairs
        self.final = _check_ratio("Stages", "final", final)

    def ratio(self, t: int) -> float:
        for ratio, until in self.stages:
            if t < until:
                return ratio
        return self.final

    def describe(self) -> dict:
        return {"name": self.name, "stages": list(self.stages), "final": self.final}


def bit_stages(bits: Sequence[int] = (2, 4, 8), ends: Sequence[float] = (0.35, 0.65, 0.95),
               total_steps: int = 300) -> Stages:
    """A bit-width ladder for :class:`~pyg_sar.compression.Quantize`: ``bits[i]`` bits until
    step ``round(ends[i] * total_steps)``, then 32 (raw).

    The stage of ``b`` bits has ratio ``32 / b``, which :func:`~pyg_sar.compression.
    quantization_bits` maps back to exactly ``b``. ``ends`` are fractions of training in
    ``(0, 1]``, strictly increasing; ``total_steps`` must be large enough that the rounded ends
    stay distinct (with a different codec the ratios mean ``32 / b`` as they are).
    """
    if isinstance(total_steps, bool) or not isinstance(total_steps, int) or total_steps < 1:
        raise ValueError(f"bit_stages: total_steps must be an integer >= 1 (got "
                         f"{total_steps!r})")
    bits, ends = tuple(bits), tuple(ends)
    if not bits or len(bits) != len(ends):
        raise ValueError(f"bit_stages: bits and ends must be non-empty and of equal length "
                         f"(got bits={bits!r}, ends={ends!r})")
    for b in bits:
        if isinstance(b, bool) or not isinstance(b, int) or b not in BITS:
            raise ValueError(f"bit_stages: bits must be among {BITS} (got {b!r})")
    for i, e in enumerate(ends):
        if isinstance(e, bool) or not isinstance(e, (int, float)) or not (
                math.isfinite(e) and 0 < e <= 1) or (i and e <= ends[i - 1]):
            raise ValueError(f"bit_stages: ends must be strictly increasing fractions in "
                             f"(0, 1] (got {ends!r})")
    until = [round(e * total_steps) for e in ends]
    if until[0] < 1 or any(b <= a for a, b in zip(until, until[1:])):
        raise ValueError(f"bit_stages: total_steps={total_steps} is too small for ends "
                         f"{ends!r} (the stages would end at steps {until}); use more steps "
                         f"or fewer stages")
    return Stages([(32 / b, u) for b, u in zip(bits, until)])


def varco(r_max: float = 128.0, r_min: float = 1.0, slope: float = 5.0,
          total_steps: int = 300) -> Linear:
    """VARCO's schedule ``max(r_max - slope * t * (r_max - r_min) / (T - 2), r_min)`` with
    ``T = total_steps`` (the paper's defaults but ``r_min = 1``: lossless at the end; the paper
    uses 1.5)."""
    if isinstance(total_steps, bool) or not isinstance(total_steps, int) or total_steps <= 2:
        raise ValueError(f"varco: total_steps must be an integer > 2 (got {total_steps!r})")
    if isinstance(slope, bool) or not isinstance(slope, (int, float)) or not (
            math.isfinite(slope) and slope > 0):
        raise ValueError(f"varco: slope must be a finite number > 0 (got {slope!r})")
    return Linear(r_max, r_min, (total_steps - 2) / slope)


SCHEDULES: dict[str, type[Schedule]] = {
    s.name: s for s in (Fixed, Linear, Exponential, Step, KeepFraction, Stages)}
