"""The native kernels' dtype contract on every device: float32, float64, bfloat16 and float16
inputs, computed in float32 for the half types (at::opmath_type), against pure-torch references
computed in float64 from the same (exactly representable) inputs; on CUDA also the CUDA kernel
against its CPU twin. Errors for dtypes no kernel takes name the op, the dtype and the set.

Tolerances: a result the kernels return in float32 (gather_aggregate's raw ``out``, the attention
state and ``gat_finalize``'s ``out``) must be float32-accurate even for bfloat16 inputs, which is
what float32 accumulation guarantees; a result returned in a half dtype is rounded once to it
(bfloat16: 2^-8 relative, float16: 2^-11), so it is checked to 1e-2 / 2e-3 relative to the
result's scale.
"""
from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from pyg_sar.ops import (
    NATIVE_DTYPES,
    accumulate_dtype,
    gather_aggregate,
    native_available,
    quantize_decode,
    quantize_encode,
    supports_dtype,
)
from pyg_sar.ops._gat_attention import (
    attention_state,
    gat_attention,
    gat_dropout_mask,
    gatv2_attention,
)
from pyg_sar.testing.devices import require_native, with_devices
from tests.closeness import assert_close

pytestmark = [
    pytest.mark.device,
    pytest.mark.skipif(not native_available(),
                       reason="needs the native library pyg_sar._C (bash .ci/setup)"),
]
ops = torch.ops.pyg_sar if native_available() else None
DTYPES = [torch.float32, torch.float64, torch.bfloat16, torch.float16]
with_dtypes = pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: str(d).split(".")[-1])
LOW = (torch.bfloat16, torch.float16)
# relative tolerance of a result rounded once to the dtype / computed in the dtype's accumulator
ROUNDED = {torch.float32: 1e-5, torch.float64: 1e-12, torch.bfloat16: 1e-2, torch.float16: 2e-3}
ACCUMULATED = {torch.float32: 1e-5, torch.float64: 1e-12, torch.bfloat16: 1e-5,
               torch.float16: 1e-5}
SLOPE = 0.2


def close(got: torch.Tensor, want: torch.Tensor, rtol: float, what: str = "") -> None:
    """``got`` within ``rtol`` of the float64 ``want``, relative to ``want``'s scale."""
    scale = max(float(want.detach().abs().max()), 1.0) if want.numel() else 1.0
    assert_close(got, want, atol=rtol * scale, rtol=rtol, what=what)


def rand(*shape, dtype, seed, scale=1.0):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(*shape, generator=g, dtype=torch.float64) * scale).to(dtype)


def random_csr(num_dst: int, num_src: int, max_deg: int, seed: int):
    g = torch.Generator().manual_seed(seed)
    deg = torch.randint(0, max_deg + 1, (num_dst,), generator=g)
    deg[::7] = 0  # empty rows
    rowptr = torch.zeros(num_dst + 1, dtype=torch.int64)
    rowptr[1:] = deg.cumsum(0)
    col = torch.randint(0, num_src, (int(rowptr[-1]),), generator=g)
    return rowptr, col


def gather_reference(rowptr, col, x, w, reduce):
    """float64 out and the per-edge float64 messages (x and w exactly as given, widened)."""
    num_dst = rowptr.numel() - 1
    row = torch.repeat_interleave(torch.arange(num_dst), rowptr.diff())
    msg = x.double()[col]
    if w is not None:
        msg = msg * w.double().view(-1, 1)
    mode = {"sum": "sum", "mean": "mean", "max": "amax", "min": "amin"}[reduce]
    out = torch.zeros(num_dst, x.size(1), dtype=torch.float64)
    out = out.scatter_reduce(0, row.view(-1, 1).expand_as(msg), msg, mode, include_self=False)
    return out, row


# ---------------------------------------------------------------------------------------------
# gather_aggregate

@with_devices
@with_dtypes
@pytest.mark.parametrize("reduce", ["sum", "mean", "max", "min"])
@pytest.mark.parametrize("weighted", [None, "same", "float32"])
def test_gather_aggregate_forward(device, dtype, reduce, weighted):
    dev = require_native(device)
    if weighted == "float32" and dtype not in LOW:
        pytest.skip("a float32 weight with other rows is the same-dtype case")
    rowptr, col = random_csr(50, 30, 9, seed=1)
    x = rand(30, 19, dtype=dtype, seed=2)
    w = None
    if weighted is not None:
        w = (torch.rand(col.numel(), generator=torch.Generator().manual_seed(3),
                        dtype=torch.float64) + 0.5).to(dtype if weighted == "same"
                                                       else torch.float32)
    want, _ = gather_reference(rowptr, col, x, w, reduce)
    args = [t.to(dev) if t is not None else None for t in (rowptr, col, x, w)]
    out, arg = ops.gather_aggregate(*args, reduce)
    assert out.dtype == accumulate_dtype(dtype) and out.device.type == dev.type
    close(out, want, ACCUMULATED[dtype], "raw out")
    assert arg.dtype == torch.int64
    user = gather_aggregate(*args, reduce)
    assert user.dtype == dtype
    close(user, want, ROUNDED[dtype], "gather_aggregate()")
    if dev.type == "cuda":  # the CUDA kernel against its CPU twin
        cpu_out, cpu_arg = ops.gather_aggregate(rowptr, col, x, w, reduce)
        close(out, cpu_out, ACCUMULATED[dtype], "cuda vs cpu")
        if reduce in ("max", "min"):
            assert torch.equal(arg.cpu(), cpu_arg)


@with_devices
@with_dtypes
@pytest.mark.parametrize("reduce", ["sum", "mean", "max", "min"])
@pytest.mark.parametrize("weight_dtype", ["same", "float32"])
def test_gather_aggregate_backward(device, dtype, reduce, weight_dtype):
    dev = require_native(device)
    if weight_dtype == "float32" and dtype not in LOW:
        pytest.skip("a float32 weight with other rows is the same-dtype case")
    rowptr, col = random_csr(40, 25, 7, seed=4)
    wt = dtype if weight_dtype == "same" else torch.float32
    x64 = rand(25, 11, dtype=dtype, seed=5).double().requires_grad_()
    w64 = (rand(col.numel(), dtype=wt, seed=6) + 0.1).double().requires_grad_()
    want, row = gather_reference(rowptr, col, x64, w64, reduce)
    grad = rand(40, 11, dtype=dtype, seed=7)
    want_gx, want_gw = torch.autograd.grad(want, [x64, w64], grad.double())
    x = x64.detach().to(dtype).to(dev).requires_grad_()
    w = w64.detach().to(wt).to(dev).requires_grad_()
    out = gather_aggregate(rowptr.to(dev), col.to(dev), x, w, reduce)
    assert out.dtype == dtype
    gx, gw = torch.autograd.grad(out, [x, w], grad.to(dev))
    assert gx.dtype == dtype and gw.dtype == wt
    tol = ROUNDED[dtype] if reduce in ("sum", "mean") else ROUNDED[dtype] * 2
    close(gx, want_gx, tol, "grad x")
    close(gw, want_gw, tol, "grad weight")
    # the raw backward op: grad_out in the accumulator dtype, x_dtype names grad_x's dtype
    _, arg = ops.gather_aggregate(rowptr.to(dev), col.to(dev), x.detach(), w.detach(), reduce)
    gx2, gw2 = ops.gather_aggregate_backward(
        grad.to(dev).to(accumulate_dtype(dtype)), rowptr.to(dev), col.to(dev), None, None, arg,
        reduce, 25, False, dtype)
    assert gx2.dtype == dtype and gw2.numel() == 0
    if reduce in ("sum", "mean"):
        close(gx2, torch.autograd.grad(gather_reference(rowptr, col, x64, None, reduce)[0], x64,
                                       grad.double())[0], ROUNDED[dtype], "raw grad x")
    if dev.type == "cuda":
        cpu = ops.gather_aggregate_backward(grad.to(accumulate_dtype(dtype)), rowptr, col,
                                            x.detach().cpu(), w.detach().cpu(), arg.cpu(),
                                            reduce, 25, True, None)
        got = ops.gather_aggregate_backward(grad.to(dev).to(accumulate_dtype(dtype)),
                                            rowptr.to(dev), col.to(dev), x.detach(), w.detach(),
                                            arg, reduce, 25, True, None)
        for a, b in zip(got, cpu):
            assert a.dtype == b.dtype
            close(a, b, ROUNDED[dtype], "cuda vs cpu backward")


@with_devices
@pytest.mark.parametrize("dtype", LOW, ids=["bfloat16", "float16"])
def test_half_rows_are_summed_in_float32(device, dtype):
    """4096 ones plus small increments in one row: a bfloat16 (or float16) running sum stalls
    at 256 (2048) because 1 is below half its spacing there; the float32 accumulator is exact."""
    dev = require_native(device)
    n = 4096
    x = torch.ones(n, 2, dtype=dtype)
    x[:, 1] = 1.0 + 2.0 ** -7  # exact in both dtypes
    rowptr = torch.tensor([0, n])
    col = torch.arange(n)
    out, _ = ops.gather_aggregate(rowptr.to(dev), col.to(dev), x.to(dev), None, "sum")
    assert out.dtype == torch.float32
    assert out.cpu().tolist() == [[4096.0, 4096.0 + 32.0]]
    # the mean, returned in the input dtype, is exact as well
    mean = gather_aggregate(rowptr.to(dev), col.to(dev), x.to(dev), None, "mean")
    assert mean.dtype == dtype and mean.cpu().float().tolist() == [[1.0, 1.0 + 2.0 ** -7]]
    # what a half accumulator would give (shows the check can fail)
    naive = torch.zeros((), dtype=dtype)
    for v in x[:, 0]:
        naive = naive + v
    assert float(naive) < 4096.0


# ---------------------------------------------------------------------------------------------
# GAT / GATv2

def attention_reference(rowptr, col, scores, values):
    """float64 ``out_i = sum_e softmax_i(scores)_e values[col_e]`` with per-edge tensors."""
    num_dst = rowptr.numel() - 1
    row = torch.repeat_interleave(torch.arange(num_dst), rowptr.diff())
    H = scores.size(1)
    m = torch.full((num_dst, H), float("-inf"), dtype=torch.float64)
    m = m.scatter_reduce(0, row.view(-1, 1).expand_as(scores), scores, "amax")
    e = torch.exp(scores - m[row])
    den = torch.zeros(num_dst, H, dtype=torch.float64).index_add_(0, row, e)
    a = e / den[row]
    return torch.zeros(num_dst, H, values.size(2), dtype=torch.float64).index_add_(
        0, row, a.unsqueeze(-1) * values[col])


def _gat_inputs(dtype, v2, with_edge):
    rowptr, col = random_csr(30, 20, 6, seed=8)
    E, H, C = col.numel(), 3, 4
    x = rand(20, H, C, dtype=dtype, seed=9)
    if v2:
        rest = [rand(30, H, C, dtype=dtype, seed=10),
                rand(E, H, C, dtype=dtype, seed=11) if with_edge else None,
                rand(H, C, dtype=dtype, seed=12)]
    else:
        rest = [rand(20, H, dtype=dtype, seed=10), rand(30, H, dtype=dtype, seed=11),
                rand(E, H, dtype=dtype, seed=12) if with_edge else None]
    return rowptr, col, x, rest


def _scores(rowptr, col, v2, x, rest):
    row = torch.repeat_interleave(torch.arange(rowptr.numel() - 1), rowptr.diff())
    if v2:
        xd, xe, att = rest
        pre = x[col] + xd[row] + (xe if xe is not None else 0)
        return (F.leaky_relu(pre, SLOPE) * att).sum(-1)
    a_s, a_d, a_e = rest
    pre = a_s[col] + a_d[row] + (a_e if a_e is not None else 0)
    return F.leaky_relu(pre, SLOPE)


@with_devices
@with_dtypes
@pytest.mark.parametrize("v2", [False, True], ids=["gat", "gatv2"])
@pytest.mark.parametrize("with_edge", [False, True], ids=["noedge", "edge"])
def test_attention_forward_backward(device, dtype, v2, with_edge):
    dev = require_native(device)
    rowptr, col, x, rest = _gat_inputs(dtype, v2, with_edge)
    inputs64 = [t.double().requires_grad_() for t in [x, *rest] if t is not None]
    it = iter(inputs64)
    x64 = next(it)
    rest64 = [next(it) if t is not None else None for t in rest]
    want = attention_reference(rowptr, col, _scores(rowptr, col, v2, x64, rest64), x64)
    grad = rand(*want.shape, dtype=dtype, seed=13)
    want_grads = torch.autograd.grad(want, inputs64, grad.double())

    # the block ops: state in the accumulator dtype, out float32-accurate
    d = [t.to(dev) if t is not None else None for t in (rowptr, col, x, *rest)]
    m, l, acc = attention_state(rowptr.numel() - 1, x.size(1), x.size(2), d[2])
    assert m.dtype == l.dtype == acc.dtype == accumulate_dtype(dtype)
    fwd = ops.gatv2_block_forward_ if v2 else ops.gat_block_forward_
    fwd(*d, m, l, acc, SLOPE, 0.0, 0, None, None)
    out = ops.gat_finalize(acc, l)
    assert out.dtype == accumulate_dtype(dtype)
    close(out, want, 10 * ACCUMULATED[dtype], "finalized out")

    # the autograd wrapper: output and gradients in the inputs' dtype
    leaves = [t.requires_grad_() for t in d[2:] if t is not None]
    fn = gatv2_attention if v2 else gat_attention
    res = fn(*d, SLOPE)
    assert res.dtype == dtype
    close(res, want, ROUNDED[dtype], "attention output")
    got = torch.autograd.grad(res, leaves, grad.to(dev))
    for name, a, b in zip(["x_src", "second", "third", "fourth"], got, want_grads):
        assert a.dtype == dtype, name
        close(a, b, 2 * ROUNDED[dtype], f"grad {name}")
    if dev.type == "cuda":  # CUDA kernels against the CPU twins
        m2, l2, acc2 = attention_state(rowptr.numel() - 1, x.size(1), x.size(2), x)
        fwd(rowptr, col, x, *rest, m2, l2, acc2, SLOPE, 0.0, 0, None, None)
        close(acc, acc2, 10 * ACCUMULATED[dtype], "cuda vs cpu acc")
        bwd = ops.gatv2_block_backward if v2 else ops.gat_block_backward
        out2 = ops.gat_finalize(acc2, l2)
        g_cpu = bwd(grad.to(out2.dtype), out2, m2, l2, rowptr, col, x, *rest, SLOPE, 0.0, 0,
                    None, None, None)
        g_dev = bwd(grad.to(dev).to(out.dtype), out, m, l, *d, SLOPE, 0.0, 0, None, None,
                    None)
        for a, b in zip(g_dev, g_cpu):
            assert a.dtype == b.dtype == dtype
            close(a, b, 2 * ROUNDED[dtype], "cuda vs cpu backward")


@with_devices
@pytest.mark.parametrize("dtype", LOW, ids=["bfloat16", "float16"])
def test_attention_state_must_be_float32_for_half_inputs(device, dtype):
    dev = require_native(device)
    rowptr, col, x, (a_s, a_d, _) = _gat_inputs(dtype, False, False)
    d = [t.to(dev) for t in (rowptr, col, x, a_s, a_d)]
    m, l, acc = attention_state(30, 3, 4, d[2])
    with pytest.raises(RuntimeError, match=r"gat_block_forward_: m must be float32, the "
                                           r"accumulator dtype of x_src's "
                       + str(dtype).split(".")[-1]):
        ops.gat_block_forward_(*d, None, m.to(dtype), l, acc, SLOPE, 0.0, 0, None, None)
    with pytest.raises(RuntimeError, match=r"acc must be float32"):
        ops.gat_block_forward_(*d, None, m, l, acc.double(), SLOPE, 0.0, 0, None, None)
    with pytest.raises(RuntimeError, match=r"gat_finalize: acc and l must have the same dtype"):
        ops.gat_finalize(acc, l.double())


@with_devices
def test_float_state_must_match_float_inputs(device):
    dev = require_native(device)
    rowptr, col, x, (a_s, a_d, _) = _gat_inputs(torch.float64, False, False)
    d = [t.to(dev) for t in (rowptr, col, x, a_s, a_d)]
    m, l, acc = attention_state(30, 3, 4, d[2])
    with pytest.raises(RuntimeError, match=r"l and x_src must have the same dtype \(got "
                                           r"float32 and float64\)"):
        ops.gat_block_forward_(*d, None, m, l.float(), acc, SLOPE, 0.0, 0, None, None)


@pytest.mark.parametrize("dtype", LOW, ids=["bfloat16", "float16"])
def test_dropout_mask_in_half_dtypes(dtype):
    src, dst = torch.arange(50), torch.arange(50) % 7
    want = gat_dropout_mask(src, dst, 2, 0.3, 4, torch.float32)
    got = gat_dropout_mask(src, dst, 2, 0.3, 4, dtype)
    assert got.dtype == dtype and torch.equal(got, want.to(dtype))


# ---------------------------------------------------------------------------------------------
# quantisation

@with_devices
@pytest.mark.parametrize("dtype", LOW, ids=["bfloat16", "float16"])
@pytest.mark.parametrize("bits", [2, 8, 16])
def test_quantize_half_rows_are_their_float32_values(device, dtype, bits):
    dev = require_native(device)
    rows = rand(6, 13, dtype=dtype, seed=14).to(dev)
    payload = quantize_encode(rows, bits, 5, backend="native")
    assert torch.equal(payload, quantize_encode(rows.float(), bits, 5, backend="native"))
    assert torch.equal(payload.cpu(), quantize_encode(rows.cpu(), bits, 5, backend="reference"))
    back = quantize_decode(payload, bits, 13, dtype, backend="native")
    assert back.dtype == dtype
    assert torch.equal(back, quantize_decode(payload, bits, 13, torch.float32,
                                             backend="native").to(dtype))
    assert torch.equal(back.cpu(), quantize_decode(payload.cpu(), bits, 13, dtype,
                                                   backend="reference"))


# ---------------------------------------------------------------------------------------------
# dtypes no kernel takes

BAD = [torch.int32, torch.complex64]


@with_devices
@pytest.mark.parametrize("bad", BAD, ids=["int32", "complex64"])
def test_unsupported_dtypes_name_op_dtype_and_set(device, bad):
    dev = require_native(device)
    name = str(bad).split(".")[-1]
    supported = r"\(supported: float32, float64, bfloat16, float16\)"
    rowptr, col = torch.tensor([0, 2, 3], device=dev), torch.tensor([0, 1, 1], device=dev)
    x = torch.ones(2, 3, device=dev).to(bad)
    with pytest.raises(RuntimeError, match=rf"gather_aggregate: x_src has dtype {name}, .*"
                                           + supported):
        ops.gather_aggregate(rowptr, col, x, None, "sum")
    with pytest.raises(RuntimeError, match=rf"gather_aggregate_backward: x_dtype has dtype "
                                           rf"{name}, .*" + supported):
        ops.gather_aggregate_backward(torch.ones(2, 3, device=dev), rowptr, col, None, None,
                                      torch.empty(0, dtype=torch.long, device=dev), "sum", 2,
                                      False, bad)
    xs = torch.ones(2, 1, 1, device=dev).to(bad)
    a = torch.ones(2, 1, device=dev).to(bad)
    m, l, acc = attention_state(2, 1, 1, torch.ones(1, device=dev))
    with pytest.raises(RuntimeError, match=rf"gat_block_forward_: x_src has dtype {name}, .*"
                                           + supported):
        ops.gat_block_forward_(rowptr, col, xs, a, a, None, m, l, acc, SLOPE, 0.0, 0, None,
                               None)
    with pytest.raises(RuntimeError, match=rf"quantize_encode: rows has dtype {name}, .*"
                                           + supported):
        ops.quantize_encode(x, 4, 0)
    with pytest.raises(RuntimeError, match=rf"quantize_decode: dtype has dtype {name}, .*"
                                           + supported):
        ops.quantize_decode(torch.zeros(2, 10, dtype=torch.uint8, device=dev), 4, 4, bad)
    with pytest.raises(RuntimeError, match=rf"gat_dropout_mask: dtype has dtype {name}"):
        ops.gat_dropout_mask(torch.tensor([0]), torch.tensor([0]), 1, 0.5, 0, bad)


def test_supports_dtype():
    for op in ("gather_aggregate", "gat_block_forward_", "quantize_encode"):
        for dtype in NATIVE_DTYPES:
            assert supports_dtype(op, dtype, "cpu")
        assert not supports_dtype(op, torch.int32, "cpu")
        assert not supports_dtype(op, torch.complex64, "cpu")
    assert supports_dtype("gat_finalize", torch.bfloat16, "cpu")
    with pytest.raises(ValueError, match="op must be one of"):
        supports_dtype("bulk_select_rows", torch.float32)
