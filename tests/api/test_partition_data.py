"""``PartitionData``: what ``load_partition`` returns is a PyG ``Data`` whose ``edge_index`` is
the rank's DistGraph, with every attribute the old ``LocalPartition`` had."""
from __future__ import annotations

import copy

import pytest
import torch
from torch_geometric.data import Data
from torch_geometric.nn import GCN

import pyg_sar
from pyg_sar.datasets import sbm
from pyg_sar.graph import DistGraph
from pyg_sar.partition import LocalPartition, PartitionData

PARTS = 3


@pytest.fixture(scope="module")
def whole():
    data = sbm(num_nodes=80, num_classes=3, avg_degree=4.0, num_features=5, seed=2)
    g = torch.Generator().manual_seed(0)
    data.edge_weight = torch.rand(data.num_edges, generator=g)
    data.edge_attr = torch.randn(data.num_edges, 2, generator=g)
    data.edge_kind = torch.randint(0, 4, (data.num_edges,), generator=g)
    data.pos = torch.randn(data.num_nodes, 3, generator=g)
    data.degree_rank = torch.arange(data.num_nodes)
    return data


@pytest.fixture(scope="module")
def folder(tmp_path_factory, whole):
    path = tmp_path_factory.mktemp("pd") / "parts"
    pyg_sar.partition_graph(whole, PARTS, path, method="random", seed=3)
    return path


@pytest.fixture
def parts(folder):
    return [pyg_sar.load_partition(folder, r, world_size=PARTS) for r in range(PARTS)]


def test_is_a_pyg_data_and_the_old_name(parts):
    assert LocalPartition is PartitionData and pyg_sar.LocalPartition is pyg_sar.PartitionData
    for part in parts:
        assert isinstance(part, Data) and isinstance(part, PartitionData)
        assert isinstance(part.edge_index, DistGraph)
        assert part.graph is part.edge_index


def test_tensors_are_the_inputs_rows(whole, parts, folder):
    seen = []
    for r, part in enumerate(parts):
        nid, eid = part.node_ids, part.edge_ids
        assert part.rank == r and part.num_parts == PARTS and part.path == folder
        for key in ("x", "y", "train_mask", "val_mask", "test_mask", "pos", "degree_rank"):
            assert torch.equal(part[key], whole[key][nid]), key
        for key in ("edge_weight", "edge_attr", "edge_kind"):
            assert torch.equal(part[key], whole[key][eid]), key
        assert set(part.node_data) == {"pos", "degree_rank"}
        assert set(part.edge_data) == {"edge_kind"}
        assert torch.equal(part.node_data["pos"], part.pos)
        assert torch.equal(part.global_edge_index(), whole.edge_index[:, eid])
        assert part.num_nodes == part.graph.num_nodes == nid.numel()
        assert part.num_edges == part.graph.num_edges == eid.numel()
        assert part.num_features == 5 and part.num_classes == 3
        assert part.recv_node_ids.numel() == sum(part.graph.recv_counts)
        assert part.meta["num_parts"] == PARTS and len(part.fingerprint) == 64
        seen.append(nid)
    assert torch.equal(torch.cat(seen).sort().values, torch.arange(whole.num_nodes))


def test_pyg_data_protocol(parts):
    part = parts[1]
    masks = list(part("train_mask", "val_mask", "test_mask"))
    assert [k for k, _ in masks] == ["train_mask", "val_mask", "test_mask"]
    assert all(torch.equal(v, part[k]) for k, v in masks)
    text = repr(part)
    assert text.startswith("PartitionData(") and "edge_index=DistGraph(rank=1" in text
    assert "edge_index" in part.keys() and "x" in part
    assert part.num_node_features == 5
    # absent masks read as None, as the old LocalPartition did; setting None removes
    part.test_mask = None
    assert part.test_mask is None and "test_mask" not in part.keys()
    with pytest.raises(ValueError, match="local nodes"):
        part.num_nodes = 5


def test_to_moves_tensors_and_graphs_together(parts):
    part = parts[0]
    graph = part.graph
    assert part.to("cpu") is part and part.graph is graph  # already there: no copy
    assert graph.to("cpu") is graph and graph.to(torch.float64) is graph
    moved = copy.copy(part).to("meta")
    assert moved.x.device.type == "meta" and moved.graph.device.type == "meta"
    assert moved.graph.blocks[0].col.device.type == "meta"
    assert moved.graph._context is graph._context  # the same communication context
    assert part.x.device.type == "cpu" and part.graph is graph  # the original is untouched
    only_x = copy.copy(part).to("meta", "x")
    assert only_x.x.device.type == "meta" and only_x.graph is graph


def test_valued_graph_moves_with_its_structure(tmp_path, whole):
    import torch_geometric.transforms as T
    valued = T.Compose([T.GCNNorm(), T.ToSparseTensor()])(
        Data(x=whole.x, y=whole.y, edge_index=whole.edge_index))
    pyg_sar.partition_graph(valued, 1, tmp_path / "v")
    part = pyg_sar.load_partition(tmp_path / "v", 0)
    moved = copy.copy(part).to("meta")
    assert moved.adj_t.edge_values.device.type == "meta"
    assert moved.adj_t.blocks is moved.edge_index.blocks  # still one structure


def test_clone_and_deepcopy(parts):
    part = parts[2]
    clone = part.clone()
    assert torch.equal(clone.x, part.x) and clone.x.data_ptr() != part.x.data_ptr()
    deep = copy.deepcopy(part)
    assert deep.graph is not part.graph and deep.graph.num_edges == part.graph.num_edges
    assert torch.equal(deep.graph.blocks[0].col, part.graph.blocks[0].col)
    assert deep.meta == part.meta and deep.rank == part.rank


def test_a_converted_pyg_model_runs_on_the_data(tmp_path, whole):
    pyg_sar.partition_graph(whole, 1, tmp_path / "one")
    data = pyg_sar.load_partition(tmp_path / "one", 0)
    torch.manual_seed(0)
    model = GCN(5, 8, num_layers=2, out_channels=3)
    dist = pyg_sar.convert(copy.deepcopy(model))
    want = model(whole.x, whole.edge_index)[data.node_ids]
    got = dist(data.x, data.edge_index)
    assert torch.allclose(got, want, atol=1e-6)
    correct = 0
    for _, mask in data("train_mask"):  # the PyG idiom of iterating masks
        correct += int((got.argmax(-1)[mask] == data.y[mask]).sum())
    assert correct >= 0


def test_constructed_by_keywords_as_before(parts):
    part = parts[0]
    again = PartitionData(rank=part.rank, num_parts=part.num_parts, graph=part.graph,
                          node_ids=part.node_ids, edge_ids=part.edge_ids,
                          recv_node_ids=part.recv_node_ids, meta=part.meta,
                          fingerprint=part.fingerprint, path=part.path, x=part.x, y=part.y,
                          edge_weight=part.edge_weight, node_data={"pos": part.pos})
    assert again.graph is part.graph and torch.equal(again.pos, part.pos)
    assert again.train_mask is None and again.num_nodes == part.num_nodes
    assert torch.equal(again.global_edge_index(), part.global_edge_index())


def test_torch_save_and_load(tmp_path, whole):
    """A part pickles without its communication context (bound again on first use)."""
    pyg_sar.partition_graph(whole, 1, tmp_path / "one")
    part = pyg_sar.load_partition(tmp_path / "one", 0, context=pyg_sar.init())
    torch.save(part, tmp_path / "part.pt")
    back = torch.load(tmp_path / "part.pt", weights_only=False)
    assert isinstance(back, PartitionData) and back.graph._context is None
    assert back.rank == 0 and back.meta == part.meta and back.fingerprint == part.fingerprint
    assert torch.equal(back.x, part.x) and torch.equal(back.pos, part.pos)
    model = pyg_sar.convert(GCN(5, 8, num_layers=2, out_channels=3))
    assert torch.equal(model(back.x, back.edge_index), model(part.x, part.edge_index))
