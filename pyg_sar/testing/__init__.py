"""Testing helpers for code that runs on several ranks, in the manner of
``torch_geometric.testing``: test your own layers and training loops across ranks.

* :func:`run_on_ranks` runs ``fn(ctx, **kwargs)`` (given as ``"module:function"`` or
  ``"file.py:function"``) on ``P`` ranks (mpiexec, torchrun or plain processes,
  :data:`LAUNCHERS`) under a timeout and returns what every rank returned; a failing
  rank raises :class:`RankFailure` with its last error lines, a hung one :class:`RankTimeout`.
  Each rank runs ``python -m pyg_sar.testing.worker``. :func:`has_mpi` / :func:`find_mpiexec`
  gate tests that need MPI.
* :mod:`pyg_sar.testing.devices` parametrises tests over devices (``with_devices``,
  ``only_cuda``: CPU always, CUDA where present, skipped with the reason otherwise).
* :mod:`pyg_sar.testing.netns` makes "hosts" out of Linux network namespaces on one machine
  (real TCP between ranks, rate-limited links), to rehearse a multi-host run; it needs root
  and a source checkout (with :mod:`pyg_sar.testing.cgroup`, it is left out of wheels).

The repository's layer/model zoo (``pyg_sar/testing/zoo*.py``: the recipes and runner behind
``tests/zoo`` and the supported-layers page) lives next to these in a source checkout, because
its rank processes import it by module name, but it is the project's own exactness suite, not
API: built wheels leave it out (``[tool.pyg_sar] wheel-exclude`` in pyproject.toml).
"""
from pyg_sar.testing.launcher import (
    LAUNCHERS,
    RankFailure,
    RankTimeout,
    error_of,
    find_mpiexec,
    has_mpi,
    run_on_ranks,
)

__all__ = ["run_on_ranks", "RankFailure", "RankTimeout", "error_of", "find_mpiexec", "has_mpi",
           "LAUNCHERS"]
