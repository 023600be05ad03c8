"""The engine on each device (P = 1, in this process): GCN, SAGE (mean and max), GIN, GAT and
GATv2 (fused attention kernels), batch norm, equal to single-process PyG on the same device
(outputs, input gradients and every parameter gradient), float64 where the device has it and
float32; the native kernels are checked to have run on that device."""
from __future__ import annotations

import pytest
import torch

import pyg_sar
from pyg_sar.testing.devices import require_native, supports_float64, with_devices
from tests.core import device_cases as dc
from tests.core import engine_cases as ec

pytestmark = pytest.mark.device


@pytest.fixture(scope="module")
def parts(tmp_path_factory):
    root = tmp_path_factory.mktemp("engine_device")
    pyg_sar.partition_graph(ec.make_graph(), 1, root / "g1", method="random", seed=1)
    return root / "g1"


@with_devices
@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize("layer", dc.LAYERS)
def test_matches_single_process_pyg_on_the_device(parts, device, layer, dtype):
    dev = require_native(device)
    if dtype == "float64" and not supports_float64(dev):
        pytest.skip(f"{dev.type} has no float64")
    part = pyg_sar.load_partition(parts, 0)
    got = dc.device_case(part, ec.make_graph(), layer, getattr(torch, dtype), dev)
    tol = dc.TOL[dtype]
    worst = {k: v for k, v in got["errors"].items() if v > tol}
    assert not worst, f"{layer} {dtype} on {dev}: errors above {tol}: {worst}"
    assert got["out_device"] == dev.type
    if layer in dc.NATIVE:
        op = dc.NATIVE[layer]
        assert got["native"].get(f"{op}@{dev.type}", 0) > 0, \
            f"{layer}: the native {op} did not run on {dev.type} (calls: {got['native']})"
    elsewhere = {k: n for k, n in got["native"].items() if not k.endswith(f"@{dev.type}")}
    assert not elsewhere, f"native ops ran off the device: {elsewhere}"
