"""Typed layers on a heterogeneous partition's typed homogeneous view: ``RGCNConv`` (no
decomposition, ``num_bases``, ``num_blocks``; aggr mean / add / max), ``RGATConv`` (across- and
within-relation attention, additive and multiplicative, mods scaled / f-scaled, bases, blocks,
``edge_dim``), ``HEATConv`` (``node_type``, ``edge_type``, ``edge_attr`` from
:meth:`~pyg_sar.HeteroPartition.homogeneous_edge_attr`), ``FiLMConv`` and a two-layer R-GCN,
called on :meth:`pyg_sar.HeteroPartition.to_homogeneous` against PyG on
``HeteroData.to_homogeneous()``: P = 1 and 3, modes sar / sa / halo, float64, partitions written
by ``pyg_sar.partition_graph(HeteroData, method='metis')`` and ``method='random'``; the output,
the input gradient and every parameter gradient within 1e-10 (relative).

One launch per P runs every case on both partitions (``typed_view_cases.suite``). Also (in
process): a ``to_hetero`` / ``HeteroConv`` model whose metadata does not match the partition's
is refused naming the edge type.
"""
from __future__ import annotations

from pathlib import Path

import pytest
import torch
from torch_geometric.nn import HeteroConv, SAGEConv, to_hetero

import pyg_sar
from pyg_sar.testing import run_on_ranks
from tests.hetero import typed_view_cases as tv

HERE = Path(__file__).resolve().parent

TOL = 1e-10
MODES = ("sar", "sa", "halo")
METHODS = ("metis", "random")
CASES = [[name, mode] for name in tv.MODELS for mode in MODES]
WORLD_SIZES = (1, 3)


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    root = tmp_path_factory.mktemp("typed_view_parts")
    out = {}
    for p in WORLD_SIZES:
        parts = {}
        for method in METHODS:
            parts[method] = str(root / f"p{p}_{method}")
            pyg_sar.partition_graph(tv.make_data(), p, parts[method], method=method, seed=0)
        out[p] = run_on_ranks(f"{HERE / 'typed_view_cases.py'}:suite", p, timeout=420,
                              kwargs=dict(cases=CASES, parts=parts))
    return out


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("world_size", WORLD_SIZES)
@pytest.mark.parametrize("case", CASES, ids=lambda c: "/".join(c))
def test_matches_pyg(results, world_size, method, case):
    for rank, res in enumerate(results[world_size]):
        got = res[f"{method}|{'/'.join(case)}"]
        assert "error" not in got, f"rank {rank} of {world_size}: {got.get('error')}"
        assert "out" in got["errors"] and "x_grad" in got["errors"]
        assert any(k.startswith("grad:") for k in got["errors"])
        worst = {k: v for k, v in got["errors"].items() if not v <= TOL}  # NaN fails too
        assert not worst, f"rank {rank} of {world_size}: errors above {TOL}: {worst}"


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("world_size", WORLD_SIZES)
def test_the_view_is_pygs(results, world_size, method):
    """Every rank's node types are PyG's for its nodes, one edge type and one edge_attr row
    per stored edge; the ranks together hold every node and edge once."""
    data = tv.make_data()
    facts = [res[f"{method}|view"] for res in results[world_size]]
    for f in facts:
        assert "error" not in f, f
        assert f["node_type_mismatch"] == 0
        assert f["num_edges"] == f["edge_attr_rows"] == f["graph_edges"]
    assert sum(f["num_edges"] for f in facts) == data.num_edges
    for t, n in tv.NUM.items():
        assert sum(f["local_nodes"][t] for f in facts) == n


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("world_size", WORLD_SIZES)
def test_hetero_batch_norm_uses_every_ranks_nodes(results, world_size, method):
    """HeteroBatchNorm between two RGCNConv: training outputs over two SGD steps, running
    statistics per node type and the evaluation output equal PyG's on the whole graph."""
    got = results[world_size]
    for rank in range(world_size):
        r = got[rank][f"{method}|hetero_batch_norm"]
        assert "error" not in r, f"rank {rank}: {r['error']}"
        assert r["max"] <= TOL, f"rank {rank}: {r['errors']}"


def test_a_rank_holds_no_venue(results):
    """The 2 "venue" nodes over 3 ranks: some rank holds none, so the cases above include a
    rank without nodes of a type."""
    for method in METHODS:
        assert min(res[f"{method}|view"]["local_nodes"]["venue"]
                   for res in results[3]) == 0


# ------------------------------------------------ metadata mismatch (in process, one rank)
EXTRA = ("venue", "publishes", "paper")


@pytest.fixture(scope="module")
def part(tmp_path_factory):
    folder = tmp_path_factory.mktemp("typed_view_p1") / "p1"
    pyg_sar.partition_graph(tv.make_data(), 1, folder, method="metis")
    return pyg_sar.load_partition(folder, 0)


class _Sage(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = SAGEConv(tv.DIM, 5)

    def forward(self, x, edge_index):
        return self.conv(x, edge_index)


@pytest.mark.filterwarnings("ignore:There exist node types")
def test_to_hetero_metadata_not_the_partitions_names_the_edge_type(part):
    node_types, edge_types = part.metadata()
    model = pyg_sar.convert(to_hetero(_Sage(), (node_types, [*edge_types, EXTRA])).double(),
                            pyg_sar.SARConfig(check_loss=False))
    with pytest.raises(ValueError, match=r"edge types \[\('venue', 'publishes', 'paper'\)\] "
                                         r"that the partition's edge_index_dict lacks"):
        model(part.x_dict, part.edge_index_dict)
    # the same model on a partition that has every edge type it has runs
    renamed = {(EXTRA if et == ("paper", "published_in", "venue") else et): g
               for et, g in part.edge_index_dict.items()}
    model = pyg_sar.convert(to_hetero(_Sage(), (node_types, list(renamed))).double(),
                            pyg_sar.SARConfig(check_loss=False))
    with pytest.raises(ValueError, match=r"\('venue', 'publishes', 'paper'\)"):
        model(part.x_dict, part.edge_index_dict)


def test_to_hetero_model_of_the_partitions_metadata_runs(part):
    model = pyg_sar.convert(to_hetero(_Sage(), part.metadata()).double(),
                            pyg_sar.SARConfig(check_loss=False))
    out = model(part.x_dict, part.edge_index_dict)
    assert {t: v.shape for t, v in out.items()} == {
        t: (n, 5) for t, n in part.num_nodes_dict.items()
        if any(et[-1] == t for et in part.edge_types)}


def test_hetero_conv_edge_type_missing_from_the_partition_is_named(part):
    """PyG's HeteroConv skips an edge type its input lacks; over a partition that is a
    mistake (the model was built for other metadata), refused naming the type."""
    convs = {et: SAGEConv(tv.DIM, 5) for et in part.edge_types}
    convs[EXTRA] = SAGEConv(tv.DIM, 5)
    model = pyg_sar.convert(HeteroConv(convs).double(), pyg_sar.SARConfig(check_loss=False))
    with pytest.raises(ValueError, match=r"\('venue', 'publishes', 'paper'\)"):
        model(part.x_dict, part.edge_index_dict)


def test_featureless_rgcn_needs_in_channels_the_node_count(part):
    """RGCNConv(x=None) over the typed view takes the graph's node ids as PyG takes
    arange(in_channels) (exact above: rgcn/featureless/*); a wrong in_channels or a bipartite
    graph (one edge type's) is refused."""
    from torch_geometric.nn import RGCNConv
    graph, _, edge_type = part.to_homogeneous()
    n = sum(tv.NUM.values())
    conv = pyg_sar.convert(RGCNConv(n, 3, tv.R).double())
    assert conv(None, graph, edge_type).shape == (n, 3)
    conv = pyg_sar.convert(RGCNConv(n - 1, 3, tv.R).double())
    with pytest.raises(ValueError, match=rf"in_channels = the graph's number of nodes \({n}\), "
                                         rf"got {n - 1}"):
        conv(None, graph, edge_type)
    et = ("author", "writes", "paper")
    bipartite = part.edge_index_dict[et]
    conv = pyg_sar.convert(RGCNConv(tv.NUM["author"], 3, 1).double())
    with pytest.raises(ValueError, match=r"RGCNConv\(x=None\) .* is bipartite"):
        conv(None, bipartite, torch.zeros(bipartite.num_edges, dtype=torch.long))
