"""Sums over ranks for the engine's helpers (batch norm, global losses, global attention), on
the communicator they are given: nothing here looks up a process-wide context. Defined in
:mod:`pyg_sar.distributed.collectives` (below the engine, which :func:`pyg_sar.global_sum`
uses too)."""
from pyg_sar.distributed.collectives import sum_over_ranks, sum_over_ranks_grad

__all__ = ["sum_over_ranks", "sum_over_ranks_grad"]
