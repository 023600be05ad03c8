"""The planner's per-edge ``caches`` term (``pyg_sar.plan``): the index structures a training
step builds once and keeps on the graph (every block's destination per edge, the block
transposed for backward). On a node-balanced R-MAT partition the rank with most edges keeps
most; each rank's measured bytes match ``predict_partition``'s term."""
from __future__ import annotations

from pathlib import Path

import pytest

import pyg_sar
from pyg_sar import plan
from pyg_sar.testing import has_mpi, run_on_ranks

CASES = Path(__file__).resolve().parent / "cache_cases.py"


@pytest.mark.skipif(not has_mpi(), reason="needs mpiexec (mpich/Open MPI) and mpi4py")
def test_cache_bytes_per_rank_match_the_prediction(tmp_path):
    from pyg_sar.datasets import rmat
    parts = pyg_sar.partition_graph(rmat(3000, 15_000, seed=0), 2, tmp_path / "p",
                                    method="metis", balance="nodes")
    measured = run_on_ranks(f"{CASES}:step_caches", 2, timeout=180,
                            kwargs={"parts": str(parts)})
    pp = plan.predict_partition(parts, plan.Workload(1, 1, 1, 1, hidden=32, mode="sar"))
    edges = [m["num_edges"] for m in measured]
    assert max(edges) > 2 * min(edges)  # the ranks differ: the term is per rank
    for m in measured:
        predicted = pp.ranks[m["rank"]].plan.memory["caches"]
        assert m["cache_bytes"] == pytest.approx(predicted, rel=0.03), m
