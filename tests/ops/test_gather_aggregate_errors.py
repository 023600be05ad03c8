"""Bad arguments of gather_aggregate: the native op and the reference raise the same errors."""
from __future__ import annotations

import pytest
import torch

from pyg_sar.ops import gather_aggregate_reference, native_available


def _native(rowptr, col, x, w, reduce):
    return torch.ops.pyg_sar.gather_aggregate(rowptr, col, x, w, reduce)


IMPLS = [
    pytest.param(_native, id="native", marks=pytest.mark.skipif(
        not native_available(), reason="needs the native library pyg_sar._C")),
    pytest.param(gather_aggregate_reference, id="reference"),
]

ROWPTR = torch.tensor([0, 2, 3])
COL = torch.tensor([0, 1, 1])
X = torch.randn(2, 4)


@pytest.mark.parametrize("impl", IMPLS)
def test_bad_reduce(impl):
    with pytest.raises(ValueError, match=r"gather_aggregate: reduce must be one of .*got 'prod'"):
        impl(ROWPTR, COL, X, None, "prod")


@pytest.mark.parametrize("impl", IMPLS)
def test_col_out_of_range(impl):
    with pytest.raises(ValueError, match=r"col values must lie in \[0, x_src.size\(0\)\) = "
                                         r"\[0, 2\) \(got min 0, max 5\)"):
        impl(ROWPTR, torch.tensor([0, 5, 1]), X, None, "sum")
    with pytest.raises(ValueError, match=r"got min -1, max 1"):
        impl(ROWPTR, torch.tensor([0, -1, 1]), X, None, "max")


@pytest.mark.parametrize("impl", IMPLS)
def test_wrong_rowptr_size(impl):
    # rowptr of 2 entries claims 1 row with 2 edges, but col has 3
    with pytest.raises(ValueError, match=r"rowptr\[-1\] must equal the number of edges "
                                         r"col.numel\(\) = 3 \(got 2"):
        impl(torch.tensor([0, 2]), COL, X, None, "sum")


@pytest.mark.parametrize("impl", IMPLS)
def test_rowptr_not_monotone_or_not_starting_at_zero(impl):
    with pytest.raises(ValueError, match=r"non-decreasing \(got rowptr\[1\] = 3 > rowptr\[2\] = 1"):
        impl(torch.tensor([0, 3, 1, 3]), COL, X, None, "sum")
    with pytest.raises(ValueError, match=r"rowptr\[0\] must be 0 \(got 1\)"):
        impl(torch.tensor([1, 2, 3]), COL, X, None, "sum")


@pytest.mark.parametrize("impl", IMPLS)
def test_dtype_mismatch(impl):
    w = torch.ones(3, dtype=torch.float64)
    with pytest.raises(ValueError, match=r"weight and x_src must have the same dtype "
                                         r"\(got float64 and float32\)"):
        impl(ROWPTR, COL, X, w, "sum")
    with pytest.raises(ValueError, match=r"weight must have x_src's dtype bfloat16 or its "
                                         r"accumulator dtype float32 \(got float64\)"):
        impl(ROWPTR, COL, X.bfloat16(), w, "sum")
    with pytest.raises(RuntimeError, match=r"gather_aggregate: x_src has dtype int32, which the "
                                           r"native kernels do not support \(supported: "
                                           r"float32, float64, bfloat16, float16\)"):
        impl(ROWPTR, COL, X.to(torch.int32), None, "sum")
    with pytest.raises(RuntimeError, match=r"'col'.*Long"):
        impl(ROWPTR, COL.to(torch.int32), X, None, "sum")


@pytest.mark.parametrize("impl", IMPLS)
def test_weight_shape(impl):
    with pytest.raises(ValueError, match=r"weight must have shape \[E\] = \[3\] \(got \[2\]\)"):
        impl(ROWPTR, COL, X, torch.ones(2), "sum")


@pytest.mark.skipif(not native_available(), reason="needs the native library pyg_sar._C")
def test_backward_argument_errors():
    bwd = torch.ops.pyg_sar.gather_aggregate_backward
    grad = torch.randn(2, 4)
    arg = torch.zeros(2, 4, dtype=torch.int64)
    with pytest.raises(ValueError, match="x_src is required when weight_requires_grad is true"):
        bwd(grad, ROWPTR, COL, None, torch.ones(3), arg, "sum", 2, True)
    with pytest.raises(ValueError, match=r"reduce='max' needs arg as int64 \[N, F\] = \[2, 4\]"):
        bwd(grad, ROWPTR, COL, None, None, torch.empty(0, dtype=torch.int64), "max", 2, False)
    with pytest.raises(ValueError, match=r"grad_out must have N = rowptr.numel\(\) - 1 = 2 rows"):
        bwd(torch.randn(3, 4), ROWPTR, COL, None, None, arg, "sum", 2, False)
    with pytest.raises(ValueError, match=r"col values must lie in \[0, num_src\) = \[0, 1\)"):
        bwd(grad, ROWPTR, COL, None, None, arg, "sum", 1, False)
    with pytest.raises(ValueError, match=r"gather_aggregate_backward: reduce must be one of"):
        bwd(grad, ROWPTR, COL, None, None, arg, "avg", 2, False)
