"""``to_hetero_with_bases`` against single-process PyG on the whole HeteroData, P = 1 and 3,
modes sar / sa / halo, float64: every node type's output, input gradient and parameter gradient
(basis coefficients included) within 1e-10. One launch per P (``hetero_bases_cases.both``):
every model in every mode on a hand-built partition, every model once (the modes in turn) on
the partition written by ``pyg_sar.partition_graph``, and four on a partitioned OGB-MAG-shaped
graph (``pyg_sar.datasets.mag_like``).
"""
from __future__ import annotations

import copy
from pathlib import Path

import pytest
import torch
from torch_geometric.nn import SAGEConv

from pyg_sar.testing import run_on_ranks
from tests.hetero import hetero_bases_cases as hbc
from tests.hetero import hetero_cases as hc

HERE = Path(__file__).resolve().parent

TOL = 1e-10
MODES = ("sar", "sa", "halo")
CASES = [[name, mode] for name in hbc.MODELS for mode in MODES]
PARTITION_CASES = [[name, MODES[i % len(MODES)]] for i, name in enumerate(hbc.MODELS)]
# An OGB-MAG-shaped graph: four node types (three never destinations, one of a single node),
# partitioned by pyg_sar.partition_graph.
MAG_CASES = [["sage_mean", "sar"], ["sage_max", "halo"], ["gin", "sa"], ["graphconv", "sar"]]
WORLD_SIZES = (1, 3)


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    import pyg_sar
    root = tmp_path_factory.mktemp("bases_parts")
    out = {}
    for p in WORLD_SIZES:
        pyg_sar.partition_graph(hc.make_hetero(), p, root / f"p{p}", method="metis")
        pyg_sar.partition_graph(hbc.mag_data(), p, root / f"mag{p}", method="metis")
        out[p] = run_on_ranks(f"{HERE / 'hetero_bases_cases.py'}:both", p, timeout=300,
                              kwargs=dict(cases=CASES, parts=str(root / f"p{p}"),
                                          partition_cases=PARTITION_CASES,
                                          mag_parts=str(root / f"mag{p}"),
                                          mag_cases=MAG_CASES))
    return out


def _check(results, world_size, which, key):
    for rank, res in enumerate(results[world_size]):
        got = res[which][key]
        worst = {k: v for k, v in got["errors"].items() if v > TOL}
        assert not worst, f"rank {rank} of {world_size}: errors above {TOL}: {worst}"
        assert any(k.startswith("grad:") and "edge_type_weight" in k for k in got["errors"])


@pytest.mark.parametrize("world_size", WORLD_SIZES)
@pytest.mark.parametrize("case", CASES, ids=lambda c: "/".join(c))
def test_hand_partition_matches_pyg(results, world_size, case):
    _check(results, world_size, "hand", "/".join(case))


@pytest.mark.parametrize("world_size", WORLD_SIZES)
@pytest.mark.parametrize("case", PARTITION_CASES, ids=lambda c: "/".join(c))
def test_partition_matches_pyg(results, world_size, case):
    _check(results, world_size, "partition", "/".join(case))


@pytest.mark.parametrize("world_size", WORLD_SIZES)
@pytest.mark.parametrize("case", MAG_CASES, ids=lambda c: "/".join(c))
def test_mag_like_partition_matches_pyg(results, world_size, case):
    _check(results, world_size, "mag", "/".join(case))


def test_self_loops_are_refused_naming_the_count():
    """A conv adding self-loops makes more messages than edges: refused as PyG's hook does."""
    from torch_geometric.nn import GCNConv

    import pyg_sar
    data = hc.make_hetero()
    torch.manual_seed(0)
    model = to_bases(hc.Homo(SAGEConv(8, 8), GCNConv(8, 5)), data.metadata()).double()
    with pytest.raises(ValueError, match="self-loops"):  # PyG's own refusal
        model(data.x_dict, data.edge_index_dict)
    dist = pyg_sar.convert(copy.deepcopy(model), pyg_sar.SARConfig(check_loss=False))
    part = hc.hand_partition(data, 1, 0)
    with pytest.raises(ValueError, match="self-loops"):
        dist(part.x_dict, part.edge_index_dict)


def test_attention_layers_are_refused_at_convert():
    """GAT's messages are computed by the engine's attention, not by its message: refused
    (before any call; PyG's own hook fails on GAT's per-head messages at the first call)."""
    from torch_geometric.nn import GATConv

    import pyg_sar
    from pyg_sar.nn.layers import UnsupportedLayerError
    data = hc.make_hetero()
    model = to_bases(hc.Homo(SAGEConv(8, 8), GATConv(8, 5, add_self_loops=False)),
                     data.metadata()).double()
    with pytest.raises(UnsupportedLayerError, match="GATConv.*to_hetero_with_bases"):
        pyg_sar.convert(model, pyg_sar.SARConfig(check_loss=False))


def test_missing_edge_type_is_refused_naming_it():
    import pyg_sar
    data = hc.make_hetero()
    torch.manual_seed(0)
    model = hbc.build("sage_mean", data.metadata())[0].double()
    with torch.no_grad():
        model(data.x_dict, data.edge_index_dict)
    pyg_sar.convert(model, pyg_sar.SARConfig(check_loss=False))
    part = hc.hand_partition(data, 1, 0)
    graphs = dict(part.edge_index_dict)
    del graphs[("inst", "employs", "author")]
    with pytest.raises(ValueError, match="employs"):
        model(part.x_dict, graphs)


def to_bases(homo, metadata):
    from torch_geometric.nn import to_hetero_with_bases
    return to_hetero_with_bases(homo, metadata, num_bases=2, in_channels={"x": 8})
