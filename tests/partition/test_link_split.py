"""Partitioned link splits: each split's message-passing graph and supervision pairs survive
partitioning exactly, nothing leaks, bad splits are refused. Multi-rank training over them is
checked against PyG in tests/link/test_link_exactness.py."""
from __future__ import annotations

import json

import numpy as np
import pytest
import torch
from torch_geometric.data import Data
from torch_geometric.utils import coalesce

import pyg_sar
from pyg_sar.datasets.registry import load_dataset
from pyg_sar.partition.__main__ import main
from pyg_sar.partition.link_split import load_link_split, random_link_split
from pyg_sar.partition.storage import ChecksumError

SPLITS = ("train", "val", "test")


@pytest.fixture(scope="module")
def cora():
    return load_dataset("cora")


def _edge_multiset(t: torch.Tensor) -> list:
    return sorted(map(tuple, t.t().tolist()))


def _check_union(triple, folder, num_parts):
    parts = [load_link_split(folder, r, world_size=num_parts) for r in range(num_parts)]
    for i, (name, ref) in enumerate(zip(SPLITS, triple)):
        got = torch.cat([p[i].global_edge_index() for p in parts], 1)
        assert _edge_multiset(got) == _edge_multiset(ref.edge_index), name
        ids = torch.cat([p[i].edge_label_ids for p in parts])
        assert torch.equal(ids.sort().values, torch.arange(ref.edge_label_index.size(1))), name
        # new ids -> original ids: the pairs must be the input split's, in original ids
        new_to_orig = torch.cat([p[i].node_ids for p in parts])
        for p in parts:
            split = p[i]
            lo, hi = split.edge_index.node_offsets[split.rank:split.rank + 2]
            pairs = new_to_orig[split.edge_label_index]
            assert torch.equal(pairs, ref.edge_label_index[:, split.edge_label_ids]), name
            assert torch.equal(split.edge_label, ref.edge_label[split.edge_label_ids]), name
            # a pair belongs to the rank owning its source
            src = split.edge_label_index[0]
            assert bool(((src >= lo) & (src < hi)).all()), name
            assert torch.equal(split.x, ref.x[split.node_ids])
    return parts


@pytest.mark.parametrize("num_parts", [1, 3, 4])
def test_every_split_survives_partitioning(cora, tmp_path, num_parts):
    triple = random_link_split(cora, 0.1, 0.1, seed=3, add_negative_train_samples=True)
    pyg_sar.partition_graph(triple, num_parts, tmp_path / "p")
    parts = _check_union(triple, tmp_path / "p", num_parts)
    # RandomLinkSplit gives val the train graph: one object, not a copy
    assert all(p[0].edge_index is p[1].edge_index for p in parts)
    assert all(p[2].edge_index is not p[1].edge_index for p in parts)


def test_disjoint_train_ratio_gives_three_graphs_and_directed_splits(cora, tmp_path):
    triple = random_link_split(cora, 0.1, 0.2, seed=1, disjoint_train_ratio=0.3)
    assert triple[0].edge_index.size(1) < triple[1].edge_index.size(1)
    pyg_sar.partition_graph(triple, 3, tmp_path / "p", method="random")
    parts = _check_union(triple, tmp_path / "p", 3)
    assert all(p[0].edge_index is not p[1].edge_index for p in parts)

    directed = random_link_split(cora, 0.1, 0.1, seed=2, is_undirected=False)
    pyg_sar.partition_graph(directed, 2, tmp_path / "d")
    _check_union(directed, tmp_path / "d", 2)


def test_edge_tensors_follow_each_splits_edges(tmp_path):
    gen = torch.Generator().manual_seed(0)
    n = 40
    ei = torch.randint(0, n, (2, 200), generator=gen)
    # no repeated edges: a copy of a held-out edge left in the graph is leakage (refused)
    ei = coalesce(ei[:, ei[0] != ei[1]], num_nodes=n)
    data = Data(x=torch.randn(n, 4, generator=gen), edge_index=ei,
                edge_attr=torch.arange(ei.size(1), dtype=torch.float64).unsqueeze(1))
    triple = random_link_split(data, 0.2, 0.2, seed=0, is_undirected=False,
                               disjoint_train_ratio=0.25)
    pyg_sar.partition_graph(triple, 3, tmp_path / "p")
    parts = [load_link_split(tmp_path / "p", r, world_size=3) for r in range(3)]
    for i, ref in enumerate(triple):
        ref_attr = {tuple(e): a for e, a in zip(ref.edge_index.t().tolist(),
                                                 ref.edge_attr[:, 0].tolist())}
        for p in parts:
            got = p[i].global_edge_index()
            assert p[i].edge_attr.size(0) == got.size(1) == p[i].edge_index.num_edges
            for e, a in zip(got.t().tolist(), p[i].edge_attr[:, 0].tolist()):
                assert ref_attr[tuple(e)] == a
            assert "link_mp_level" not in p[i].edge_data and "link_mp_level" not in p[i]


def test_leakage_and_bad_splits_are_refused(cora, tmp_path):
    train, val, test = random_link_split(cora, 0.1, 0.1, seed=0)
    pos = test.edge_label_index[:, test.edge_label == 1]
    leaky = test.clone()
    leaky.edge_index = torch.cat([test.edge_index, pos[:, :1]], 1)
    s, d = pos[:, 0].tolist()
    with pytest.raises(ValueError, match=rf"test split leaks .*\({s}, {d}\)"):
        pyg_sar.partition_graph((train, val, leaky), 2, tmp_path / "a")
    # the reverse direction leaks too on an undirected graph
    leaky.edge_index = torch.cat([test.edge_index, pos[:, :1].flip(0),
                                  pos[:, :1]], 1)
    with pytest.raises(ValueError, match="leaks supervision edges"):
        pyg_sar.partition_graph((train, val, leaky), 2, tmp_path / "a")
    vpos = val.edge_label_index[:, val.edge_label == 1][:, :1]
    leaky_val = val.clone()
    leaky_val.edge_index = torch.cat([val.edge_index, vpos, vpos.flip(0)], 1)
    leaky_test = test.clone()
    leaky_test.edge_index = torch.cat([test.edge_index, vpos, vpos.flip(0)], 1)
    with pytest.raises(ValueError, match="val split leaks"):
        pyg_sar.partition_graph((train, leaky_val, leaky_test), 2, tmp_path / "a")

    extra = train.clone()
    extra.edge_index = torch.cat([train.edge_index, torch.tensor([[0], [1]])], 1)
    if not bool(((val.edge_index[0] == 0) & (val.edge_index[1] == 1)).any()):
        with pytest.raises(ValueError, match=r"train split's message-passing edge \(0, 1\)"):
            pyg_sar.partition_graph((extra, val, test), 2, tmp_path / "a")

    bad = test.clone()
    bad.edge_label_index = test.edge_label_index.clone()
    bad.edge_label_index[1, 5] = cora.num_nodes
    with pytest.raises(ValueError, match=f"out of range for {cora.num_nodes} nodes"):
        pyg_sar.partition_graph((train, val, bad), 2, tmp_path / "a")
    bad = test.clone()
    bad.edge_label = test.edge_label[:-1]
    with pytest.raises(ValueError, match="edge_label must have one row per pair"):
        pyg_sar.partition_graph((train, val, bad), 2, tmp_path / "a")
    bad = val.clone()
    bad.x = val.x + 1
    with pytest.raises(ValueError, match="node tensor 'x' of the val split differs"):
        pyg_sar.partition_graph((train, bad, test), 2, tmp_path / "a")
    assert not (tmp_path / "a").exists()


def test_folder_checks(cora, tmp_path):
    triple = random_link_split(cora, 0.1, 0.1, seed=0)
    out = pyg_sar.partition_graph(triple, 2, tmp_path / "p")
    with pytest.raises(ValueError, match="load_link_split"):
        pyg_sar.load_partition(out, 0, world_size=2)
    with pytest.raises(ValueError, match="has 2 parts but the job runs on 3"):
        load_link_split(out, 0, world_size=3)
    meta = json.loads((out / "link.json").read_text())
    rel = next(k for k in meta["files"] if k.endswith("edge_label_ids.npy") and "part1" in k)
    arr = np.load(out / rel)
    arr[0] += 1
    np.save(out / rel, arr)
    load_link_split(out, 0, world_size=2)  # rank 0 reads only its own files
    with pytest.raises(ChecksumError):
        load_link_split(out, 1, world_size=2)
    meta["version"] = 99
    (out / "link.json").write_text(json.dumps(meta))
    with pytest.raises(ValueError, match="link split version 99"):
        load_link_split(out, 0, world_size=2)


def test_cli_writes_a_link_split(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main(["--dataset", "cora", "--num-parts", "2", "--out", "p", "--task", "link",
                 "--num-val", "0.05", "--num-test", "0.1", "--seed", "4"]) == 0
    assert "supervision pairs train" in capsys.readouterr().out
    cora = load_dataset("cora")
    triple = random_link_split(cora, 0.05, 0.1, seed=4)
    _check_union(triple, tmp_path / "p", 2)
    with pytest.raises(SystemExit):
        main(["--dataset", "cora", "--num-parts", "2", "--out", "q", "--task", "link",
              "--num-val", "1.5"])
    assert "argument --num-val: expected a fraction in [0, 1) (got 1.5)" in \
        capsys.readouterr().err


# --- multi-rank: distribute(triple), to_new_ids, each split's graph vs PyG -------------------
# One launch per P runs every case (tests/partition/link_split_cases.py).

TOL = 1e-10
DISJOINT = ("0.0", "0.3")  # train and val share a graph / three different graphs


@pytest.fixture(scope="module")
def rank_results(tmp_path_factory):
    from pathlib import Path

    from pyg_sar.testing import run_on_ranks
    here = Path(__file__).resolve().parent
    from tests.partition import link_split_cases as lc
    root = tmp_path_factory.mktemp("link_ranks")
    out = {}
    for p in (1, 3, 4):
        folders = {}
        for d in DISJOINT:
            folders[d] = str(root / f"p{p}_{d}")
            pyg_sar.partition_graph(lc.make_triple(float(d)), p, folders[d], method="metis")
        out[p] = run_on_ranks(f"{here / 'link_split_cases.py'}:suite", p, timeout=240,
                              kwargs=dict(folders=folders))
    return out


@pytest.mark.parametrize("disjoint", DISJOINT)
@pytest.mark.parametrize("num_parts", [1, 3, 4])
def test_distribute_to_new_ids_and_split_graphs_on_ranks(rank_results, num_parts, disjoint):
    for rank, res in enumerate(rank_results[num_parts]):
        r = res[disjoint]
        assert r["distribute_equals_load"] == [True] * 3, rank
        assert r["val_shares_train_graph"] == (disjoint == "0.0"), rank
        assert r["to_new_ids_pairs"] == [True] * 3, rank
        assert r["to_new_ids_rows"], rank
        err = r["out_of_range"]
        assert err["type"] == "ValueError", (rank, err)
        if rank == 0:
            assert "original id 2715 is out of range for a graph of 2708 nodes" in \
                err["message"]
        else:
            assert "invalid input on another rank" in err["message"]
        assert set(r["forward_rel_err"]) == {f"{m}/{s}" for m in ("gcn", "sage")
                                             for s in SPLITS}
        for case, e in r["forward_rel_err"].items():
            assert e <= TOL, (rank, case, e)


def test_node_tensors_with_nan_are_the_same_tensors(cora, tmp_path):
    """A copy of a feature matrix with missing values (NaN) is still the same node tensor; a
    different value is refused."""
    train, val, test = random_link_split(cora, 0.1, 0.1, seed=0)
    x = train.x.clone()
    x[3, 2] = float("nan")
    train.x = x
    val, test = val.clone(), test.clone()
    val.x, test.x = x.clone(), x.clone()
    with pytest.warns(UserWarning):
        pyg_sar.partition_graph((train, val, test), 2, tmp_path / "p")
    got = load_link_split(tmp_path / "p", 0, world_size=2)[2]
    assert torch.equal(got.x.isnan(), x[got.node_ids].isnan())
    test.x = x.clone()
    test.x[4, 0] += 1
    with pytest.raises(ValueError, match="node tensor 'x' of the test split differs"):
        pyg_sar.partition_graph((train, val, test), 2, tmp_path / "q")
