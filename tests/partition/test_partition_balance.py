"""Edge-balanced partitions (``balance="edges"``): METIS with two constraints through the C
API in ``pymetis``'s library, random / contiguous cut at equal cumulative weight, the
``meta.json`` ``balance`` block, the CLI flags and ``distribute``; ``balance="nodes"`` is the
``pymetis`` partition of before, bit for bit.
"""
from __future__ import annotations

import copy
import json
import warnings
from pathlib import Path

import numpy as np
import pymetis
import pytest
import torch
from torch_geometric.data import Data, HeteroData

import pyg_sar
from pyg_sar.datasets import rmat
from pyg_sar.partition import MetaError, load_partition, partition_graph, write_partition
from pyg_sar.partition import format as fmt
from pyg_sar.partition.assign import assign_parts, default_balance, resolve_balance
from pyg_sar.partition.metis import _part_graph_c, metis_parts, symmetric_csr
from pyg_sar.partition.writer import build_meta
from pyg_sar.testing import run_on_ranks

HERE = Path(__file__).resolve().parent


@pytest.fixture(scope="module")
def power_law() -> Data:
    """R-MAT, 5000 nodes / 20000 edges: METIS's node balance puts 3-5x the mean in-edges on
    one part at P = 4, 8."""
    return rmat(5000, 20000, num_features=4, num_classes=3, seed=0)


def _ratios(parts: np.ndarray, edge_index: np.ndarray, num_parts: int) -> tuple[float, float]:
    nodes = np.bincount(parts, minlength=num_parts)
    edges = np.bincount(parts[edge_index[1]], minlength=num_parts)
    return nodes.max() / nodes.mean(), edges.max() / edges.mean()


@pytest.mark.parametrize("num_parts, seed", [(2, 0), (4, 7), (8, 0), (16, 3)])
def test_nodes_balance_is_pymetis_bit_for_bit(power_law, num_parts, seed):
    ei = power_law.edge_index.numpy()
    xadj, adjncy = symmetric_csr(ei, power_law.num_nodes)
    want = np.asarray(pymetis.part_graph(num_parts, adjacency=pymetis.CSRAdjacency(xadj, adjncy),
                                         options=pymetis.Options(seed=seed)).vertex_part)
    got = assign_parts(ei, power_law.num_nodes, num_parts, "metis", seed, balance="nodes")
    assert np.array_equal(got, want)
    # The ctypes call with one constraint is that same METIS call (so its options are right).
    ours = _part_graph_c(xadj, adjncy, None, 1, num_parts, num_parts <= 8, seed, None)
    assert np.array_equal(ours, want)


@pytest.mark.parametrize("num_parts", [3, 4, 8, 16])  # recursive bisection up to 8, then k-way
def test_edges_balance_metis(power_law, num_parts):
    ei = power_law.edge_index.numpy()
    nodes_parts = metis_parts(ei, power_law.num_nodes, num_parts, 0, "nodes")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no balance warning on this graph
        parts = metis_parts(ei, power_law.num_nodes, num_parts, 0, "edges")
    assert parts.dtype == np.int64 and parts.shape == (power_law.num_nodes,)
    assert set(np.unique(parts)) == set(range(num_parts))
    node_ratio, edge_ratio = _ratios(parts, ei, num_parts)
    assert edge_ratio <= 1.10 and node_ratio <= 1.10, (node_ratio, edge_ratio)
    assert _ratios(nodes_parts, ei, num_parts)[1] > 1.9  # what node balance gives here


def test_ubvec_is_the_final_tolerance(power_law):
    ei = power_law.edge_index.numpy()
    for num_parts in (4, 8):
        loose = metis_parts(ei, power_law.num_nodes, num_parts, 0, "edges", ubvec=(1.3, 1.08))
        tight = metis_parts(ei, power_law.num_nodes, num_parts, 0, "edges",
                            ubvec=(1.005, 1.005))
        assert max(_ratios(tight, ei, num_parts)) <= 1.01
        node_ratio, edge_ratio = _ratios(loose, ei, num_parts)
        assert edge_ratio <= 1.08 + 0.02 and node_ratio <= 1.3 + 0.02
        assert node_ratio > 1.05  # the looser node tolerance was used


def test_hub_beyond_the_bound_is_named(tmp_path):
    # Node 0 receives 60 of the 100 edges: no 4-part node partition gets in-edges below 2.4x.
    src = np.concatenate([np.arange(1, 61), np.arange(1, 41)])
    dst = np.concatenate([np.zeros(60, np.int64), (np.arange(1, 41) % 40) + 1])
    ei = np.stack([src, dst]).astype(np.int64)
    with pytest.warns(UserWarning, match=r"max/mean = 2\.\d+.*max_in_degree \* P / E = 2\.400"):
        parts = metis_parts(ei, 61, 4, 0, "edges")
    assert parts.shape == (61,)
    with pytest.warns(UserWarning, match="max_in_degree"):
        report = write_partition(Data(edge_index=torch.from_numpy(ei), num_nodes=61), 4,
                                 tmp_path / "hub", balance="edges")
    assert report.balance["lower_bound_in_edges"] == pytest.approx(2.4)
    assert "in-edges max/mean cannot go below 2.400 (max in-degree * P / E)" in report.summary()


def test_random_and_contiguous_cut_at_equal_weight():
    # in-degrees 3, 1, 0, 0 (a self-loop counts: it is stored): weights 1 + indeg * N / E =
    # 4, 2, 1, 1; the weight midpoints 2, 5, 6.5, 7.5 of 8 cut two parts as [0 | 1 2 3].
    ei = np.array([[1, 2, 3, 0], [0, 0, 0, 1]])
    ei_loop = np.array([[0, 2, 3, 0], [0, 0, 0, 1]])
    for edges in (ei, ei_loop):
        assert assign_parts(edges, 4, 2, "contiguous", balance="edges").tolist() == [0, 1, 1, 1]
    assert assign_parts(ei, 4, 2, "contiguous", balance="nodes").tolist() == [0, 0, 1, 1]
    # random: the same cut along the seed's permutation, which node balance also uses.
    order = np.random.default_rng(5).permutation(4)
    parts = assign_parts(ei, 4, 2, "random", seed=5, balance="edges")
    assert np.all(np.diff(parts[order]) >= 0)
    nodes = assign_parts(ei, 4, 2, "random", seed=5, balance="nodes")
    assert np.array_equal(nodes[order], [0, 0, 1, 1])
    # A hub heavier than several parts' shares: the cuts move so that no part is empty.
    star = np.stack([np.arange(1, 20), np.zeros(19, np.int64)])
    for num_parts in (5, 20):
        for method in ("contiguous", "random"):
            parts = assign_parts(star, 20, num_parts, method, balance="edges")
            assert np.bincount(parts, minlength=num_parts).min() >= 1, (method, num_parts)
    parts = assign_parts(star, 20, 5, "contiguous", balance="edges")
    assert np.flatnonzero(parts == 0).tolist() == [0] and np.all(np.diff(parts) >= 0)


def test_random_and_contiguous_edges_balance_a_skewed_order():
    # In-degree falls steeply with the id: contiguous node balance leaves part 0 most edges.
    gen = np.random.default_rng(0)
    n, e = 4000, 16000
    dst = np.minimum((n * gen.random(e) ** 3).astype(np.int64), n - 1)
    ei = np.stack([gen.integers(0, n, e), dst])
    weight = 1 + np.bincount(dst, minlength=n) * n / e
    for method in ("contiguous", "random"):
        nodes = _ratios(assign_parts(ei, n, 4, method, balance="nodes"), ei, 4)[1]
        parts = assign_parts(ei, n, 4, method, balance="edges")
        edges = _ratios(parts, ei, 4)[1]
        # What is balanced is the sum nodes + in-edges * N / E, not each on its own.
        per_part = np.bincount(parts, weights=weight, minlength=4)
        assert per_part.max() / per_part.mean() <= 1.01, method
        assert edges < (0.75 if method == "contiguous" else 0.95) * nodes, (method, nodes, edges)


def test_bad_balance_and_ubvec_are_refused_before_writing(graph, tmp_path):
    out = tmp_path / "never"
    for kwargs, match in (({"balance": "edge"}, "unknown balance 'edge'"),
                          ({"balance": 1}, "unknown balance 1"),
                          ({"ubvec": (1.0, 1.05)}, r"ubvec .*\(1\.0, 1\.05\)"),
                          ({"ubvec": (1.05,)}, r"ubvec .*\(1\.05,\)"),
                          ({"ubvec": "ab"}, "ubvec .*'ab'"),
                          ({"ubvec": (float("nan"), 1.1)}, "ubvec .*nan"),
                          ({"ubvec": (1.1, 1.1), "method": "random"},
                           "ubvec applies to method='metis' only")):
        with pytest.raises(ValueError, match=match):
            partition_graph(graph, 3, out, **kwargs)
        assert not out.exists()
    with pytest.raises(ValueError, match="unknown balance 'x'"):
        assign_parts(graph.edge_index.numpy(), graph.num_nodes, 2, "metis", balance="x")
    with pytest.raises(ValueError, match="unknown balance 'x'"):
        pyg_sar.distribute(graph, balance="x")


def test_default_balance_resolution():
    # METIS / KaMinPar: edges from 4 parts on, nodes below; random / contiguous: nodes.
    for method in ("metis", "kaminpar"):
        assert [resolve_balance(method, None, p) for p in (1, 2, 3, 4, 8, 16)] == \
            ["nodes"] * 3 + ["edges"] * 3
        assert default_balance(method, 4) == "edges" and default_balance(method, 3) == "nodes"
    for p in (2, 4, 8):
        assert resolve_balance("random", None, p) == resolve_balance("contiguous", None, p) \
            == "nodes"
        assert resolve_balance("random", "edges", p) == "edges"
        assert resolve_balance("metis", "nodes", p) == "nodes"


@pytest.mark.parametrize("num_parts, by", [(2, "nodes"), (3, "nodes"), (4, "edges")])
def test_default_balance_is_what_is_written(power_law, tmp_path, num_parts, by):
    """``balance=None`` writes the same parts as the explicit balance of the rule, and
    ``meta.json`` records the resolved value."""
    report = write_partition(power_law, num_parts, tmp_path / "d")
    explicit = write_partition(power_law, num_parts, tmp_path / "e", balance=by)
    assert report.balance["by"] == by
    assert report.balance == explicit.balance
    got = [json.loads((tmp_path / d / fmt.META_FILE).read_text()) for d in ("d", "e")]
    assert got[0]["balance"] == got[1]["balance"] and got[0]["files"] == got[1]["files"]
    # The streaming writer resolves balance=None by the same rule.
    from pyg_sar.partition.sources import write_npy_source
    from pyg_sar.partition.stream import write_partition_streaming
    source = write_npy_source(tmp_path / "src", power_law.edge_index.numpy(),
                              power_law.num_nodes)
    streamed = write_partition_streaming(source, num_parts, tmp_path / "s", "metis")
    assert streamed.balance == report.balance
    assert streamed.part_num_edges == report.part_num_edges


@pytest.mark.parametrize("balance", ["nodes", "edges"])
@pytest.mark.parametrize("method", ["metis", "random"])
def test_meta_balance_block(graph, tmp_path, method, balance):
    report = write_partition(graph, 3, tmp_path / "p", method=method, balance=balance, seed=2)
    meta = json.loads((tmp_path / "p" / fmt.META_FILE).read_text())
    block = meta["balance"]
    assert report.balance == block
    assert block["by"] == balance and block["ubvec"] is None
    assert block["partitioner"] == ("metis-recursive" if method == "metis" else "random")
    in_degree = np.bincount(graph.edge_index[1].numpy(), minlength=graph.num_nodes)
    assert block["lower_bound_in_edges"] == pytest.approx(in_degree.max() * 3 / graph.num_edges)
    lists = {"nodes": meta["part_num_nodes"], "in_edges": meta["part_num_edges"],
             "halo_rows": [sum(p["recv_counts"]) for p in meta["parts"]],
             "send_rows": [sum(p["send_counts"]) for p in meta["parts"]]}
    for name, values in lists.items():
        assert block[name]["max"] == max(values)
        assert block[name]["mean"] == pytest.approx(sum(values) / 3)
        assert block[name]["max_over_mean"] == pytest.approx(max(values) * 3 / sum(values))
    assert lists["halo_rows"] == report.recv_rows
    text = report.summary()
    assert f"balanced by {balance}" in text
    assert f"in-edges per part: {meta['part_num_edges']} (max/mean " in text
    assert "halo rows per part:" in text and "nodes per part:" in text
    for r in range(3):
        assert load_partition(tmp_path / "p", r).meta["balance"] == block
    # build_meta (shared with other writers) rebuilds exactly this meta.json.
    rebuilt = build_meta(
        node_offsets=meta["node_offsets"], num_edges=meta["num_edges"],
        parts_info=meta["parts"], files=meta["files"], num_features=meta["num_features"],
        num_classes=meta["num_classes"], method=method, seed=2, node_keys=meta["node_keys"],
        edge_keys=meta["edge_keys"], partitioning={k: block[k] for k in
                                                   ("by", "partitioner", "ubvec")},
        max_in_degree=int(in_degree.max()))
    assert json.loads(json.dumps(rebuilt)) == meta


def test_meta_records_ubvec(graph, tmp_path):
    report = write_partition(graph, 2, tmp_path / "p", balance="edges", ubvec=(1.2, 1.1))
    assert report.balance["ubvec"] == [1.2, 1.1]
    assert "ubvec [1.2, 1.1]" in report.summary()


def _edited(meta: dict, edit) -> dict:
    meta = copy.deepcopy(meta)
    edit(meta["balance"])
    return meta


def test_meta_balance_block_is_validated(graph, tmp_path):
    write_partition(graph, 3, tmp_path / "p", balance="edges")
    meta = json.loads((tmp_path / "p" / fmt.META_FILE).read_text())
    fmt.validate_meta(copy.deepcopy(meta), "ok")
    older = copy.deepcopy(meta)
    del older["balance"]  # a folder written before the block existed
    fmt.validate_meta(older, "older")
    edits = {
        "by": lambda b: b.update(by="both"),
        "partitioner": lambda b: b.update(partitioner=3),
        "ubvec": lambda b: b.update(ubvec=[1.0, 1.1]),
        "lower_bound_in_edges": lambda b: b.update(lower_bound_in_edges=-1),
        "nodes": lambda b: b["nodes"].update(max=b["nodes"]["max"] + 1),
        "in_edges": lambda b: b["in_edges"].update(mean=b["in_edges"]["mean"] * 1.01),
        "halo_rows": lambda b: b["halo_rows"].update(max_over_mean=9.0),
        "send_rows": lambda b: b.pop("send_rows"),
    }
    for field, edit in edits.items():
        with pytest.raises(MetaError, match=f"'balance.{field}'"):
            fmt.validate_meta(_edited(meta, edit), "edited")
    bad = copy.deepcopy(meta)
    bad["balance"] = [1]
    with pytest.raises(MetaError, match="'balance' must be an object"):
        fmt.validate_meta(bad, "edited")
    # And through the loader: an edited meta.json is refused.
    (tmp_path / "p" / fmt.META_FILE).write_text(json.dumps(_edited(meta, edits["nodes"])))
    with pytest.raises(MetaError, match="'balance.nodes'"):
        load_partition(tmp_path / "p", 0)


def test_hetero_refuses_edge_balance(tmp_path):
    data = HeteroData()
    data["a"].x = torch.randn(6, 2)
    data["b"].x = torch.randn(4, 2)
    data["a", "to", "b"].edge_index = torch.tensor([[0, 1, 2, 3, 4, 5], [0, 1, 2, 3, 0, 1]])
    with pytest.raises(ValueError, match="per-type node rebalance.*balance='edges'"):
        partition_graph(data, 2, tmp_path / "h", balance="edges")
    assert not (tmp_path / "h").exists()
    partition_graph(data, 2, tmp_path / "h", balance="nodes")
    assert "balance" not in json.loads((tmp_path / "h" / fmt.META_FILE).read_text())
    # From 4 parts on METIS's default is edge balance; a HeteroData keeps its node balance
    # without an error (every part holds floor or ceil of N_t / P nodes of every type t).
    with pytest.raises(ValueError, match="per-type node rebalance.*balance='edges'"):
        partition_graph(data, 4, tmp_path / "h4", balance="edges")
    partition_graph(data, 4, tmp_path / "h4")
    for t, n in (("a", 6), ("b", 4)):
        sizes = [load_partition(tmp_path / "h4", r).num_nodes_dict[t] for r in range(4)]
        assert sum(sizes) == n and max(sizes) - min(sizes) <= 1, (t, sizes)


def test_link_split_takes_only_the_default(graph, tmp_path):
    from pyg_sar.partition.link_split import random_link_split
    triple = random_link_split(graph, 0.1, 0.1, seed=0)
    for num_parts, other in ((2, "edges"), (4, "nodes")):  # default: nodes at 2, edges at 4
        with pytest.raises(ValueError, match=f"balance='{other}'.*not supported"):
            partition_graph(triple, num_parts, tmp_path / "l", balance=other)
        assert not (tmp_path / "l").exists()
    partition_graph(triple, 4, tmp_path / "l", balance="edges")  # the default, named
    meta = json.loads((tmp_path / "l" / "graph" / fmt.META_FILE).read_text())
    assert meta["balance"]["by"] == "edges"


def test_cli_balance_flag(tmp_path, capsys):
    from pyg_sar.partition.__main__ import main
    out = tmp_path / "parts"
    args = ["--dataset", "rmat", "--arg", "num_nodes=2000", "--arg", "num_edges=8000",
            "--num-parts", "4", "--out", str(out)]
    assert main([*args, "--balance", "edges"]) == 0
    text = capsys.readouterr().out
    meta = json.loads((out / fmt.META_FILE).read_text())
    assert meta["balance"]["by"] == "edges" and meta["balance"]["in_edges"]["max_over_mean"] <= 1.1
    assert "balanced by edges (metis-recursive)" in text and "in-edges per part:" in text
    assert main([*args, "--balance", "nodes", "--overwrite"]) == 0
    meta = json.loads((out / fmt.META_FILE).read_text())
    assert meta["balance"]["by"] == "nodes" and meta["balance"]["in_edges"]["max_over_mean"] > 2
    with pytest.raises(SystemExit) as exc:
        main([*args, "--balance", "both", "--overwrite"])
    assert exc.value.code == 2 and "invalid choice: 'both'" in capsys.readouterr().err
    assert main([*args, "--overwrite"]) == 0  # 4 parts: METIS's default is edge balance
    assert json.loads((out / fmt.META_FILE).read_text())["balance"]["by"] == "edges"
    with pytest.raises(SystemExit):
        main([*args, "--overwrite", "--task", "link", "--balance", "nodes"])
    assert "argument --balance: a link-prediction split" in capsys.readouterr().err


def test_train_cli_balance_flag():
    from pyg_sar.train import parse_args
    assert parse_args(["--dataset", "cora", "--balance", "edges"]).balance == "edges"
    assert parse_args(["--dataset", "cora"]).balance is None
    with pytest.raises(SystemExit):
        parse_args(["--parts", "somewhere", "--balance", "edges"])


def test_distribute_one_process(graph):
    part = pyg_sar.distribute(graph, balance="edges")
    assert part.num_parts == 1 and part.meta["balance"]["by"] == "edges"
    assert part.meta["balance"]["partitioner"] == "none"  # one part: nothing was run


def test_edge_balanced_partition_trains_exactly():
    """Three ranks (plain processes, gloo): ``distribute(balance="edges")`` parts, a GraphSAGE
    forward, loss and every gradient against single-process PyG in float64."""
    from tests.partition import balance_cases

    data = balance_cases.make_data()
    ei = data.edge_index.numpy()
    parts = assign_parts(ei, data.num_nodes, 3, "metis", balance="edges")
    assert _ratios(assign_parts(ei, data.num_nodes, 3, "metis", balance="nodes"), ei, 3)[1] > 1.5
    ranks = run_on_ranks(f"{HERE / 'balance_cases.py'}:edge_balanced_training", 3,
                         launcher="spawn", backend="gloo", timeout=300)
    edges = np.bincount(parts[ei[1]], minlength=3)
    assert sorted(r["num_edges"] for r in ranks) == sorted(edges.tolist())
    for res in ranks:
        assert res["balance"]["by"] == "edges"
        assert res["balance"]["in_edges"]["max_over_mean"] <= 1.10
        assert res["out_error"] <= 1e-10 and res["loss_error"] <= 1e-10
        assert res["grad_error"] <= 1e-10
