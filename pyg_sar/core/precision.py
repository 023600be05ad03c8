"""Precision rules of the engine: float32 accumulation of low-precision messages, and the
autocast state a recomputation replays.

* :func:`accumulate_dtype`: the dtype a sum, a mean, a softmax state or a statistic of
  ``dtype`` values is accumulated in: float32 for bfloat16 / float16 (their 8 / 11 significant
  bits cannot hold a running sum, nor a degree above 256 / 2048 exactly), the dtype itself
  otherwise. Results are cast back to the messages' dtype, the dtype PyG's own propagate
  returns.
* :class:`AutocastState`: the ``torch.autocast`` state of a forward pass (device types, dtype,
  enabled, weight-cast cache), re-entered when a block is recomputed in backward, so the
  recomputation runs every op in the forward's precision whatever the autocast state around
  ``backward()`` (usually none: autocast wraps the forward only).
"""
from __future__ import annotations

import contextlib
from dataclasses import dataclass

import torch

LOW_PRECISION = (torch.bfloat16, torch.float16)


def is_low_precision(dtype: torch.dtype) -> bool:
    """Whether ``dtype`` is accumulated in float32 by the engine (bfloat16, float16)."""
    return dtype in LOW_PRECISION


def accumulate_dtype(dtype: torch.dtype) -> torch.dtype:
    """float32 for bfloat16 / float16, else ``dtype`` itself."""
    return torch.float32 if dtype in LOW_PRECISION else dtype


def to_accumulate(t: torch.Tensor) -> torch.Tensor:
    """``t`` in its accumulation dtype (``t`` itself when that is its dtype)."""
    return t.to(accumulate_dtype(t.dtype))


_DEVICE_TYPES = ("cpu", "cuda")


@dataclass(frozen=True)
class AutocastState:
    """The autocast state of each device type at one point of the program.

    ``capture()`` records it (at forward time); ``replay()`` re-enters exactly that state
    (enabled or disabled, same dtype, same cache setting) for a block's recomputation.
    """

    modes: tuple  # ((device_type, enabled, dtype), ...)
    cache_enabled: bool

    @staticmethod
    def capture() -> AutocastState:
        modes = tuple((d, torch.is_autocast_enabled(d), torch.get_autocast_dtype(d))
                      for d in _DEVICE_TYPES)
        return AutocastState(modes, torch.is_autocast_cache_enabled())

    @property
    def enabled(self) -> bool:
        """Whether autocast was on for any device type."""
        return any(on for _, on, _ in self.modes)

    def replay(self) -> contextlib.ExitStack:
        """A context that re-enters this state (and restores the caller's on exit)."""
        stack = contextlib.ExitStack()
        for device, on, dtype in self.modes:
            if on or torch.is_autocast_enabled(device):
                stack.enter_context(torch.autocast(device, dtype=dtype, enabled=on,
                                                   cache_enabled=self.cache_enabled))
        return stack


__all__ = ["LOW_PRECISION", "is_low_precision", "accumulate_dtype", "to_accumulate",
           "AutocastState"]
