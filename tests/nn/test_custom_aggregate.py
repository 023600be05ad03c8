"""Layers pyg_sar runs through an adapter of its propagate: ARMAConv (its stacks propagated
side by side in the channels), EGConv and FastRGCNConv (their aggregations as combine rules,
:mod:`pyg_sar.nn.conversion.custom_aggregate`), exact against plain PyG on the whole graph: every
EGConv aggregator alone and together, with and without self-loops (nodes without in-edges), max /
min with ties; FastRGCNConv mean / add / sum, bases, blocks, featureless (x=None), with relations
absent at some nodes.

P = 1 (in this process) and P = 3 (one launch, a random partition), modes sar / sa / halo,
float64: each rank's output rows, every input gradient and every parameter gradient (summed
over ranks) within 1e-10 relative (``tests/nn/custom_aggregate_cases.py``). ARMAConv runs
PyG's own forward; its propagate takes the ``[num_stacks, num_nodes, channels]`` stack as
channels, also for a trusted subclass's own forward; another layer's stacked propagate is
refused by the engine with the reason.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from tests.nn import custom_aggregate_cases as cac

HERE = Path(__file__).resolve().parent

TOL = 1e-10
CASES = list(cac.recipes())


@pytest.fixture(scope="module")
def results(tmp_path_factory) -> dict[int, list[dict]]:
    """P -> the ranks' results (P = 1 in this process, P = 3 in one launch)."""
    import pyg_sar
    from pyg_sar.testing import run_on_ranks
    from pyg_sar.testing.zoo_rank import make_graph
    root = tmp_path_factory.mktemp("custom_aggregate")
    data = make_graph()
    pyg_sar.partition_graph(data, 1, root / "p1", method="random")
    pyg_sar.partition_graph(data, 3, root / "p3", method="random", seed=3)
    return {1: [cac.single(str(root / "p1"))],
            3: run_on_ranks(f"{HERE / 'custom_aggregate_cases.py'}:ranks", 3, timeout=300,
                            kwargs=dict(parts=str(root / "p3")))}


@pytest.mark.parametrize("world_size", (1, 3))
@pytest.mark.parametrize("mode", cac.MODES)
@pytest.mark.parametrize("case", CASES)
def test_matches_pyg(results, case, mode, world_size):
    for rank, res in enumerate(results[world_size]):
        cell = res[f"{case}/{mode}"]
        assert cell["status"] == "ran", f"rank {rank} of {world_size}: {cell}"
        errors = cell["errors"]
        assert "out" in errors and any(k.startswith("grad:") for k in errors), errors
        worst = {k: v for k, v in errors.items() if v > TOL}
        assert not worst, f"rank {rank} of {world_size}: errors above {TOL}: {worst}"


def test_partition_is_split(results):
    rows = [r["rows"] for r in results[3]]
    assert sum(rows) == results[1][0]["rows"] and min(rows) > 0, rows


@pytest.mark.parametrize("world_size", (1, 3))
def test_trusted_arma_subclass_with_stacked_propagate_runs(results, world_size):
    """ARMAConv's adapter runs any ``[num_stacks, num_nodes, channels]`` propagate of the class
    as channels: a trusted subclass with its own forward equals itself in one process."""
    for rank, res in enumerate(results[world_size]):
        err = res["refusals"]["stacked_arma"]
        assert err <= TOL, (rank, err)


@pytest.mark.parametrize("world_size", (1, 3))
def test_stacked_propagate_of_another_layer_refused(results, world_size):
    """The engine's row check names the layer, the tensor's shape, its node dimension and
    what is supported (not a shape error from deep inside the engine)."""
    for rank, res in enumerate(results[world_size]):
        msg = res["refusals"]["stacked_gcn"]
        assert msg is not None and msg.startswith("UnsupportedLayerError"), (rank, msg)
        assert "StackedGCN propagates argument 'x' of shape (2, " in msg, msg
        assert "with its nodes in dimension 1 (node_dim=-2)" in msg, msg
        assert "trusted_layers=...) cannot make it run" in msg, msg
        assert "ARMAConv (pyg_sar propagates its stacks as channels)" in msg, msg


@pytest.mark.parametrize("world_size", (1, 3))
def test_graph_has_the_hard_cases(results, world_size):
    """Every rank's part has nodes with in-edges of some relations but not of others
    (FastRGCNConv's per-relation mean) and, at P = 1, the zoo graph's 4 nodes without
    in-edges (empty rows of EGConv without self-loops)."""
    facts = [r["facts"] for r in results[world_size]]
    assert all(f["absent_relations"] > 0 for f in facts), facts
    assert sum(f["empty_rows"] for f in facts) == 4, facts


@pytest.mark.parametrize("world_size", (1, 3))
def test_fast_rgcn_other_aggregation_refused(results, world_size):
    for res in results[world_size]:
        msg = res["refusals"]["fast_rgcn_max"]
        assert msg is not None and "(FastRGCNConv)" in msg, msg
        assert "aggregates with add, sum or mean only" in msg, msg
