"""Graphs with edge values (``adj_t``): partitioning a sparse ``adj_t``, the values riding on the
DistGraph, exactness against single-process PyG called with ``adj_t`` (outputs and gradients,
float64, P = 1 and 3, modes sar / sa / halo), and refusals of layers that would ignore them.
"""
from __future__ import annotations

from pathlib import Path

import pytest
import torch
import torch_geometric.transforms as T
from torch_geometric.data import Data
from torch_geometric.nn import GATConv, GCNConv, GINConv, MessagePassing, SAGEConv, SGConv

import pyg_sar
from pyg_sar.testing import run_on_ranks
from tests.api import values_cases as vc

HERE = Path(__file__).resolve().parent

TOL = 1e-10
pytestmark = pytest.mark.filterwarnings("ignore:Sparse:UserWarning")


def _dense(adj_t: torch.Tensor) -> torch.Tensor:
    return adj_t.to_dense()


@pytest.fixture(scope="module")
def data():
    return vc.make_data()


@pytest.fixture(scope="module")
def results(tmp_path_factory, data, api_p3_launch):
    """P -> the ranks' results of ``values_cases.suite``: P = 1 in a launch of its own, P = 3
    (METIS) in the 3-rank launch shared with the other api files (tests/api/conftest.py)."""
    root = tmp_path_factory.mktemp("values")
    pyg_sar.partition_graph(data, 1, root / "p1", method="random")
    return {1: run_on_ranks(f"{HERE / 'values_cases.py'}:suite", 1, timeout=900,
                            kwargs={"parts": str(root / "p1")}),
            3: api_p3_launch["values"]}


CASES = [f"{name}/{mode}" for name in vc.MODELS for mode in vc.MODES]


@pytest.mark.parametrize("world_size", (1, 3))
@pytest.mark.parametrize("case", CASES)
def test_values_match_pyg_adj_t(results, world_size, case):
    for rank, res in enumerate(results[world_size]):
        assert res["has_values"] and res["shares_structure"]
        got = res[case]
        bad = {k: v for k, v in got["errors"].items() if v > TOL}
        assert not bad, f"rank {rank} of {world_size}: errors above {TOL}: {bad}"
        assert got["values_matter"], "the values did not change the result: were they used?"


def _load(tmp_path, data, name="p"):
    pyg_sar.partition_graph(data, 1, tmp_path / name)
    return pyg_sar.load_partition(tmp_path / name, 0)


def _check_values_in_stored_order(part, adj_t):
    dense = _dense(adj_t)
    src, dst = part.global_edge_index()
    assert torch.equal(part.edge_weight, dense[dst, src])
    assert torch.equal(part.adj_t.edge_values, part.edge_weight)


@pytest.mark.parametrize("layout", ["csr", "coo", "csc"])
def test_partition_stores_adj_t_values_per_edge(tmp_path, data, layout):
    adj_t = {"csr": data.adj_t, "coo": data.adj_t.to_sparse_coo(),
             "csc": data.adj_t.to_sparse_csc()}[layout]
    given = Data(x=data.x, y=data.y, adj_t=adj_t)
    pyg_sar.partition_graph(given, 3, tmp_path / "p", method="random", seed=1)
    edges = 0
    for r in range(3):
        part = pyg_sar.load_partition(tmp_path / "p", r, world_size=3)
        assert part.meta["adj_t"] == {"values": "edge_weight"}
        assert part.adj_t is not part.edge_index and part.edge_index.edge_values is None
        assert part.adj_t.blocks is part.edge_index.blocks
        _check_values_in_stored_order(part, data.adj_t)
        edges += part.num_edges
    assert edges == data.adj_t._nnz()


def test_torch_sparse_sparse_tensor(tmp_path, data):
    torch_sparse = pytest.importorskip("torch_sparse")
    row, col = data.adj_t.to_sparse_coo().indices()
    value = data.adj_t.to_sparse_coo().values()
    adj = torch_sparse.SparseTensor(row=row, col=col, value=value, sparse_sizes=(64, 64))
    part = _load(tmp_path, Data(x=data.x, adj_t=adj))
    _check_values_in_stored_order(part, data.adj_t)


class _SparseTensorLike:
    """What the writer reads of a torch_sparse SparseTensor (``coo()``, ``sparse_sizes()``):
    exercises that path where torch_sparse is not installed."""

    storage = None

    def __init__(self, adj_t: torch.Tensor, with_values: bool = True) -> None:
        coo = adj_t.to_sparse_coo().coalesce()
        self.row, self.col = coo.indices()
        self.value = coo.values() if with_values else None
        self.size = tuple(adj_t.shape)

    def coo(self):
        return self.row, self.col, self.value

    def sparse_sizes(self):
        return self.size


def test_sparse_tensor_interface(tmp_path, data):
    part = _load(tmp_path, Data(x=data.x, adj_t=_SparseTensorLike(data.adj_t)), "a")
    _check_values_in_stored_order(part, data.adj_t)
    bare = _load(tmp_path, Data(x=data.x, adj_t=_SparseTensorLike(data.adj_t, False)), "b")
    assert bare.meta["adj_t"] == {"values": None} and bare.adj_t is bare.edge_index
    assert bare.edge_weight is None and bare.num_edges == data.adj_t._nnz()


def test_adj_t_of_ones_is_the_graph_without_values(tmp_path, data):
    ones = T.ToSparseTensor()(Data(x=data.x, edge_index=torch.tensor([[0, 1, 2], [1, 2, 0]]),
                                   num_nodes=64))
    part = _load(tmp_path, ones)
    assert part.meta["adj_t"] == {"values": None}
    assert part.adj_t is part.edge_index and part.edge_weight is None
    assert part.num_edges == 3


def test_adj_t_conflicts_are_refused(tmp_path, data):
    bad = Data(x=data.x, adj_t=data.adj_t, edge_index=torch.tensor([[0], [1]]))
    with pytest.raises(ValueError, match="both 'adj_t' and an 'edge_index'"):
        pyg_sar.partition_graph(bad, 1, tmp_path / "a")
    weight = torch.ones(data.adj_t._nnz(), dtype=torch.float64)
    with pytest.raises(ValueError, match="'edge_weight' that differs"):
        pyg_sar.partition_graph(Data(x=data.x, adj_t=data.adj_t, edge_weight=weight), 1,
                                tmp_path / "b")
    coo = data.adj_t.to_sparse_coo()
    multi = torch.sparse_coo_tensor(coo.indices(), coo.values().view(-1, 1).repeat(1, 2),
                                    (64, 64, 2))
    with pytest.raises(ValueError, match="only one value per edge"):
        pyg_sar.partition_graph(Data(x=data.x, adj_t=multi), 1, tmp_path / "c")
    rect = torch.sparse_coo_tensor(torch.tensor([[0], [1]]), torch.tensor([2.0]), (64, 70))
    with pytest.raises(ValueError, match="must be square"):
        pyg_sar.partition_graph(Data(x=data.x, adj_t=rect), 1, tmp_path / "d")
    with pytest.raises(ValueError, match="must be a torch_sparse SparseTensor"):
        pyg_sar.partition_graph(Data(x=data.x, adj_t=coo.to_dense()), 1, tmp_path / "e")


def test_explicit_edge_index_equal_to_adj_t_is_accepted(tmp_path, data):
    """T.ToSparseTensor(remove_edge_index=False) keeps edge_index and edge_weight, in adj_t's
    order: accepted, the values stored once."""
    edge_index = torch.tensor([[0, 1, 2, 2, 5], [1, 2, 0, 3, 5]])
    kept = T.ToSparseTensor(remove_edge_index=False)(
        T.GCNNorm()(Data(x=data.x, edge_index=edge_index)))
    assert "edge_index" in kept and "edge_weight" in kept
    part = _load(tmp_path, kept)
    assert part.adj_t.edge_values is not None
    _check_values_in_stored_order(part, kept.adj_t)


class UserLayer(MessagePassing):
    def forward(self, x, edge_index):
        return self.propagate(edge_index, x=x)


@pytest.mark.parametrize("make, match", [
    (lambda: SAGEConv(vc.IN, 3), "SAGEConv would ignore the edge values"),
    (lambda: GINConv(torch.nn.Linear(vc.IN, 3)), "GINConv would ignore the edge values"),
    (lambda: GATConv(vc.IN, 3), "GATConv would ignore the edge values"),
    (lambda: UserLayer(), "UserLayer would ignore the edge values"),
    (lambda: GCNConv(vc.IN, 3), r"GCNConv would re-normalise .* pass normalize=False"),
    (lambda: SGConv(vc.IN, 3), r"SGConv would re-normalise .* pass add_self_loops=False"),
])
def test_layers_that_would_ignore_values_refuse(tmp_path, data, make, match):
    part = _load(tmp_path, data)
    model = pyg_sar.convert(make().double())
    with pytest.raises(ValueError, match=match) as err:
        model(part.x, part.adj_t)
    assert "data.edge_index" in str(err.value)
    # called through forward (no module hooks): the converted propagate refuses too
    with pytest.raises(ValueError, match=match):
        model.forward(part.x, part.adj_t)
    # the same layer over the graph without values runs
    assert model(part.x, part.edge_index).shape[0] == part.num_nodes


def test_values_and_edge_weight_together_are_refused(tmp_path, data):
    part = _load(tmp_path, data)
    model = pyg_sar.convert(GCNConv(vc.IN, 3, normalize=False).double())
    with pytest.raises(ValueError, match="both a graph with edge values"):
        model(part.x, part.adj_t, torch.ones(part.num_edges, dtype=torch.float64))
    # passing the graph's own values again is the same call
    assert torch.equal(model(part.x, part.adj_t, part.adj_t.edge_values),
                       model(part.x, part.adj_t))


def test_valued_graph_operations(tmp_path, data):
    part = _load(tmp_path, data)
    graph = part.adj_t
    with pytest.raises(TypeError, match="carries edge values"):
        graph.flip([0])
    mask = torch.arange(graph.num_edges) % 2 == 0
    sub = graph[:, mask]
    assert torch.equal(sub.edge_values, graph.edge_values[mask])
    assert part.edge_index[:, mask].edge_values is None
    with pytest.raises(ValueError, match="one per stored edge"):
        part.edge_index.with_values(torch.ones(3))
    assert "values=True" in repr(graph)


@pytest.mark.parametrize("world_size", (1, 3))
def test_adj_t_arithmetic_and_correct_and_smooth(results, world_size):
    """``adj_t.sum(dim=1)``, ``d.view(-1, 1) * adj_t * d.view(1, -1)`` (the column scaling
    fetches the halo sources' entries) and ``CorrectAndSmooth`` over the scaled graphs, as
    PyG's ``correct_and_smooth.py`` writes them, equal the whole graph's; LabelPropagation
    refuses an input ``adj_t``'s values, whose meaning in PyG depends on its sparse format."""
    for rank, res in enumerate(results[world_size]):
        bad = {k: v for k, v in res["arithmetic"].items() if v > TOL}
        assert not bad, f"rank {rank} of {world_size}: errors above {TOL}: {bad}"


def test_adj_t_arithmetic_refuses_shapes_it_cannot_scale_by(tmp_path, data):
    graph = _load(tmp_path, data).edge_index
    n = graph.num_nodes
    with pytest.raises(ValueError, match=r"shape \[2, 1\]"):
        graph * torch.ones(2, 1)
    with pytest.raises(ValueError, match=rf"\[{n}, 1\].*got shape \[{n}\]"):
        graph * torch.ones(n)
    with pytest.raises(ValueError, match="only dim=1"):
        graph.sum(dim=0)
    with pytest.raises(TypeError):
        graph * "x"


def test_local_index_maps_original_ids_to_rows(tmp_path, data):
    pyg_sar.partition_graph(data, 3, tmp_path / "p", method="random", seed=1)
    index = torch.tensor([5, 0, 63, 5, 17])
    seen = []
    for r in range(3):
        part = pyg_sar.load_partition(tmp_path / "p", r, world_size=3)
        rows = part.local_index(index)
        held = index[torch.isin(index, part.node_ids)]
        assert torch.equal(part.node_ids[rows], held)  # the right rows, in index's order
        split = part.local_index({"train": index, "test": index[:1]})
        assert torch.equal(split["train"], rows) and set(split) == {"train", "test"}
        seen.append(rows.numel())
    assert sum(seen) == index.numel()
    with pytest.raises(ValueError, match="node id 64 is outside"):
        part.local_index(torch.tensor([64]))
    with pytest.raises(ValueError, match="1-D integer tensor"):
        part.local_index(torch.tensor([0.5]))
