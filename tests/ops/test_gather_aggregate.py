"""torch.ops.pyg_sar.gather_aggregate (+ backward) against the pure-torch reference."""
from __future__ import annotations

import warnings

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from pyg_sar.ops import (
    GatherAggregate,
    _native,
    gather_aggregate,
    gather_aggregate_reference,
    native_available,
)

requires_native = pytest.mark.skipif(
    not native_available(),
    reason="needs the native library pyg_sar._C (pip install -e . --no-build-isolation)")

REDUCES = ["sum", "mean", "max", "min"]
DTYPES = [torch.float32, torch.float64]


def random_csr(num_dst: int, num_src: int, max_deg: int, seed: int, empty_frac: float = 0.2,
               duplicates: bool = True) -> tuple[torch.Tensor, torch.Tensor]:
    """A random CSR graph with empty rows and (optionally) repeated columns within a row."""
    g = torch.Generator().manual_seed(seed)
    deg = torch.randint(0, max_deg + 1, (num_dst,), generator=g)
    deg[torch.rand(num_dst, generator=g) < empty_frac] = 0
    if num_src == 0:
        deg.zero_()
    rowptr = torch.zeros(num_dst + 1, dtype=torch.int64)
    rowptr[1:] = deg.cumsum(0)
    num_edges = int(rowptr[-1])
    if duplicates:
        # draw from a small pool per row so that repeats are frequent
        col = torch.randint(0, max(num_src, 1), (num_edges,), generator=g)
        col[::3] = col[::3] % max(1, min(num_src, 4))
    else:
        col = torch.cat([torch.randperm(num_src, generator=g)[:d] for d in deg.tolist()]
                        or [torch.empty(0, dtype=torch.int64)])
        rowptr[1:] = torch.minimum(deg, torch.tensor(num_src)).cumsum(0)
    return rowptr, col


def expected_grads(rowptr, col, x, weight, arg, grad_out, reduce):
    """Gradients with every max/min element routed to the edge that ``arg`` names."""
    num_dst = rowptr.numel() - 1
    row = torch.repeat_interleave(torch.arange(num_dst), rowptr.diff())
    w = torch.ones(col.numel(), dtype=x.dtype) if weight is None else weight
    g = grad_out[row]
    if reduce in ("max", "min"):
        mask = (arg[row] == torch.arange(col.numel()).view(-1, 1)).to(x.dtype)
    else:
        mask = torch.ones_like(g)
        if reduce == "mean":
            mask = mask / rowptr.diff()[row].clamp(min=1).to(x.dtype).view(-1, 1)
    grad_x = torch.zeros_like(x).index_add_(0, col, mask * w.view(-1, 1) * g)
    grad_w = (mask * x[col] * g).sum(1)
    return grad_x, grad_w


@requires_native
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("reduce", REDUCES)
@pytest.mark.parametrize("weighted", [False, True])
def test_forward_matches_reference(dtype, reduce, weighted):
    rowptr, col = random_csr(60, 25, 9, seed=1)
    g = torch.Generator().manual_seed(2)
    x = torch.randn(25, 17, generator=g, dtype=dtype)
    w = torch.rand(col.numel(), generator=g, dtype=dtype) + 0.5 if weighted else None

    out, arg = torch.ops.pyg_sar.gather_aggregate(rowptr, col, x, w, reduce)
    ref, ref_arg = gather_aggregate_reference(rowptr, col, x, w, reduce, return_arg=True)
    tol = dict(rtol=1e-5, atol=1e-6) if dtype == torch.float32 else dict(rtol=1e-12, atol=1e-12)
    assert out.dtype == dtype and out.shape == (60, 17)
    torch.testing.assert_close(out, ref, **tol)
    empty = rowptr.diff() == 0
    assert empty.any() and (out[empty] == 0).all()
    if reduce in ("max", "min"):
        # unweighted duplicate columns tie exactly: the first edge must win
        assert torch.equal(arg, ref_arg)
        assert (arg[empty] == -1).all()
    else:
        assert arg.numel() == 0 and arg.dtype == torch.int64


@requires_native
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("reduce", REDUCES)
@pytest.mark.parametrize("weighted", [False, True])
def test_backward_matches_expected(dtype, reduce, weighted):
    rowptr, col = random_csr(40, 30, 8, seed=3)
    g = torch.Generator().manual_seed(4)
    x = torch.randn(30, 12, generator=g, dtype=dtype)
    w = torch.randn(col.numel(), generator=g, dtype=dtype) if weighted else None
    grad_out = torch.randn(40, 12, generator=g, dtype=dtype)
    _, arg = torch.ops.pyg_sar.gather_aggregate(rowptr, col, x, w, reduce)

    grad_x, grad_w = torch.ops.pyg_sar.gather_aggregate_backward(
        grad_out, rowptr, col, x, w, arg, reduce, 30, weighted)
    exp_x, exp_w = expected_grads(rowptr, col, x, w, arg, grad_out, reduce)
    tol = dict(rtol=1e-5, atol=1e-5) if dtype == torch.float32 else dict(rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(grad_x, exp_x, **tol)
    if weighted:
        torch.testing.assert_close(grad_w, exp_w, **tol)
    else:
        assert grad_w.numel() == 0

    # without weight gradients x_src is not needed
    grad_x2, grad_w2 = torch.ops.pyg_sar.gather_aggregate_backward(
        grad_out, rowptr, col, None, w, arg, reduce, 30, False)
    assert torch.equal(grad_x2, grad_x) and grad_w2.numel() == 0


@requires_native
@pytest.mark.parametrize("reduce", REDUCES)
def test_autograd_matches_reference_autograd(reduce):
    # tie-free inputs (no repeated column in a row, continuous values): the reference's
    # scatter_reduce gradient is then the same as routing to the single winner
    rowptr, col = random_csr(50, 40, 6, seed=5, duplicates=False)
    g = torch.Generator().manual_seed(6)
    x = torch.randn(40, 8, generator=g, dtype=torch.float64)
    w = torch.rand(col.numel(), generator=g, dtype=torch.float64) + 0.1
    grad_out = torch.randn(50, 8, generator=g, dtype=torch.float64)

    grads = []
    for fn in (gather_aggregate, gather_aggregate_reference):
        xs, ws = x.clone().requires_grad_(), w.clone().requires_grad_()
        out = fn(rowptr, col, xs, ws, reduce)
        out.backward(grad_out)
        grads.append((out.detach(), xs.grad, ws.grad))
    for a, b in zip(*grads):
        torch.testing.assert_close(a, b, rtol=1e-12, atol=1e-12)


def _tie_free_inputs(seed: int):
    rowptr, col = random_csr(12, 10, 4, seed=seed, duplicates=False)
    g = torch.Generator().manual_seed(seed)
    # values on a coarse grid, far apart compared with gradcheck's eps: no winner flips
    x = (torch.randperm(10 * 3, generator=g).view(10, 3).to(torch.float64) - 15.0) / 4.0
    w = 1.0 + torch.randperm(col.numel(), generator=g).to(torch.float64) / (4 * col.numel())
    return rowptr, col, x, w


@requires_native
@pytest.mark.parametrize("reduce", REDUCES)
def test_gradcheck(reduce):
    rowptr, col, x, w = _tie_free_inputs(seed=7)
    x.requires_grad_()
    w.requires_grad_()
    assert torch.autograd.gradcheck(
        lambda x_, w_: GatherAggregate.apply(rowptr, col, x_, w_, reduce), (x, w))
    assert torch.autograd.gradcheck(
        lambda x_: GatherAggregate.apply(rowptr, col, x_, None, reduce), (x,))


@requires_native
def test_only_requested_gradients_and_no_saved_x():
    rowptr, col, x, w = _tie_free_inputs(seed=8)
    x.requires_grad_()
    saved = []
    with torch.autograd.graph.saved_tensors_hooks(lambda t: saved.append(t) or t, lambda t: t):
        out = gather_aggregate(rowptr, col, x, w, "sum")
    # x_src is saved only when the weights need a gradient
    assert not any(t is x for t in saved)
    out.sum().backward()
    assert x.grad is not None and w.grad is None


@requires_native
@pytest.mark.parametrize("reduce", REDUCES)
def test_deterministic_across_thread_counts(reduce):
    rowptr, col = random_csr(3000, 2000, 20, seed=9)
    g = torch.Generator().manual_seed(10)
    x = torch.randn(2000, 33, generator=g)
    w = torch.randn(col.numel(), generator=g)
    grad_out = torch.randn(3000, 33, generator=g)
    threads = torch.get_num_threads()
    results = []
    try:
        for n in (1, max(2, threads)):
            torch.set_num_threads(n)
            out, arg = torch.ops.pyg_sar.gather_aggregate(rowptr, col, x, w, reduce)
            gx, gw = torch.ops.pyg_sar.gather_aggregate_backward(
                grad_out, rowptr, col, x, w, arg, reduce, 2000, True)
            results.append((out, gx, gw))
    finally:
        torch.set_num_threads(threads)
    for a, b in zip(*results):
        assert torch.equal(a, b)


@requires_native
@pytest.mark.parametrize("reduce", REDUCES)
def test_degenerate_shapes(reduce):
    # no destinations, no edges, no sources, no features
    cases = [
        (torch.zeros(1, dtype=torch.int64), torch.empty(0, dtype=torch.int64), torch.randn(5, 3)),
        (torch.zeros(4, dtype=torch.int64), torch.empty(0, dtype=torch.int64), torch.randn(0, 3)),
        (torch.tensor([0, 2, 2]), torch.tensor([1, 0]), torch.randn(2, 0)),
    ]
    for rowptr, col, x in cases:
        out, arg = torch.ops.pyg_sar.gather_aggregate(rowptr, col, x, None, reduce)
        assert out.shape == (rowptr.numel() - 1, x.size(1))
        assert torch.equal(out, gather_aggregate_reference(rowptr, col, x, None, reduce))
        gx, _ = torch.ops.pyg_sar.gather_aggregate_backward(
            torch.ones_like(out), rowptr, col, None, None, arg, reduce, x.size(0), False)
        assert gx.shape == x.shape


@requires_native
def test_non_contiguous_inputs():
    rowptr, col = random_csr(20, 15, 5, seed=11)
    x = torch.randn(3, 15, dtype=torch.float64).t()  # [15, 3], not contiguous
    assert not x.is_contiguous()
    out = gather_aggregate(rowptr, col, x, None, "mean")
    torch.testing.assert_close(out, gather_aggregate_reference(rowptr, col, x.contiguous(), None,
                                                               "mean"))


@requires_native
def test_nan_propagates_in_max():
    rowptr, col = torch.tensor([0, 3]), torch.tensor([0, 1, 2])
    x = torch.tensor([[1.0], [float("nan")], [5.0]])
    out, arg = torch.ops.pyg_sar.gather_aggregate(rowptr, col, x, None, "max")
    assert out.isnan().all() and arg.tolist() == [[1]]


@requires_native
@settings(max_examples=40, deadline=None)
@given(num_dst=st.integers(0, 12), num_src=st.integers(1, 8), max_deg=st.integers(0, 6),
       feat=st.integers(1, 5), seed=st.integers(0, 2**16), reduce=st.sampled_from(REDUCES),
       weighted=st.booleans())
def test_property_random_graphs(num_dst, num_src, max_deg, feat, seed, reduce, weighted):
    rowptr, col = random_csr(num_dst, num_src, max_deg, seed=seed)
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(num_src, feat, generator=g, dtype=torch.float64)
    w = torch.randn(col.numel(), generator=g, dtype=torch.float64) if weighted else None
    out, arg = torch.ops.pyg_sar.gather_aggregate(rowptr, col, x, w, reduce)
    ref, ref_arg = gather_aggregate_reference(rowptr, col, x, w, reduce, return_arg=True)
    torch.testing.assert_close(out, ref, rtol=1e-12, atol=1e-12)
    assert torch.equal(arg, ref_arg)


def test_fallback_warns_once_and_matches_reference(monkeypatch):
    monkeypatch.setattr("pyg_sar.ops._gather_aggregate.has_kernel", lambda op, device: False)
    monkeypatch.delenv(_native.REQUIRE_NATIVE_ENV, raising=False)
    _native.warn_fallback.cache_clear()
    rowptr, col = random_csr(10, 6, 4, seed=12)
    x = torch.randn(6, 2, dtype=torch.float64, requires_grad=True)
    with pytest.warns(RuntimeWarning, match="pure-torch reference"):
        out = gather_aggregate(rowptr, col, x, None, "sum")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the second call must not warn again
        out2 = gather_aggregate(rowptr, col, x, None, "sum")
    assert torch.equal(out, out2)
    torch.testing.assert_close(out, gather_aggregate_reference(rowptr, col, x, None, "sum"))
    out.sum().backward()
    assert x.grad is not None
    _native.warn_fallback.cache_clear()


def test_fallback_refused_when_native_required(monkeypatch):
    monkeypatch.setattr("pyg_sar.ops._gather_aggregate.has_kernel", lambda op, device: False)
    monkeypatch.setenv(_native.REQUIRE_NATIVE_ENV, "1")
    _native.warn_fallback.cache_clear()
    rowptr, col = random_csr(4, 3, 2, seed=13)
    with pytest.raises(RuntimeError, match="PYG_SAR_REQUIRE_NATIVE is set"):
        gather_aggregate(rowptr, col, torch.randn(3, 2), None, "sum")
    _native.warn_fallback.cache_clear()
