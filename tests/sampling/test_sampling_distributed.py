"""Distributed bulk sampling (1D, 1.5D, replicated structure) equals single-process sampling:
the same minibatch b of every epoch, edge for edge, with the owners' features."""
from __future__ import annotations

from pathlib import Path

import pytest
import torch

import pyg_sar
from pyg_sar.testing import has_mpi, run_on_ranks
from tests.sampling import dist_cases as dc
from tests.sampling.helpers import random_graph

HERE = Path(__file__).resolve().parent

SIZES = {"sage": [4, 3], "ladies": [40, 25]}
SETTINGS = dict(sizes=SIZES, batch_size=23, bulk=3, seed=5, epochs=2)
pytestmark = pytest.mark.skipif(not has_mpi(), reason="needs mpiexec and mpi4py")


@pytest.fixture(scope="module")
def data():
    data = random_graph(360, 2500, seed=21)
    data.train_mask = torch.rand(360, generator=torch.Generator().manual_seed(1)) < 0.4
    return data


@pytest.fixture(scope="module", params=[3, 4])
def ranks(request, data, tmp_path_factory):
    p = request.param
    root = tmp_path_factory.mktemp("sampling") / f"p{p}"
    pyg_sar.partition_graph(data, p, root, method="metis", seed=0)
    return p, run_on_ranks(f"{HERE / 'dist_cases.py'}:suite", p, timeout=600,
                           kwargs=dict(parts=str(root), **SETTINGS))


def _single(data, kind):
    loader = dc.make_loader(kind, data, SIZES, SETTINGS["batch_size"], SETTINGS["bulk"],
                            SETTINGS["seed"], input_nodes=data.train_mask)
    return [list(loader) for _ in range(SETTINGS["epochs"])]


@pytest.mark.parametrize("case", list(dc.CASES))
def test_distributed_equals_single_process(data, ranks, case):
    p, results = ranks
    if dc.CASES[case]["replication"] == 2 and p % 2:
        pytest.skip("1.5D needs an even number of ranks")
    want = _single(data, dc.CASES[case]["kind"])
    num_batches = len(want[0])
    seen = set()
    for rank, res in enumerate(results):
        got = res[case]
        assert got["steps"] == -(-num_batches // p)
        assert got["mine"] == len(range(rank, num_batches, p))
        for mb in got["batches"]:
            ref = want[mb["epoch"]][mb["index"]]
            seen.add((mb["epoch"], mb["index"]))
            assert mb["n_id"] == ref.n_id.tolist(), (case, rank, mb["index"])
            assert mb["edge_index"] == ref.edge_index.tolist()
            assert mb["e_id"] == ref.e_id.tolist()
            assert mb["num_sampled_nodes"] == ref.num_sampled_nodes
            assert mb["num_sampled_edges"] == ref.num_sampled_edges
            assert mb["batch_size"] == ref.batch_size
            assert torch.equal(torch.tensor(mb["x"]), data.x[ref.n_id])
            assert mb["y"] == data.y[ref.n_id].tolist()
    assert seen == {(e, b) for e in range(SETTINGS["epochs"]) for b in range(num_batches)}
