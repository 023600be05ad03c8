"""Helpers for tests: run a function on several ranks (mpiexec, torchrun or plain processes)."""
from pyg_sar.testing.launcher import (
    LAUNCHERS,
    RankFailure,
    RankTimeout,
    find_mpiexec,
    has_mpi,
    run_on_ranks,
)

__all__ = ["run_on_ranks", "RankFailure", "RankTimeout", "find_mpiexec", "has_mpi", "LAUNCHERS"]
