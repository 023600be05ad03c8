"""A checkpoint written by 4 ranks resumes on 2 (and one of 2 on 3), each on the partition of
the same graph for its size: the continued run equals continuing at the original size
(float64, no dropout) in the losses, the shared parameters, and the rank-local node table and
its Adam state, assembled by original node id (re-sharded from every rank's file)."""
from __future__ import annotations

from pathlib import Path

import pytest
import torch

from pyg_sar.testing import has_mpi, run_on_ranks
from tests.closeness import assert_close

CASES = f"{Path(__file__).with_name('reshard_cases.py')}:train"
SAVE_AT, LAST = 3, 7
TOL = 1e-10


def _by_id(results: list[dict], key: str) -> torch.Tensor:
    ids = torch.tensor([i for r in results for i in r["ids"]])
    rows = torch.tensor([row for r in results for row in r[key]], dtype=torch.float64)
    return rows[torch.argsort(ids)]


def _close(a: torch.Tensor, b: torch.Tensor, what: str) -> None:
    assert_close(a, b, atol=TOL, what=what)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    if not has_mpi():
        pytest.skip("needs mpiexec and mpi4py (pip install 'pyg_sar[mpi]')")
    from pyg_sar.datasets import sbm
    from pyg_sar.partition import partition_graph
    tmp = tmp_path_factory.mktemp("reshard")
    data = sbm(num_nodes=60, num_classes=3, avg_degree=4.0, num_features=4, seed=1)
    parts = {p: str(partition_graph(data, p, tmp / f"parts{p}", method="random", seed=p))
             for p in (2, 3, 4)}
    out = {}
    for old, new in ((4, 2), (2, 3)):
        folder = str(tmp / f"ck{old}")
        out[old, old] = run_on_ranks(CASES, old, timeout=300, kwargs=dict(
            parts=parts[old], folder=folder, first=1, last=LAST, save_at=SAVE_AT))
        out[old, new] = run_on_ranks(CASES, new, timeout=300, kwargs=dict(
            parts=parts[new], folder=folder, first=SAVE_AT + 1, last=LAST, resume=True))
    return out


@pytest.mark.parametrize("old,new", [(4, 2), (2, 3)])
def test_resumed_on_another_world_size_continues_as_at_the_old(runs, old, new):
    straight, resumed = runs[old, old], runs[old, new]
    assert all(r["resumed"] == [SAVE_AT, old] for r in resumed)
    _close(torch.tensor(resumed[0]["losses"]), torch.tensor(straight[0]["losses"][SAVE_AT:]),
           "losses after the checkpoint")
    for name, values in straight[0]["shared"].items():
        _close(torch.tensor(resumed[0]["shared"][name]), torch.tensor(values), name)
    for r in resumed[1:]:  # shared parameters identical on every rank
        assert r["shared"] == resumed[0]["shared"]
    _close(_by_id(resumed, "rows"), _by_id(straight, "rows"), "node table rows by id")
    _close(_by_id(resumed, "exp_avg"), _by_id(straight, "exp_avg"), "node table Adam exp_avg")
