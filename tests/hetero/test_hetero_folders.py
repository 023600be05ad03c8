"""Heterogeneous partition folders where homogeneous code reads partition folders: the
planner's ``partition_stats`` gives per-type figures (checked against the loaded parts) and its
CLI refuses the folder naming what to give instead; the samplers, ``python -m pyg_sar.train``
refuse a heterogeneous folder or graph with a ValueError (an argparse error for the CLI) naming
the folder and pointing to the full-batch heterogeneous API; checkpoints record and check a
``HeteroPartition``'s fingerprint as a homogeneous partition's. One process, no launch.
"""
from __future__ import annotations

import json

import pytest
import torch
from torch_geometric.nn import SAGEConv, to_hetero

import pyg_sar
from pyg_sar import plan
from pyg_sar.checkpoint import CheckpointError
from pyg_sar.sampling import BulkNeighborLoader
from pyg_sar.sampling.graph import SamplingGraph
from tests.hetero import typed_view_cases as tv

WORLD = 3


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    """A heterogeneous folder (P = 3, random) and a homogeneous one (P = 2) of its
    ``to_homogeneous()``."""
    root = tmp_path_factory.mktemp("hetero_folders")
    pyg_sar.partition_graph(tv.make_data(), WORLD, root / "hetero", method="random", seed=0)
    homo = tv.make_data().to_homogeneous()
    homo.y = torch.arange(homo.num_nodes) % 3
    pyg_sar.partition_graph(homo, 2, root / "homo", method="random")
    return root


def test_partition_stats_per_type(folders):
    """Per node type its count, features and per-rank sizes; per edge type its count and the
    halo fraction (source-type rows a rank receives / source-type nodes outside it), each
    computed here from the loaded parts' DistGraphs."""
    st = plan.partition_stats(folders / "hetero")
    data = tv.make_data()
    assert st["hetero"] is True and st["world_size"] == WORLD
    assert (st["num_nodes"], st["num_edges"]) == (data.num_nodes, data.num_edges)
    parts = [pyg_sar.load_partition(folders / "hetero", r, world_size=WORLD)
             for r in range(WORLD)]
    assert list(st["node_types"]) == data.node_types
    for t, info in st["node_types"].items():
        assert info["num_nodes"] == data[t].num_nodes and info["num_features"] == tv.DIM
        assert info["part_num_nodes"] == [p.num_nodes_dict[t] for p in parts]
    assert list(st["edge_types"]) == data.edge_types
    for et, info in st["edge_types"].items():
        assert info["num_edges"] == data[et].num_edges
        assert info["part_num_edges"] == [p.num_edges_dict[et] for p in parts]
        fractions = []
        for r, p in enumerate(parts):
            g = p.edge_index_dict[et]
            received = sum(b.num_src for b in g.blocks if b.src_rank != r)
            fractions.append(received / (g.num_global_src_nodes - g.num_src_nodes))
        assert info["halo_fraction"] == pytest.approx(sum(fractions) / WORLD, rel=1e-12)
        assert info["halo_fraction"] > 0
    # the homogeneous folder is read as before
    homo = plan.partition_stats(folders / "homo")
    assert "hetero" not in homo and homo["num_nodes"] == data.num_nodes


def test_partition_stats_malformed_hetero_section(folders, tmp_path):
    meta = json.loads((folders / "hetero" / "meta.json").read_text())
    del meta["hetero"]["edge_types"][0]["parts"]
    (tmp_path / "meta.json").write_text(json.dumps(meta))
    with pytest.raises(ValueError, match=r"meta.json lacks partition sizes \(KeyError\('parts'"):
        plan.partition_stats(tmp_path)


def test_planner_cli_refuses_a_hetero_folder(folders):
    with pytest.raises(ValueError, match=rf"--parts '{folders / 'hetero'}' is a heterogeneous "
                                         rf"partition .*--nodes {tv.make_data().num_nodes} "):
        plan.main(["--parts", str(folders / "hetero")])
    assert plan.main(["--parts", str(folders / "homo"), "--mode", "sar"]) == 0


def test_sampling_graph_refuses_a_hetero_folder(folders):
    with pytest.raises(ValueError, match=rf"the partition at '{folders / 'hetero'}' is "
                                         rf"heterogeneous .*examples/hetero_rgcn.py"):
        SamplingGraph.from_partition_folder(folders / "hetero")
    graph = SamplingGraph.from_partition_folder(folders / "homo")
    assert graph.num_rows == tv.make_data().num_nodes


def test_neighbour_loader_refuses_hetero_input(folders):
    part = pyg_sar.load_partition(folders / "hetero", 0, world_size=WORLD)
    for data in (part, tv.make_data()):
        with pytest.raises(ValueError, match=rf"BulkNeighborLoader: the {type(data).__name__} "
                                             rf"is heterogeneous"):
            BulkNeighborLoader(data, num_neighbors=[2], batch_size=4)
    homo = tv.make_data().to_homogeneous()
    assert len(BulkNeighborLoader(homo, num_neighbors=[2], batch_size=4)) > 0


def test_train_cli_refuses_a_hetero_folder(folders, capsys):
    from pyg_sar.train import parse_args
    with pytest.raises(SystemExit) as info:
        parse_args(["--parts", str(folders / "hetero")])
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert f"argument --parts: '{folders / 'hetero'}' holds a heterogeneous partition" in err
    assert "examples/hetero_rgcn.py" in err
    assert parse_args(["--parts", str(folders / "homo")]).parts == str(folders / "homo")


def test_checkpoint_records_the_hetero_partition(tmp_path):
    """save/load_checkpoint with a HeteroPartition and a converted to_hetero model: the state
    comes back; a checkpoint of one heterogeneous partition is refused on another."""
    pyg_sar.partition_graph(tv.make_data(), 1, tmp_path / "p1", method="random")
    part = pyg_sar.load_partition(tmp_path / "p1", 0)

    class Sage(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.conv = SAGEConv(tv.DIM, 5)

        def forward(self, x, edge_index):
            return self.conv(x, edge_index)

    def model():
        torch.manual_seed(0)
        return pyg_sar.convert(to_hetero(Sage(), part.metadata()).double(),
                               pyg_sar.SARConfig(check_loss=False))

    trained = model()
    with torch.no_grad():
        for p in trained.parameters():
            p.add_(1.0)
    pyg_sar.save_checkpoint(tmp_path / "ck", trained, None, 2, partition=part)
    fresh = model()
    got = pyg_sar.load_checkpoint(tmp_path / "ck", fresh, partition=part)
    assert got.epoch == 2 and got.fingerprint == part.fingerprint
    for (name, a), (_, b) in zip(trained.state_dict().items(), fresh.state_dict().items()):
        assert torch.equal(a, b), name
    pyg_sar.partition_graph(tv.make_data(), 1, tmp_path / "q1", method="random", seed=5)
    other = pyg_sar.load_partition(tmp_path / "q1", 0)
    assert other.fingerprint != part.fingerprint
    with pytest.raises(CheckpointError, match=rf"written for partition {part.fingerprint[:12]}"):
        pyg_sar.load_checkpoint(tmp_path / "ck", fresh, partition=other)
