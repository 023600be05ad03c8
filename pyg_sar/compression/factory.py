"""Schedules and compressors by name (the command line's and the benchmarks' vocabulary)."""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Optional

from pyg_sar.compression.codecs import CODECS
from pyg_sar.compression.interface import Compressor
from pyg_sar.compression.schedules import (
    SCHEDULES,
    Exponential,
    Fixed,
    KeepFraction,
    Linear,
    Schedule,
    Stages,
    Step,
)

CODEC_NAMES = tuple(CODECS)
SCHEDULE_NAMES = tuple(SCHEDULES)


def make_schedule(name: str, ratio_max: Optional[float] = None, ratio_min: float = 1.0,
                  decay_steps: Optional[float] = None, *, power: float = 1.0,
                  stages: Optional[Sequence[tuple[float, int]]] = None) -> Schedule:
    """A schedule by name.

    * ``fixed``: ratio ``ratio_max`` (default 1);
    * ``linear`` (VARCO), ``exponential``, ``step``: from ``ratio_max`` to ``ratio_min`` over
      ``decay_steps`` steps;
    * ``fraction``: :class:`KeepFraction` from the kept fraction ``1 / ratio_max`` to
      ``1 / ratio_min`` over ``decay_steps`` steps with exponent ``power``;
    * ``stages``: :class:`Stages` of the explicit ``(ratio, until)`` pairs ``stages``, then
      ``ratio_min``.
    """
    if name not in SCHEDULES:
        raise ValueError(f"unknown compression schedule {name!r} (known: "
                         f"{', '.join(SCHEDULE_NAMES)})")
    if power != 1.0 and name != "fraction":
        raise ValueError(f"power={power!r} is for the 'fraction' schedule (got {name!r})")
    if name == "stages":
        if stages is None:
            raise ValueError("schedule 'stages' needs stages (a list of (ratio, until) pairs)")
        if ratio_max is not None or decay_steps is not None:
            raise ValueError("schedule 'stages' takes its ratios and steps from stages, not "
                             f"ratio_max={ratio_max!r} / decay_steps={decay_steps!r}")
        return Stages(stages, final=ratio_min)
    if stages is not None:
        raise ValueError(f"stages are for the 'stages' schedule (got {name!r})")
    ratio_max = 1.0 if ratio_max is None else ratio_max
    if name == "fixed":
        return Fixed(ratio_max)
    if decay_steps is None:
        raise ValueError(f"schedule {name!r} needs decay_steps (the step at which it reaches "
                         f"ratio_min)")
    if name == "fraction":
        for label, r in (("ratio_max", ratio_max), ("ratio_min", ratio_min)):
            if isinstance(r, bool) or not isinstance(r, (int, float)) or not r >= 1:
                raise ValueError(f"schedule 'fraction': {label} must be a number >= 1 "
                                 f"(got {r!r})")
        if ratio_min > ratio_max:
            raise ValueError(f"schedule 'fraction': ratio_min must be <= ratio_max (got "
                             f"ratio_min={ratio_min!r}, ratio_max={ratio_max!r})")
        return KeepFraction(1 / ratio_max, 1 / ratio_min, decay_steps, power)
    kind = {"linear": Linear, "exponential": Exponential, "step": Step}[name]
    return kind(ratio_max, ratio_min, decay_steps)


def make_compressor(codec: str, schedule: str = "fixed", ratio_max: Optional[float] = None,
                    ratio_min: float = 1.0, decay_steps: Optional[float] = None,
                    seed: int = 0, *, power: float = 1.0,
                    stages: Optional[Sequence[tuple[float, int]]] = None,
                    error_feedback: str = "none", directions: str = "both",
                    logit_dtype: Any = None) -> Compressor:
    """A compressor from names (see :data:`CODEC_NAMES`, :data:`SCHEDULE_NAMES` and
    :func:`make_schedule`); ``error_feedback``, ``directions`` and ``logit_dtype`` go to
    :class:`~pyg_sar.compression.Compressor`."""
    if codec not in CODECS:
        raise ValueError(f"unknown compression {codec!r} (known: {', '.join(CODEC_NAMES)})")
    sched = make_schedule(schedule, ratio_max, ratio_min, decay_steps, power=power,
                          stages=stages)
    # only non-default options are passed on, so the Compressor's own defaults rule
    extra: dict[str, Any] = {}
    if error_feedback != "none":
        extra["error_feedback"] = error_feedback
    if directions != "both":
        extra["directions"] = directions
    if logit_dtype is not None:
        extra["logit_dtype"] = logit_dtype
    return Compressor(CODECS[codec](), sched, seed=seed, **extra)
