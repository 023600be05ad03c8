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
                   "int num_src, bool weight_requires_grad) -> (Tensor grad_x_src, "
                   "Tensor grad_weight)")
    assert torch._C._dispatch_has_kernel_for_dispatch_key("pyg_sar::gather_aggregate", "CPU")
