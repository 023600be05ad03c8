"""``pyg_sar.distribute``: rank 0 partitions an in-memory graph and sends every rank its part
over the communicator. Launched for real: 3 ranks under mpiexec (MPI) and 2 plain processes
(gloo), every case in one launch each; and one process without a launcher.
"""
from __future__ import annotations

import copy
import os
import tempfile
from pathlib import Path

import pytest
import torch
from torch_geometric.nn import GCN

import pyg_sar
from pyg_sar.testing import run_on_ranks
from pyg_sar.testing.launcher import has_mpi
from tests.api import distribute_cases as dc

HERE = Path(__file__).resolve().parent

LAUNCHES = {"mpi3": ("mpiexec", 3, None), "gloo2": ("spawn", 2, "gloo")}


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    out = {}
    for name, (launcher, world, backend) in LAUNCHES.items():
        if launcher == "mpiexec" and not has_mpi():
            continue
        root = tmp_path_factory.mktemp(name)
        tmp = root / "tmp"
        tmp.mkdir()
        pyg_sar.partition_graph(dc.make_data(), world, root / "offline", method="metis")
        ranks = run_on_ranks(f"{HERE / 'distribute_cases.py'}:suite", world, timeout=600,
                             launcher=launcher, backend=backend, env={"TMPDIR": str(tmp)},
                             kwargs={"offline": str(root / "offline")})
        # (PyG writes its compiled propagate templates there too)
        out[name] = (ranks, sorted(n for n in os.listdir(tmp) if n.startswith("pyg_sar")))
    return out


@pytest.fixture(params=sorted(LAUNCHES))
def launch(request, results):
    if request.param not in results:
        pytest.skip("no MPI")
    return results[request.param]


def test_every_rank_gets_the_offline_part(launch):
    ranks, _ = launch
    for rank, res in enumerate(ranks):
        assert res["type"] == "PartitionData"
        assert res["same_fingerprint"], rank  # meta.json byte for byte: same files
        assert res["same_tensors"] and res["same_edges"], rank
        assert res["path"] is None  # the folder it was loaded from is gone
        assert res["bound"]


def test_distributed_part_trains_as_pyg(launch):
    ranks, _ = launch
    for res in ranks:
        assert res["gcn_error"] <= 1e-12
        assert res["has_values"] and res["gcn2_error"] <= 1e-12


def test_rank0_errors_reach_every_rank(launch):
    ranks, _ = launch
    world = len(ranks)
    for rank, res in enumerate(ranks):
        err = res["bad_edge_index"]
        assert err["type"] == "ValueError", (rank, err)
        assert "edge_index contains node id 1000" in err["message"]
        if rank:
            assert "failed on rank 0" in err["message"]
        err = res["bad_num_parts"]
        assert err["type"] == "ValueError"
        assert f"num_parts must equal the world size {world} (got {world + 1})" in err["message"]
        err = res["bad_method"]
        assert err["type"] == "ValueError" and "unknown partition method 'nope'" in \
            err["message"]


def test_pair_sets_of_a_plain_data_go_to_their_sources_owner(launch):
    """RelLinkPredDataset's layout (train_edge_index + train_edge_type on a plain Data): each
    rank holds the pairs whose source it owns, as PairIds whose rows are their ends'."""
    ranks, _ = launch
    for res in ranks:
        assert all(res["pair_sets"].values()), res["pair_sets"]


def test_no_temporary_folder_is_left(launch):
    ranks, leftovers = launch
    assert all(res["leftovers"] == [] for res in ranks)
    assert leftovers == []


def test_one_process_without_launcher(tmp_path, monkeypatch):
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    tempfile.tempdir = None  # re-read TMPDIR
    try:
        data = dc.make_data()
        part = pyg_sar.distribute(data)
        assert isinstance(part, pyg_sar.PartitionData) and part.num_parts == 1
        assert part.num_nodes == data.num_nodes and part.num_edges == data.num_edges
        torch.manual_seed(0)
        model = GCN(7, 8, num_layers=2, out_channels=3).double()
        dist = pyg_sar.convert(copy.deepcopy(model))
        want = model(data.x, data.edge_index)[part.node_ids]
        assert torch.allclose(dist(part.x, part.edge_index), want, rtol=0, atol=1e-12)
        assert [p for p in tmp_path.iterdir() if p.name.startswith("pyg_sar")] == []
        with pytest.raises(ValueError, match="num_parts must equal the world size 1"):
            pyg_sar.distribute(data, 2)
    finally:
        tempfile.tempdir = None
