"""P = 2 ranks computing on one device: transport primitives on device tensors and engine
exactness (GCN, SAGE, GAT/GATv2 fused, batch norm) vs single-process PyG on the same device.

* gloo (spawned ranks) and MPI (mpiexec) with ``init(device=...)``: on CUDA both ranks take
  ``cuda:<local_rank % device_count>`` (one GPU is shared) and every GPU tensor crosses
  through host memory (the communicator's ``staging`` counts it); on the CPU nothing is staged.
* NCCL with one GPU per rank (skipped with the reason on fewer than 2 GPUs).

One launch per (device, backend) runs every case.
"""
from __future__ import annotations

import functools
import subprocess
import sys
from pathlib import Path

import pytest
import torch

import pyg_sar
from pyg_sar.testing import has_mpi, run_on_ranks
from pyg_sar.testing.devices import DEVICES, require_device, supports_float64
from tests.core import device_cases as dc
from tests.core import engine_cases as ec

HERE = Path(__file__).resolve().parent

P = 2
CONFIGS = [("spawn", "gloo"), ("mpiexec", "mpi"), ("spawn", "nccl")]

pytestmark = pytest.mark.device


@functools.cache
def _mpi_usable() -> bool:
    """mpiexec is found and mpi4py imports its MPI library (a GPU image may ship mpi4py
    without one)."""
    if not has_mpi():
        return False
    probe = subprocess.run([sys.executable, "-c", "from mpi4py import MPI"],
                           capture_output=True, timeout=120)
    return probe.returncode == 0


def _rows(src: int, dst: int, n: int) -> torch.Tensor:
    return torch.arange(n * 3, dtype=torch.float64).view(n, 3) + 100 * src + 10 * dst + 0.5


@pytest.fixture(scope="module", params=[(d, c) for d in DEVICES for c in CONFIGS],
                ids=lambda p: f"{p[0].values[0]}-{p[1][1]}")
def launch(request, tmp_path_factory):
    param, (launcher, backend) = request.param
    device = param.values[0]
    for mark in param.marks:  # the device's own skip (CUDA absent and not required)
        pytest.skip(mark.kwargs["reason"])
    dev = require_device(device)
    if backend == "nccl":
        if dev.type != "cuda":
            pytest.skip("nccl carries CUDA tensors only")
        if torch.cuda.device_count() < P:
            pytest.skip(f"nccl needs >= {P} GPUs (one per rank); this machine has "
                        f"{torch.cuda.device_count()}")
    if launcher == "mpiexec" and not _mpi_usable():
        pytest.skip("needs mpiexec and an mpi4py that loads its MPI library (the mpich wheel "
                    "or an MPI on PATH)")
    root = tmp_path_factory.mktemp(f"gpu_{device}_{backend}")
    pyg_sar.partition_graph(ec.make_graph(), P, root / "g", method="random", seed=P)
    dtypes = ["float64", "float32"] if supports_float64(dev) else ["float32"]
    results = run_on_ranks(f"{HERE / 'gpu_rank_cases.py'}:suite", P, launcher=launcher,
                           backend=backend, device=device, timeout=600, comm_timeout=120,
                           kwargs={"parts": str(root / "g"), "dtypes": dtypes})
    return dev, backend, results


def test_each_rank_computes_on_the_device(launch):
    dev, backend, results = launch
    for r, res in enumerate(results):
        assert res["rank"] == r and res["backend"] == backend
        if dev.type == "cuda":
            # spawned and MPI ranks are local ranks 0..P-1 of this host: round robin on GPUs
            assert res["device"] == f"cuda:{r % res['device_count']}", res["device"]
        else:
            assert res["device"] == "cpu"
        assert set(res["transport"]["devices"]) == {dev.type}


def test_transport_moves_device_tensors_exactly(launch):
    _, _, results = launch
    for r, res in enumerate(results):
        t = res["transport"]
        for dtype in ("float32", "float64", "bfloat16"):
            got = t[f"p2p/torch.{dtype}"]
            assert sorted(got) == [str(q) for q in range(P) if q != r]
            for q, values in got.items():
                want = torch.zeros(3, 4, dtype=torch.float64)
                want[:, 1:] = _rows(int(q), r, 3).to(getattr(torch, dtype)).double()
                assert values == want.tolist(), (r, q, dtype)
        assert t["all_reduce"] == sum(_rows(q, 0, 2) for q in range(P)).float().double().tolist()
        assert torch.allclose(torch.tensor(t["all_reduce_bf16"], dtype=torch.float64),
                              sum(_rows(q, 0, 2) for q in range(P)), rtol=1e-2)
        assert t["all_reduce_max"] == [P - 1, 0]
        assert t["broadcast"] == _rows(P - 1, 0, 2).tolist()
        want = torch.cat([_rows(q, r, r + 1) for q in range(P)]).float().double()
        assert t["all_to_all"] == want.tolist()


def test_staging_happens_exactly_where_the_backend_cannot_carry_the_device(launch):
    dev, backend, results = launch
    for res in results:
        copies, nbytes = res["staged_by_transport"]
        if dev.type == "cuda" and backend in ("gloo", "mpi"):
            assert copies > 0 and nbytes > 0, "GPU tensors were not staged through the host"
        else:  # CPU tensors on a host backend, or CUDA tensors on NCCL
            assert (copies, nbytes) == (0, 0), res["staged_by_transport"]
        if dev.type == "cuda" and backend in ("gloo", "mpi"):
            assert res["staged_total"][0] > copies, "the engine's exchanges were not staged"


@pytest.mark.parametrize("layer", ["gcn", "sage_mean", "gat", "gatv2_edge", "basic_sage_bn_jk"])
def test_engine_matches_single_process_pyg_on_the_device(launch, layer):
    dev, _, results = launch
    for r, res in enumerate(results):
        for key, got in res["engine"].items():
            if not key.startswith(f"{layer}/"):
                continue
            tol = dc.TOL[key.split("/")[1]]
            worst = {k: v for k, v in got["errors"].items() if v > tol}
            assert not worst, f"rank {r} {key} on {dev}: errors above {tol}: {worst}"
            assert got["out_device"] == dev.type
            if layer in dc.NATIVE:
                op = f"{dc.NATIVE[layer]}@{dev.type}"
                assert got["native"].get(op, 0) > 0, (r, key, got["native"])
