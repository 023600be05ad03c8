"""Heterogeneous partitions (issue 22): partition_graph(HeteroData) and HeteroPartition.

Oracles are the input ``HeteroData`` itself and PyG's ``HeteroData.to_homogeneous()``: every
edge of every type is rebuilt from all ranks' DistGraphs (blocks + the source ranks' send lists)
and compared with the input in original ids; node tensors at ``node_ids_dict``; per-type
balance; the typed homogeneous view; the errors. One 3-rank launch checks global losses on one
node type and converted layers on the homogeneous and bipartite views against PyG.
"""
from __future__ import annotations

import json
import runpy
from collections import Counter
from pathlib import Path

import pytest
import torch
from torch_geometric.data import HeteroData
from torch_geometric.utils import degree

import pyg_sar
from pyg_sar.partition import ChecksumError, HeteroPartition, MetaError, load_partition
from pyg_sar.partition.loader import load_node_map

HERE = Path(__file__).resolve().parent
CASES = runpy.run_path(str(HERE / "hetero_cases.py"))
make_hetero = CASES["make_hetero"]
SETUPS = [("random", 1), ("random", 2), ("random", 3), ("metis", 3), ("contiguous", 2)]


@pytest.fixture(scope="module")
def data() -> HeteroData:
    return make_hetero()


@pytest.fixture(scope="module")
def partitions(data, tmp_path_factory) -> dict:
    out = {}
    for method, P in SETUPS:
        root = tmp_path_factory.mktemp(f"hetero_{method}_{P}")
        pyg_sar.partition_graph(data, P, root, method=method, seed=1)
        out[method, P] = (root, [load_partition(root, r, world_size=P) for r in range(P)])
    return out


def _edges_from_graphs(parts: list[HeteroPartition], et) -> Counter:
    """Every stored edge of ``et`` in original ids, from the DistGraphs alone: local columns
    through this rank's ids, remote ones through the source rank's send list."""
    src_t, _, dst_t = et
    found = Counter()
    for part in parts:
        graph = part.edge_index_dict[et]
        for block in graph.blocks:
            s = block.src_rank
            if s == part.rank:
                src = part.node_ids_dict[src_t][block.col]
            else:
                owner = parts[s]
                sent = owner.edge_index_dict[et].send_idx[part.rank]
                assert sent.numel() == block.num_src
                src = owner.node_ids_dict[src_t][sent][block.col]
            dst = part.node_ids_dict[dst_t][block.row]
            found.update(zip(src.tolist(), dst.tolist(), strict=True))
    return found


@pytest.mark.parametrize("setup", SETUPS, ids=[f"{m}-P{p}" for m, p in SETUPS])
def test_every_edge_once_with_its_attributes(data, partitions, setup):
    _, parts = partitions[setup]
    assert all(isinstance(p, HeteroPartition) for p in parts)
    for et in data.edge_types:
        ref = data[et].edge_index
        assert _edges_from_graphs(parts, et) == Counter(zip(*ref.tolist(), strict=True)), et
        ids = torch.cat([p.edge_ids_dict[et] for p in parts])
        assert torch.equal(ids.sort().values, torch.arange(ref.size(1))), et
        for p in parts:  # stored order: global_edge_index and edge_attr follow edge_ids
            assert torch.equal(p.global_edge_index(et), ref[:, p.edge_ids_dict[et]])
            if "edge_attr" in data[et]:
                assert torch.equal(p.edge_attr_dict[et], data[et].edge_attr[p.edge_ids_dict[et]])
                assert torch.equal(p[et].edge_attr, p.edge_attr_dict[et])
            else:
                assert et not in p.edge_attr_dict and p[et].edge_attr is None


@pytest.mark.parametrize("setup", SETUPS, ids=[f"{m}-P{p}" for m, p in SETUPS])
def test_node_tensors_ids_and_balance(data, partitions, setup):
    root, parts = partitions[setup]
    P = len(parts)
    for t in data.node_types:
        n = data[t].num_nodes
        ids = torch.cat([p.node_ids_dict[t] for p in parts])
        assert torch.equal(ids.sort().values, torch.arange(n)), t
        counts = [p.num_nodes_dict[t] for p in parts]
        assert set(counts) <= {n // P, -(-n // P)}, (t, counts)  # balanced per type
        offsets = parts[0].node_offsets_dict[t]
        assert [b - a for a, b in zip(offsets, offsets[1:])] == counts
        node_map = load_node_map(root, t)
        for p in parts:
            assert p.node_offsets_dict[t] == offsets
            assert torch.equal(node_map[p.node_ids_dict[t]],
                               torch.arange(offsets[p.rank], offsets[p.rank + 1]))
            for key in data[t].keys():
                if isinstance(data[t][key], torch.Tensor):
                    assert torch.equal(p[t][key], data[t][key][p.node_ids_dict[t]]), (t, key)
    for p in parts:
        assert p.metadata() == data.metadata()
        assert set(p.x_dict) == {"paper", "author"} and set(p.y_dict) == {"paper"}
        assert set(p.train_mask_dict) == set(p.val_mask_dict) == set(p.test_mask_dict) == \
            {"paper"}
        assert p["inst"].x is None and p["inst"].num_nodes == p.num_nodes_dict["inst"]
        assert p["author"].score.dtype == torch.bfloat16
        assert p.num_features_dict == {"paper": 5, "author": 3, "inst": 0}
        assert p.num_classes_dict == {"paper": int(data["paper"].y.max()) + 1}


@pytest.mark.parametrize("setup", SETUPS, ids=[f"{m}-P{p}" for m, p in SETUPS])
def test_bipartite_graphs(data, partitions, setup):
    _, parts = partitions[setup]
    for et in data.edge_types:
        src_t, _, dst_t = et
        in_deg = degree(data[et].edge_index[1], data[dst_t].num_nodes).long()
        for p in parts:
            graph = p.edge_index_dict[et]
            assert graph is p[et].edge_index
            assert graph.is_bipartite == (src_t != dst_t)
            assert graph.num_nodes == p.num_nodes_dict[dst_t]
            assert graph.num_src_nodes == p.num_nodes_dict[src_t]
            assert graph.num_global_src_nodes == data[src_t].num_nodes
            assert graph.node_offsets == p.node_offsets_dict[dst_t]
            assert torch.equal(graph.in_degree, in_deg[p.node_ids_dict[dst_t]])
            assert torch.equal(graph.node_ids, p.node_ids_dict[dst_t])
            for block in graph.blocks:
                if graph.is_bipartite:
                    assert block.src_in_degree is None
                elif block.src_rank == p.rank:
                    assert torch.equal(block.src_in_degree, graph.in_degree)
                else:  # source degrees of the received rows are exact (GCN norms)
                    owner = parts[block.src_rank]
                    sent = owner.edge_index_dict[et].send_idx[p.rank]
                    assert torch.equal(block.src_in_degree,
                                       in_deg[owner.node_ids_dict[src_t][sent]])
    # the edge types with edges among the node type's own nodes lose no self-loop
    et = ("paper", "cites", "paper")
    assert sum(int((p.global_edge_index(et)[0] == p.global_edge_index(et)[1]).sum())
               for p in parts) == int((data[et].edge_index[0] == data[et].edge_index[1]).sum())


@pytest.mark.parametrize("setup", SETUPS, ids=[f"{m}-P{p}" for m, p in SETUPS])
def test_to_homogeneous_matches_pyg(data, partitions, setup):
    _, parts = partitions[setup]
    homo = data.to_homogeneous()
    deg = degree(homo.edge_index[1], homo.num_nodes).long()
    views = [p.to_homogeneous() for p in parts]

    assert parts[0].to_homogeneous()[0] is views[0][0]  # built once
    found = Counter()
    for p, (graph, node_type, edge_type) in zip(parts, views, strict=True):
        nid = graph.node_ids
        assert graph.node_offsets == views[0][0].node_offsets
        assert torch.equal(node_type, homo.node_type[nid])
        assert torch.equal(graph.in_degree, deg[nid])
        assert edge_type.numel() == graph.num_edges == sum(p.num_edges_dict.values())
        etype, pos = p.homogeneous_edge_map()
        typed = [p.global_edge_index(et) + torch.tensor([[_type_offset(data, et[0])],
                                                         [_type_offset(data, et[2])]])
                 for et in p.edge_types]
        stored = torch.cat([typed[int(j)][:, int(k)].unsqueeze(1) for j, k in zip(etype, pos)],
                           dim=1) if etype.numel() else torch.zeros(2, 0, dtype=torch.long)
        for block in graph.blocks:
            if block.src_rank == p.rank:
                src = nid[block.col]
            else:
                owner = views[block.src_rank][0]
                received = owner.node_ids[owner.send_idx[p.rank]]
                assert received.numel() == block.num_src
                assert torch.equal(block.src_in_degree, deg[received])  # exact GCN norms
                src = received[block.col]
            dst = nid[block.row]
            types = edge_type[block.edge_slice]
            found.update(zip(src.tolist(), dst.tolist(), types.tolist(), strict=True))
            # each stored edge maps back to its edge type's stored edge
            assert torch.equal(stored[:, block.edge_slice], torch.stack([src, dst]))
            assert torch.equal(etype[block.edge_slice], types)
        assert p.homogeneous_edge_attr() is None  # only one edge type has edge_attr
    want = Counter(zip(*homo.edge_index.tolist(), homo.edge_type.tolist(), strict=True))
    assert found == want


def test_homogeneous_edge_attr_follows_the_homogeneous_stored_order(tmp_path):
    """With edge_attr of one shape on every edge type, homogeneous_edge_attr() holds each
    homogeneous stored edge's attribute (as PyG's to_homogeneous concatenates them)."""
    data = make_hetero()
    g = torch.Generator().manual_seed(5)
    for et in data.edge_types:
        data[et].edge_attr = torch.randn(data[et].edge_index.size(1), 2, generator=g)
    pyg_sar.partition_graph(data, 2, tmp_path, method="random")
    for r in range(2):
        part = load_partition(tmp_path, r, world_size=2)
        etype, pos = part.homogeneous_edge_map()
        want = torch.stack([data[part.edge_types[int(j)]].edge_attr[
            part.edge_ids_dict[part.edge_types[int(j)]][int(k)]] for j, k in zip(etype, pos)])
        assert torch.equal(part.homogeneous_edge_attr(), want)
        assert torch.equal(etype, part.to_homogeneous()[2])


def _type_offset(data: HeteroData, node_type: str) -> int:
    out = 0
    for t in data.node_types:
        if t == node_type:
            return out
        out += data[t].num_nodes
    raise KeyError(node_type)


def test_metis_cuts_fewer_edges_than_random(data, tmp_path):
    """METIS (rebalanced per type) keeps more edges local than a random split."""
    cut = {}
    for method in ("metis", "random"):
        report = pyg_sar.partition.write_partition(data, 3, tmp_path / method, method=method)
        cut[method] = sum(report.edge_cut.values())
    assert cut["metis"] < cut["random"], cut


def test_torch_save_round_trip(partitions, tmp_path):
    part = partitions["random", 2][1][1]
    part.to_homogeneous()
    torch.save(part, tmp_path / "part.pt")
    back = torch.load(tmp_path / "part.pt", weights_only=False)
    assert back.metadata() == part.metadata() and back._context is None
    for et in part.edge_types:
        assert torch.equal(back.global_edge_index(et), part.global_edge_index(et))
    assert torch.equal(back.to_homogeneous()[2], part.to_homogeneous()[2])


def test_type_views_and_lookup(partitions):
    part = partitions["random", 2][1][0]
    assert part["writes"].edge_index is part.edge_index_dict["author", "writes", "paper"]
    assert part["author", "paper"].num_edges == part.num_edges_dict["author", "writes", "paper"]
    with pytest.raises(KeyError, match="no edge type"):
        part["nope"]
    assert "HeteroPartition(rank=0" in repr(part)


# ---------------------------------------------------------------- errors
def _bad_rows(d):
    d["paper"].y = d["paper"].y[:-1]


def _bad_src(d):
    d["author", "writes", "paper"].edge_index[0, 5] = 25


def _bad_dst(d):
    d["paper", "cites", "paper"].edge_index[1, 7] = -1


def _missing_type(d):
    d["venue", "hosts", "paper"].edge_index = torch.zeros(2, 1, dtype=torch.long)


def _no_nodes_info(d):
    d["ghost"].score_list = [1, 2]


def _bad_edge_rows(d):
    d["author", "writes", "paper"].edge_attr = d["author", "writes", "paper"].edge_attr[:-1]


def _float_edges(d):
    d["inst", "employs", "author"].edge_index = d["inst", "employs", "author"].edge_index.float()


@pytest.mark.parametrize("edit, match", [
    (_bad_rows, r"node type 'paper': node tensors disagree .*'y' has 39 rows"),
    (_bad_src, r"edge type \('author', 'writes', 'paper'\): source node id 25 \(edge 5\) is "
               r"outside \[0, 25\), the nodes of type 'author'"),
    (_bad_dst, r"\('paper', 'cites', 'paper'\): destination node id -1 \(edge 7\)"),
    (_missing_type, r"edge type \('venue', 'hosts', 'paper'\): node type 'venue' is missing"),
    (_no_nodes_info, r"node type 'ghost' has neither tensors nor num_nodes"),
    (_bad_edge_rows, r"\('author', 'writes', 'paper'\): edge tensor 'edge_attr' has 69 rows"),
    (_float_edges, r"\('inst', 'employs', 'author'\): edge_index must be an integer tensor"),
], ids=["rows", "src", "dst", "missing", "no-nodes", "edge-rows", "float"])
def test_bad_input_names_type_and_value(tmp_path, edit, match):
    data = make_hetero()
    edit(data)
    with pytest.raises(ValueError, match=match):
        pyg_sar.partition_graph(data, 2, tmp_path / "p")
    assert not (tmp_path / "p").exists()


def test_num_parts_beyond_nodes(tmp_path):
    data = HeteroData()
    data["a"].num_nodes = 2
    data["b"].num_nodes = 1
    with pytest.raises(ValueError, match=r"num_parts must be in \[1, total number of nodes=3\]"):
        pyg_sar.partition_graph(data, 4, tmp_path / "p")


def test_node_type_without_nodes(tmp_path):
    """A node type with no nodes (and an edge type from it without edges) partitions and
    loads: its tensors and graphs are empty on every rank."""
    data = make_hetero()
    data["venue"].x = torch.zeros(0, 2)
    data["venue", "hosts", "paper"].edge_index = torch.zeros(2, 0, dtype=torch.long)
    pyg_sar.partition_graph(data, 2, tmp_path, method="metis")
    for r in range(2):
        part = load_partition(tmp_path, r, world_size=2)
        assert part.x_dict["venue"].shape == (0, 2)
        graph = part.edge_index_dict["venue", "hosts", "paper"]
        assert graph.num_edges == 0 and graph.num_src_nodes == 0 and graph.is_bipartite


@pytest.fixture
def folder(tmp_path) -> Path:
    pyg_sar.partition_graph(make_hetero(), 2, tmp_path / "p", method="random")
    return tmp_path / "p"


def _edit_meta(root: Path, edit) -> None:
    meta = json.loads((root / "meta.json").read_text())
    edit(meta)
    (root / "meta.json").write_text(json.dumps(meta))


def test_corrupted_file_fails_its_checksum(folder):
    path = folder / "part1" / "etype1" / "col.npy"
    raw = bytearray(path.read_bytes())
    raw[-1] ^= 1
    path.write_bytes(bytes(raw))
    load_partition(folder, 0, world_size=2)  # rank 0 reads nothing of part1
    with pytest.raises(ChecksumError, match=r"part1/etype1/col\.npy"):
        load_partition(folder, 1, world_size=2)


def test_missing_file(folder):
    (folder / "part0" / "ntype0" / "node" / "x.npy").unlink()
    with pytest.raises(FileNotFoundError, match=r"part0/ntype0/node/x\.npy"):
        load_partition(folder, 0, world_size=2)


@pytest.mark.parametrize("edit, match", [
    (lambda m: m["hetero"]["edge_types"][2]["parts"][0].update(send_counts=[0, 999]),
     r"edge type \('paper', 'written_by', 'author'\): rank 0 sends 999 rows"),
    (lambda m: m["hetero"]["edge_types"][0].update(dst="nope"), "node type 'nope'"),
    (lambda m: m["hetero"]["node_types"][1].update(node_offsets=[0, 30, 25]),
     r"hetero\.node_types\[1\]\.node_offsets"),
    (lambda m: m.update(format_version=1), "needs format_version >= 2"),
    (lambda m: m.update(format_version=99), "newer than the supported version"),
    (lambda m: m["hetero"]["edge_types"][1].update(part_num_edges=[1, 2]), "part_num_edges"),
], ids=["send-counts", "unknown-type", "offsets", "old-version", "new-version", "edges"])
def test_malformed_meta(folder, edit, match):
    _edit_meta(folder, edit)
    with pytest.raises(MetaError, match=match):
        load_partition(folder, 0, world_size=2)


def test_world_size_and_node_map_errors(folder):
    with pytest.raises(ValueError, match="has 2 parts but the job runs on 3 ranks"):
        load_partition(folder, 0, world_size=3)
    with pytest.raises(ValueError, match=r"heterogeneous; pass node_type, one of \['paper'"):
        load_node_map(folder)


# ---------------------------------------------------------------- one 3-rank launch
def test_losses_and_converted_layers_on_three_ranks(tmp_path):
    """Global cross-entropy / accuracy on one node type's tensors, GCNConv and GraphConv on
    the typed homogeneous view, SAGEConv on a bipartite edge type: values and gradients equal
    single-process PyG on the whole HeteroData; pyg_sar.distribute of a HeteroData."""
    from pyg_sar.testing import run_on_ranks
    pyg_sar.partition_graph(make_hetero(), 3, tmp_path / "p", method="metis")
    ranks = run_on_ranks(f"{HERE / 'hetero_cases.py'}:suite", 3,
                         kwargs={"parts": str(tmp_path / "p")}, timeout=240)
    for rank, res in enumerate(ranks):
        for name in ("losses", "homogeneous", "bipartite", "distribute"):
            assert "error" not in res[name], (rank, name, res[name].get("trace"))
        loss = res["losses"]
        assert loss["value"] <= 1e-12 and loss["grad"] <= 1e-12, loss
        assert loss["same_on_ranks"] and loss["accuracy"] == 0.0, loss
        homo = res["homogeneous"]
        assert homo["node_type"] == 0, homo
        for name in ("gcn", "graphconv"):
            assert homo[name]["out"] <= 1e-10 and homo[name]["grad"] <= 1e-10, (name, homo)
        assert res["bipartite"]["out"] <= 1e-10 and res["bipartite"]["grad"] <= 1e-10
        assert res["distribute"] == {"same": True, "bound": True}, res["distribute"]


def test_cli_partitions_a_hetero_dataset(tmp_path, capsys):
    """``python -m pyg_sar.partition --dataset mag-like`` (in process): a per-type summary and
    a folder that loads as HeteroPartitions holding every edge of the dataset."""
    import torch_geometric.transforms as T

    from pyg_sar.datasets import load_dataset
    from pyg_sar.partition.__main__ import main
    args = ["--dataset", "mag-like", "--arg", "num_papers=150", "--arg", "num_features=4",
            "--num-parts", "2", "--out", str(tmp_path / "p"), "--normalize-features"]
    assert main(args) == 0
    text = capsys.readouterr().out
    assert "nodes of 'paper' per part: [75, 75]" in text and "(features normalised)" in text
    data = load_dataset("mag-like", num_papers=150, num_features=4)
    parts = [load_partition(tmp_path / "p", r, world_size=2) for r in range(2)]
    assert parts[0].metadata() == data.metadata()
    for et in data.edge_types:
        assert sum(p.num_edges_dict[et] for p in parts) == data[et].edge_index.size(1)
    x = T.NormalizeFeatures()(data)["paper"].x
    for p in parts:
        assert torch.equal(p.x_dict["paper"], x[p.node_ids_dict["paper"]])
