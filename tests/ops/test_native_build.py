"""The native library is built where CI says it must be, with the contracted schemas."""
from __future__ import annotations

import os

import pytest
import torch

from pyg_sar.ops import native_available
from pyg_sar.ops._native import REQUIRE_NATIVE_ENV, _load


@pytest.mark.skipif(os.getenv(REQUIRE_NATIVE_ENV, "0") != "1",
                    reason=f"runs when {REQUIRE_NATIVE_ENV}=1 (the default in tests/conftest.py)")
def test_native_library_is_built_when_required():
    assert native_available(), f"pyg_sar._C failed to load: {_load()}"


@pytest.mark.skipif(not native_available(), reason="needs the native library pyg_sar._C")
def test_schemas_match_the_contract():
    fwd = str(torch.ops.pyg_sar.gather_aggregate.default._schema)
    bwd = str(torch.ops.pyg_sar.gather_aggregate_backward.default._schema)
    assert fwd == ("pyg_sar::gather_aggregate(Tensor rowptr, Tensor col, Tensor x_src, "
                   "Tensor? weight, str reduce) -> (Tensor out, Tensor arg)")
    assert bwd == ("pyg_sar::gather_aggregate_backward(Tensor grad_out, Tensor rowptr, "
                   "Tensor col, Tensor? x_src, Tensor? weight, Tensor arg, str reduce, "
                   "int num_src, bool weight_requires_grad, ScalarType? x_dtype=None) -> "
                   "(Tensor grad_x_src, Tensor grad_weight)")
    assert torch.ops.pyg_sar.gather_aggregate.default.has_kernel_for_dispatch_key(
        torch.DispatchKey.CPU)


@pytest.mark.skipif(not native_available(), reason="needs the native library pyg_sar._C")
def test_every_op_is_registered_for_cpu_and_all_or_none_for_cuda():
    """Every family registers its CPU kernels, and its CUDA kernels exactly when the build has
    CUDA (never in a torch without CUDA): no op is left out of a backend's registration."""
    from pyg_sar.ops._fake import FAKES

    composite = {"gat_transpose", "gat_dropout_mask"}  # one kernel for every backend
    cpu_only = {"bulk_ladies_weights", "bulk_relabel"}  # the reference runs on CUDA tensors
    cuda_build = torch.ops.pyg_sar.gather_aggregate.default.has_kernel_for_dispatch_key(
        torch.DispatchKey.CUDA)
    assert not cuda_build or torch.version.cuda is not None
    for name in FAKES:
        op = getattr(torch.ops.pyg_sar, name).default
        if name in composite:
            assert op.has_kernel_for_dispatch_key(torch.DispatchKey.CompositeExplicitAutograd)
            continue
        assert op.has_kernel_for_dispatch_key(torch.DispatchKey.CPU), name
        cuda = op.has_kernel_for_dispatch_key(torch.DispatchKey.CUDA)
        assert cuda == (cuda_build and name not in cpu_only), name
