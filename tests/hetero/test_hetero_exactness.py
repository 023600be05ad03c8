"""Heterogeneous models (to_hetero, HeteroConv, HeteroDictLinear, HeteroLinear, batch norm per
node type) against single-process PyG on the whole HeteroData, P = 1 and 3, modes sar / sa /
halo, float64: every node type's output, every input and parameter gradient within 1e-10.

One launch per P runs every case (``hetero_cases.both``): every model in every mode on a
hand-built partition (random node order per type, contiguous ranges: the engine alone), and
every model once (the modes in turn) on the partition written by
``pyg_sar.partition_graph(HeteroData)`` and read by ``pyg_sar.load_partition``, and a few
models on a graph with a node type of 2 nodes (one rank of 3 holds none of it).
"""
from __future__ import annotations

from pathlib import Path

import pytest

from pyg_sar.testing import run_on_ranks
from tests.hetero import hetero_cases as hc

HERE = Path(__file__).resolve().parent

TOL = 1e-10
MODES = ("sar", "sa", "halo")
TO_HETERO_AGGRS = ("sum", "mean", "max")
HETERO_CONV_AGGRS = ("sum", "mean", "min", "max", "cat", "none")  # PyG's group(); none: stack
NAMES = ([f"to_hetero/{h}/{a}" for h in hc.HOMO for a in TO_HETERO_AGGRS]
         + [f"heteroconv/{a}" for a in HETERO_CONV_AGGRS] + ["heterolinear"])
# Every layer in every mode with the first aggregation across edge types; the other
# aggregations (local per destination node, whatever the mode) with the modes in turn.
CASES = [[name, mode] for name in NAMES for mode in MODES
         if name.endswith(("/sum", "heterolinear"))]
CASES += [[name, MODES[i % len(MODES)]] for i, name in enumerate(
    n for n in NAMES if not n.endswith(("/sum", "heterolinear")))]
# On the partitioner's partitions every model once, the modes in turn (the engine's modes are
# covered in full on the hand-built partitions; this checks what the partitioner writes).
PARTITION_CASES = [[name, MODES[i % len(MODES)]] for i, name in enumerate(NAMES)]
# A node type of 2 nodes: at P = 3 one rank holds none of it (empty blocks, zero-row
# sources and destinations, batch norm statistics without local rows).
SMALL_CASES = [["to_hetero/sage_bn/sum", "sar"], ["to_hetero/sage_max/sum", "sa"],
               ["to_hetero/gat/mean", "sa"], ["to_hetero/gin/sum", "sar"],
               ["to_hetero/graphconv/sum", "halo"], ["to_hetero/gine_gat_edge/max", "halo"],
               ["heteroconv/max", "halo"], ["heteroconv/none", "sar"], ["heterolinear", "sa"]]
WORLD_SIZES = (1, 3)


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    """Per P, one launch: every case on a hand-built partition and on the partition written by
    pyg_sar.partition_graph(HeteroData) (METIS on the homogeneous view, balanced per node
    type) and read by pyg_sar.load_partition."""
    import pyg_sar
    root = tmp_path_factory.mktemp("hetero_parts")
    out = {}
    for p in WORLD_SIZES:
        pyg_sar.partition_graph(hc.make_hetero(), p, root / f"p{p}", method="metis")
        out[p] = run_on_ranks(f"{HERE / 'hetero_cases.py'}:both", p, timeout=300,
                              kwargs=dict(cases=CASES, parts=str(root / f"p{p}"),
                                          partition_cases=PARTITION_CASES,
                                          small_cases=SMALL_CASES))
    return out


@pytest.fixture(scope="module")
def hand_results(results):
    return {p: [r["hand"] for r in res] for p, res in results.items()}


@pytest.fixture(scope="module")
def partition_results(results):
    return {p: [r["partition"] for r in res] for p, res in results.items()}


def _check(results, world_size, key):
    for rank, res in enumerate(results[world_size]):
        got = res[key]
        assert "error" not in got, f"rank {rank} of {world_size}: {got.get('error')}"
        worst = {k: v for k, v in got["errors"].items() if v > TOL}
        assert not worst, f"rank {rank} of {world_size}: errors above {TOL}: {worst}"


@pytest.mark.parametrize("world_size", WORLD_SIZES)
@pytest.mark.parametrize("case", CASES, ids=lambda c: "/".join(c))
def test_hand_partition_matches_pyg(hand_results, world_size, case):
    _check(hand_results, world_size, "/".join(case))


@pytest.mark.parametrize("world_size", WORLD_SIZES)
@pytest.mark.parametrize("case", PARTITION_CASES, ids=lambda c: "/".join(c))
def test_partition_matches_pyg(partition_results, world_size, case):
    _check(partition_results, world_size, "/".join(case))


@pytest.fixture(scope="module")
def small_type_results(results):
    return {p: [r["small_type"] for r in res] for p, res in results.items()}


@pytest.mark.parametrize("world_size", WORLD_SIZES)
@pytest.mark.parametrize("case", SMALL_CASES, ids=lambda c: "/".join(c))
def test_rank_without_nodes_of_a_type_matches_pyg(small_type_results, world_size, case):
    _check(small_type_results, world_size, "/".join(case))


@pytest.mark.parametrize("world_size", WORLD_SIZES)
@pytest.mark.parametrize("which", ("hand", "partition"))
def test_sar_keeps_no_remote_rows_per_edge_type(hand_results, partition_results, world_size,
                                                which):
    """SA keeps exactly every edge type's fetched rows for backward; SAR keeps none."""
    results = hand_results if which == "hand" else partition_results
    for rank, res in enumerate(results[world_size]):
        saved = res["saved_bytes"]
        assert saved["sa"] - saved["sar"] == saved["fetched_bytes"], (rank, saved)
        if world_size > 1:
            assert saved["fetched_bytes"] > 0, (rank, saved)


@pytest.mark.parametrize("world_size", WORLD_SIZES)
@pytest.mark.parametrize("which", ("hand", "partition"))
def test_sar_replays_attention_dropout_exactly(hand_results, partition_results, world_size,
                                               which):
    results = hand_results if which == "hand" else partition_results
    for rank, res in enumerate(results[world_size]):
        for path, got in res["rng_replay"].items():
            assert got["grads_nonzero"], (rank, path, "gradients vanished")
            assert got["max_abs_diff"] <= 1e-12, (rank, path, got)
