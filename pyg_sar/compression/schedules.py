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
* :class:`Fixed`: a constant ratio (the fixed-rate baselines).
"""
from __future__ import annotations

import math
from abc import ABC, abstractmethod


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


SCHEDULES: dict[str, type[Schedule]] = {s.name: s for s in (Fixed, Linear, Exponential, Step)}
