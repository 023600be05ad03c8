"""Exactness of the SAR engine against single-process PyG on P = 1..4 real processes.

One ``mpiexec`` launch per P runs every case (layers x modes x dtypes), shared with
test_fused_attention.py (tests/core/conftest.py); the tests below assert each case's
relative errors (outputs, input gradients, every parameter gradient).
"""
from __future__ import annotations

import pytest

from tests.core import engine_cases as ec

WORLD_SIZES = (1, 2, 3, 4)
MODES = ("sar", "sa", "halo")
TOL = {"float64": 1e-10, "float32": 1e-5}
STEPS = 20

CASES = [[layer, mode, "float64", 1, True] for layer in ec.LAYERS for mode in MODES]
CASES += [[layer, "sar", "float32", 1, True] for layer in ("gcn", "sage_mean", "gin")]
CASES += [["gcn", "sar", "float64", 0, True], ["sage_max_normalize", "sar", "float64", 2, True],
          ["gcn_weighted_improved", "sar", "float64", 2, False],
          ["sage_mean", "sa", "float64", 0, False]]


def _key(case) -> str:
    layer, mode, dtype, depth, kernels = case
    return f"{layer}/{mode}/{dtype}/d{depth}/k{int(kernels)}"


@pytest.fixture(scope="module")
def results(engine_launches):
    """P -> the ranks' engine results (the launch is shared with test_fused_attention.py:
    tests/core/conftest.py)."""
    return {p: [res["engine"] for res in ranks] for p, ranks in engine_launches.items()}


@pytest.mark.parametrize("world_size", WORLD_SIZES)
@pytest.mark.parametrize("case", CASES, ids=_key)
def test_matches_single_process_pyg(results, world_size, case):
    tol = TOL[case[2]]
    for rank, res in enumerate(results[world_size]):
        got = res[_key(case)]
        worst = {k: v for k, v in got["errors"].items() if v > tol}
        assert not worst, f"rank {rank} of {world_size}: errors above {tol}: {worst}"
        assert got["errors"]["out"] <= tol


@pytest.mark.parametrize("world_size", WORLD_SIZES)
def test_sar_replays_dropout_exactly(results, world_size):
    for rank, res in enumerate(results[world_size]):
        for layer, got in res["rng_replay"].items():
            assert got["grads_nonzero"], f"rank {rank} {layer}: gradients vanished"
            assert got["max_abs_diff"] <= 1e-12, (rank, layer, got)


@pytest.mark.parametrize("world_size", WORLD_SIZES)
def test_sar_keeps_no_remote_rows(results, world_size):
    """SA keeps exactly the fetched rows for backward; SAR keeps none of them (the block walk
    and destination chunks alike)."""
    for rank, res in enumerate(results[world_size]):
        saved = res["saved_bytes"]
        assert saved["sa"] - saved["sar"] == saved["halo_bytes"], (rank, saved)
        if world_size > 1:
            assert saved["halo_bytes"] > 0
        chunks = saved["chunks"]  # run by destination chunks: the same, chunk by chunk
        assert chunks["sa"] - chunks["sar"] == chunks["fetched_bytes"], (rank, chunks)
        if world_size > 1:
            assert chunks["fetched_bytes"] > 0


def test_training_curve_is_identical_for_every_world_size(results):
    reference = results[1][0]["training_curve"]
    assert len(reference) == STEPS and reference[-1] < reference[0]
    for p in WORLD_SIZES[1:]:
        for rank, res in enumerate(results[p]):
            curve = res["training_curve"]
            diff = max(abs(a - b) / abs(b) for a, b in zip(curve, reference))
            assert diff <= 1e-8, f"P={p} rank {rank}: loss curve differs by {diff:.3e}"
