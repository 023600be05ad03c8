"""Sums over ranks for the engine's helpers (batch norm, global losses), on the communicator
they are given: nothing here looks up a process-wide context."""
from __future__ import annotations

from typing import Optional

from torch import Tensor


def sum_over_ranks(t: Tensor, comm: Optional[object]) -> Tensor:
    """A new tensor: ``t`` summed over the ranks of ``comm`` (a copy of ``t`` when ``comm`` is
    ``None`` or has one rank). Not differentiable."""
    out = t.detach().clone().contiguous()
    if comm is not None and comm.world_size > 1:
        comm.all_reduce(out, op="sum")
    return out
