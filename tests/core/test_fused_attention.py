"""The fused attention kernels inside the engine: GATConv/GATv2Conv equal single-process PyG on
P = 1..4 (outputs and every gradient), with the kernels (checked to run) and with the torch
fallback; attention dropout is the same for every P and replays exactly in SAR mode."""
from __future__ import annotations

import pytest
import torch

from pyg_sar.ops import native_available

pytestmark = pytest.mark.skipif(not native_available(),
                                reason="needs the native library pyg_sar._C (pip install -e .)")

WORLD_SIZES = (1, 2, 3, 4)
TOL = {"float64": 1e-10, "float32": 1e-5}
GAT_LAYERS = ("gat", "gat_edge_no_loops", "gat_edge_fill", "gatv2_edge", "basic_gat_bn_jk",
              "basic_gatv2")
CASES = [[layer, mode, "float64", 1, kernels] for layer in GAT_LAYERS
         for mode in ("sar", "sa") for kernels in (True, False)]
CASES += [["gat_edge_no_loops", "sar", "float32", 1, True],
          ["gatv2_edge", "sar", "float32", 1, True],
          ["gat", "sar", "float64", 0, True], ["gatv2_edge", "sar", "float64", 2, True]]


def _key(case) -> str:
    layer, mode, dtype, depth, kernels = case
    return f"{layer}/{mode}/{dtype}/d{depth}/k{int(kernels)}"


@pytest.fixture(scope="module")
def results(engine_launches):
    """P -> the ranks' fused-attention results: one launch per P runs these cases after the
    engine suite of test_engine_exactness.py on the same partition (tests/core/conftest.py)."""
    return {p: [res["fused"] for res in ranks] for p, ranks in engine_launches.items()}


@pytest.mark.parametrize("world_size", WORLD_SIZES)
@pytest.mark.parametrize("case", CASES, ids=_key)
def test_matches_single_process_pyg(results, world_size, case):
    tol = TOL[case[2]]
    for rank, res in enumerate(results[world_size]):
        got = res[_key(case)]
        worst = {k: v for k, v in got["errors"].items() if v > tol}
        assert not worst, f"rank {rank} of {world_size}: errors above {tol}: {worst}"
        if case[4]:  # kernels on: every layer call ran the fused kernel
            assert got["kernel_calls"] > 0, f"rank {rank}: fused kernels were not used"
        else:
            assert got["kernel_calls"] == 0, f"rank {rank}: use_kernels=False used the kernels"


def _gathered(results_p: list, name: str, mode: str, field: str) -> torch.Tensor:
    rows = {}
    for res in results_p:
        got = res[f"dropout/{name}/{mode}"]
        for nid, row in zip(got["node_ids"], got[field]):
            rows[nid] = row
    return torch.tensor([rows[i] for i in sorted(rows)], dtype=torch.float64)


@pytest.mark.parametrize("name", ["gat", "gatv2"])
def test_dropout_mask_does_not_depend_on_world_size(results, name):
    ref_out = _gathered(results[1], name, "sar", "out")
    ref_grad = _gathered(results[1], name, "sar", "x_grad")
    ref_par = results[1][0][f"dropout/{name}/sar"]["param_grads"]
    assert ref_out.abs().sum() > 0
    for p in WORLD_SIZES:
        for mode in ("sar", "sa"):
            out = _gathered(results[p], name, mode, "out")
            torch.testing.assert_close(out, ref_out, rtol=1e-10, atol=1e-12)
            grad = _gathered(results[p], name, mode, "x_grad")
            torch.testing.assert_close(grad, ref_grad, rtol=1e-10, atol=1e-12)
            for rank, res in enumerate(results[p]):
                for a, b in zip(res[f"dropout/{name}/{mode}"]["param_grads"], ref_par):
                    torch.testing.assert_close(torch.tensor(a), torch.tensor(b), rtol=1e-9,
                                               atol=1e-11, msg=f"P={p} rank {rank} {mode}")


def test_dropout_actually_drops(results):
    """The mask is active: train-mode outputs differ from eval mode; gradients stay finite."""
    for p in WORLD_SIZES:
        for res in results[p]:
            for name in ("gat", "gatv2"):
                got = res[f"dropout/{name}/sar"]
                assert got["train_vs_eval"] > 1e-3, (p, name, got["train_vs_eval"])
                assert torch.isfinite(torch.tensor(got["x_grad"])).all()
