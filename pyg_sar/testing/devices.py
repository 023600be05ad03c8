"""Device parametrisation for tests, in the manner of ``torch_geometric.testing``'s
``withDevice`` / ``onlyCUDA``: CPU always, CUDA where a GPU and a CUDA build are present, and a
skip that says what is missing otherwise.

    from pyg_sar.testing.devices import DEVICES, only_cuda, with_devices

    @with_devices
    def test_kernel(device): ...          # runs once per entry of DEVICES

    @only_cuda
    def test_cuda_only(): ...

``PYG_SAR_TEST_DEVICES`` (comma-separated, e.g. ``cuda`` or ``cpu,cuda``) narrows the set; a
device named there that is not available makes the test fail instead of skipping, so the GPU
check (``bash .ci/gpu``) cannot pass by skipping everything.
"""
from __future__ import annotations

import os
from typing import Optional

import pytest
import torch


def cuda_unavailable_reason() -> Optional[str]:
    """Why CUDA tests cannot run here (``None``: they can)."""
    if torch.version.cuda is None:
        return "needs a CUDA build of torch (this torch is CPU-only)"
    if not torch.cuda.is_available():
        return "needs a CUDA GPU (torch.cuda.is_available() is False)"
    return None


def native_cuda_unavailable_reason() -> Optional[str]:
    """Why the native CUDA kernels cannot run here (``None``: they can)."""
    reason = cuda_unavailable_reason()
    if reason is not None:
        return reason
    from pyg_sar.ops import native_available
    if not native_available():
        return "needs pyg_sar._C built (bash .ci/gpu builds it with CUDA)"
    if not torch._C._dispatch_has_kernel_for_dispatch_key("pyg_sar::gather_aggregate", "CUDA"):
        return "needs pyg_sar._C built with CUDA kernels (bash .ci/gpu)"
    return None


def _requested() -> Optional[list[str]]:
    raw = os.environ.get("PYG_SAR_TEST_DEVICES", "").strip()
    if not raw:
        return None
    names = [d.strip() for d in raw.split(",") if d.strip()]
    bad = [d for d in names if d not in ("cpu", "cuda")]
    if bad:
        raise ValueError(f"PYG_SAR_TEST_DEVICES: unknown device(s) {bad} (expected cpu, cuda)")
    return names


def _device_params() -> list:
    requested = _requested()
    params = []
    for name in ("cpu", "cuda"):
        if requested is not None and name not in requested:
            continue
        reason = None if name == "cpu" else cuda_unavailable_reason()
        if reason is None or requested is not None:
            # named explicitly: an unavailable device fails in the test, never skips
            params.append(pytest.param(name, id=name))
        else:
            params.append(pytest.param(name, id=name, marks=pytest.mark.skip(reason=reason)))
    return params


DEVICES = _device_params()
"""``pytest.param`` per device: ``cpu``, and ``cuda`` (skipped with the reason when absent)."""

with_devices = pytest.mark.parametrize("device", DEVICES)
"""Run the test once per device of :data:`DEVICES`; the test takes a ``device`` argument."""

only_cuda = pytest.mark.skipif(cuda_unavailable_reason() is not None,
                               reason=cuda_unavailable_reason() or "")
"""Skip the test (with the reason) unless a CUDA GPU is present."""


def require_device(device: str) -> torch.device:
    """``torch.device(device)``, failing with the reason when it cannot be used here."""
    if device == "cuda":
        reason = cuda_unavailable_reason()
        if reason is not None:
            pytest.fail(f"device cuda was requested but is unavailable: {reason}")
    return torch.device(device)
