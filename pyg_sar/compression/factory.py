"""Compressors by name, for command lines and benchmarks (``python -m pyg_sar.train``)."""
from __future__ import annotations

from typing import Optional

from pyg_sar.compression.codecs import CODECS
from pyg_sar.compression.interface import Compressor
from pyg_sar.compression.schedules import SCHEDULES, Exponential, Fixed, Linear, Schedule, Step

CODEC_NAMES = tuple(CODECS)
SCHEDULE_NAMES = tuple(SCHEDULES)


def make_schedule(name: str, ratio_max: float, ratio_min: float = 1.0,
                  decay_steps: Optional[float] = None) -> Schedule:
    """A schedule by name: ``fixed`` (ratio ``ratio_max``), ``linear`` (VARCO), ``exponential``
    or ``step`` (from ``ratio_max`` to ``ratio_min`` over ``decay_steps`` steps)."""
    if name not in SCHEDULES:
        raise ValueError(f"unknown compression schedule {name!r} (known: "
                         f"{', '.join(SCHEDULE_NAMES)})")
    if name == "fixed":
        return Fixed(ratio_max)
    if decay_steps is None:
        raise ValueError(f"schedule {name!r} needs decay_steps (the step at which it reaches "
                         f"ratio_min)")
    kind = {"linear": Linear, "exponential": Exponential, "step": Step}[name]
    return kind(ratio_max, ratio_min, decay_steps)


def make_compressor(codec: str, schedule: str = "fixed", ratio_max: float = 1.0,
                    ratio_min: float = 1.0, decay_steps: Optional[float] = None,
                    seed: int = 0) -> Compressor:
    """A compressor from names (see :data:`CODEC_NAMES`, :data:`SCHEDULE_NAMES`)."""
    if codec not in CODECS:
        raise ValueError(f"unknown compression {codec!r} (known: {', '.join(CODEC_NAMES)})")
    return Compressor(CODECS[codec](), make_schedule(schedule, ratio_max, ratio_min,
                                                     decay_steps), seed=seed)
