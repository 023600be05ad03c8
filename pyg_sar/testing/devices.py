"""Device parametrisation for tests, in the manner of ``torch_geometric.testing``'s
``withDevice`` / ``onlyCUDA``: CPU always, CUDA where a GPU and a CUDA build are present, and a
skip that says what is missing otherwise.

    from pyg_sar.testing.devices import DEVICES, only_cuda, with_devices

    pytestmark = pytest.mark.device      # the GPU set that `bash .ci/gpu` runs

    @with_devices
    def test_kernel(device): ...          # runs once per entry of DEVICES

    @only_cuda
    def test_cuda_only(): ...

``PYG_SAR_TEST_DEVICES`` (comma-separated, e.g. ``cuda`` or ``cpu,cuda``) narrows the set; a
device named there that is not available makes the test fail instead of skipping, so the GPU
check (``bash .ci/gpu``) cannot pass by skipping everything. :data:`only_cuda` follows the same
rule: with ``cuda`` named there it never skips.
"""
from __future__ import annotations

import os
from typing import Optional

import pytest
import torch

DEVICES_ENV = "PYG_SAR_TEST_DEVICES"

# The native operators that have a CUDA kernel in a CUDA build of pyg_sar._C (csrc/ops/cuda).
CUDA_OPS = ("gather_aggregate", "gather_aggregate_backward", "gat_block_forward_",
            "gat_block_backward", "gatv2_block_forward_", "gatv2_block_backward",
            "quantize_encode", "quantize_decode", "bulk_select_rows", "bulk_sample_uniform",
            "bulk_sample_weighted", "bulk_extract_columns")


def cuda_unavailable_reason() -> Optional[str]:
    """Why CUDA tests cannot run here (``None``: they can)."""
    if torch.version.cuda is None:
        return "needs a CUDA build of torch (this torch is CPU-only)"
    if not torch.cuda.is_available():
        return "needs a CUDA GPU (torch.cuda.is_available() is False)"
    return None


def missing_cuda_kernels(ops: tuple[str, ...] = CUDA_OPS) -> list[str]:
    """The operators of ``ops`` that ``torch.ops.pyg_sar`` lacks or has no CUDA kernel for.

    Asks the dispatcher through the public ``torch.ops`` objects
    (``OpOverload.has_kernel_for_dispatch_key``); needs no GPU, only the library loaded."""
    from pyg_sar.ops import native_available
    if not native_available():
        return list(ops)
    missing = []
    for name in ops:
        packet = getattr(torch.ops.pyg_sar, name, None)  # None: this build lacks the op
        if packet is None or not packet.default.has_kernel_for_dispatch_key(
                torch.DispatchKey.CUDA):
            missing.append(name)
    return missing


def native_cuda_unavailable_reason() -> Optional[str]:
    """Why the native CUDA kernels cannot run here (``None``: they can)."""
    reason = cuda_unavailable_reason()
    if reason is not None:
        return reason
    from pyg_sar.ops import native_available
    if not native_available():
        return "needs pyg_sar._C built (bash .ci/gpu builds it with CUDA)"
    missing = missing_cuda_kernels()
    if missing:
        return (f"needs pyg_sar._C built with CUDA kernels (bash .ci/gpu); no CUDA kernel for "
                f"{', '.join(missing)}")
    return None


def requested_devices() -> Optional[list[str]]:
    """The devices ``PYG_SAR_TEST_DEVICES`` names (``None`` when unset or empty)."""
    raw = os.environ.get(DEVICES_ENV, "").strip()
    if not raw:
        return None
    names = [d.strip() for d in raw.split(",") if d.strip()]
    bad = [d for d in names if d not in ("cpu", "cuda")]
    if bad:
        raise ValueError(f"{DEVICES_ENV}: unknown device(s) {bad} (expected cpu, cuda)")
    return names


def cuda_required() -> bool:
    """Whether ``PYG_SAR_TEST_DEVICES`` makes CUDA mandatory (it names ``cuda``)."""
    names = requested_devices()
    return names is not None and "cuda" in names


def _device_params() -> list:
    requested = requested_devices()
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

only_cuda = pytest.mark.skipif(cuda_unavailable_reason() is not None and not cuda_required(),
                               reason=cuda_unavailable_reason() or "")
"""Skip the test (with the reason) unless a CUDA GPU is present; never skips when
``PYG_SAR_TEST_DEVICES`` names ``cuda`` (the test then fails in :func:`require_device`)."""


def require_device(device: str) -> torch.device:
    """``torch.device(device)``, failing with the reason when it cannot be used here."""
    if torch.device(device).type == "cuda":
        reason = cuda_unavailable_reason()
        if reason is not None:
            pytest.fail(f"device cuda was requested but is unavailable: {reason}")
    return torch.device(device)


def require_native(device: str) -> torch.device:
    """Like :func:`require_device`, and for ``cuda`` also the CUDA kernels of pyg_sar._C."""
    dev = require_device(device)
    if dev.type == "cuda":
        reason = native_cuda_unavailable_reason()
        if reason is not None:
            pytest.fail(f"the native CUDA kernels were requested but are unavailable: {reason}")
    return dev


def supports_float64(device: str | torch.device) -> bool:
    """Whether ``device`` computes in float64 (CPU and CUDA do; MPS, for one, does not)."""
    return torch.device(device).type in ("cpu", "cuda")


class NativeOpCounter:
    """Counts the calls of ``torch.ops.pyg_sar.*`` inside a ``with`` block, by op and by the
    device type of their tensor arguments (a ``TorchDispatchMode``: it sees the ops below
    autograd, forward and backward). Shows that a test ran the native kernels on a device::

        with NativeOpCounter() as ops:
            model(x, graph).sum().backward()
        assert ops.on("cuda") > 0

    Attributes:
        calls: ``{(op name, device type): count}``, e.g. ``("gather_aggregate", "cuda")``.
    """

    def __init__(self) -> None:
        self.calls: dict[tuple[str, str], int] = {}
        self._mode = None

    def on(self, device_type: str, op: Optional[str] = None) -> int:
        """Calls on ``device_type`` (of ``op`` only, when given)."""
        return sum(n for (name, dev), n in self.calls.items()
                   if dev == device_type and (op is None or name == op))

    def __enter__(self) -> NativeOpCounter:
        # TorchDispatchMode lives in a private-looking module but is PyTorch's documented way to
        # see every operator call (the __torch_dispatch__ extension point); it is used here
        # only, in the test helpers.
        from torch.utils._python_dispatch import TorchDispatchMode
        from torch.utils._pytree import tree_leaves
        counter = self

        class _Mode(TorchDispatchMode):
            def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                kwargs = kwargs or {}
                name = func.name()
                if name.startswith("pyg_sar::"):
                    devices = sorted({a.device.type for a in tree_leaves((args, kwargs))
                                      if isinstance(a, torch.Tensor)})
                    key = (name.split("::", 1)[1], ",".join(devices))
                    counter.calls[key] = counter.calls.get(key, 0) + 1
                return func(*args, **kwargs)

        self._mode = _Mode()
        self._mode.__enter__()
        return self

    def __exit__(self, *exc) -> None:
        mode, self._mode = self._mode, None
        mode.__exit__(*exc)
