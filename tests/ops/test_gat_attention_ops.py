"""Fused attention ops (GAT, GATv2): gradcheck, agreement with the plain-torch online softmax
(``SoftmaxRule``), several blocks folded into one softmax, edge cases and dropout replay."""
from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from pyg_sar.core.combine import SoftmaxRule
from pyg_sar.ops import native_available
from pyg_sar.ops._gat_attention import (
    attention_state,
    gat_attention,
    gat_block_backward,
    gat_block_forward_,
    gat_dropout_mask,
    gat_finalize,
    gat_transpose,
    gatv2_attention,
    gatv2_block_backward,
    gatv2_block_forward_,
)

pytestmark = pytest.mark.skipif(not native_available(),
                                reason="needs the native library pyg_sar._C (pip install -e .)")
SLOPE = 0.2


def attention_reference(rowptr, col, scores, values, drop=None):
    """Plain-torch oracle: ``out_i = sum_e drop_e softmax_i(scores)_e values[col_e]``, through the
    engine's online-softmax rule (``scores``/``drop`` ``[E, H]`` in edge order, ``values``
    ``[S, H, C]``). It builds the per-edge tensors the kernels avoid."""
    num_dst = rowptr.numel() - 1
    row = torch.repeat_interleave(torch.arange(num_dst, device=rowptr.device), rowptr.diff())
    rule = SoftmaxRule()
    msgs = (scores, values.index_select(0, col), drop)
    acc = rule.init(num_dst, msgs)
    return rule.finalize(rule.fold(acc, msgs, row))


def csr(num_dst: int, num_src: int, degrees: list[int], seed: int = 0):
    """CSR with the given in-degree per destination (0 = empty row), random sources."""
    g = torch.Generator().manual_seed(seed)
    deg = torch.tensor(degrees)
    assert deg.numel() == num_dst
    rowptr = torch.zeros(num_dst + 1, dtype=torch.long)
    rowptr[1:] = deg.cumsum(0)
    col = torch.randint(0, num_src, (int(deg.sum()),), generator=g)
    return rowptr, col


def rand(*shape, dtype=torch.float64, seed=0, scale=1.0):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(*shape, generator=g, dtype=torch.float64) * scale).to(dtype)


def gat_scores(rowptr, col, a_src, a_dst, a_edge):
    row = torch.repeat_interleave(torch.arange(rowptr.numel() - 1), rowptr.diff())
    pre = a_src[col] + a_dst[row]
    if a_edge is not None:
        pre = pre + a_edge
    return F.leaky_relu(pre, SLOPE)


def gatv2_scores(rowptr, col, x_src, x_dst, x_edge, att):
    row = torch.repeat_interleave(torch.arange(rowptr.numel() - 1), rowptr.diff())
    pre = x_src[col] + x_dst[row]
    if x_edge is not None:
        pre = pre + x_edge
    return (F.leaky_relu(pre, SLOPE) * att).sum(-1)


def ids_for(rowptr, col, num_src):
    src_ids = torch.arange(num_src) * 7 + 3  # any int64 ids, e.g. global node ids
    dst_ids = torch.arange(rowptr.numel() - 1) * 5 + 1
    row = torch.repeat_interleave(torch.arange(rowptr.numel() - 1), rowptr.diff())
    return src_ids, dst_ids, src_ids[col], dst_ids[row]


DEGREES = [3, 0, 1, 5, 2, 0, 1, 4]  # empty rows, one-edge rows


@pytest.mark.parametrize("with_edge", [False, True])
@pytest.mark.parametrize("dropout", [0.0, 0.4])
def test_gat_gradcheck(with_edge, dropout):
    rowptr, col = csr(8, 6, DEGREES, seed=1)
    E, H, C = col.numel(), 3, 2
    x = rand(6, H, C, seed=2).requires_grad_()
    a_s = rand(6, H, seed=3).requires_grad_()
    a_d = rand(8, H, seed=4).requires_grad_()
    a_e = rand(E, H, seed=5).requires_grad_() if with_edge else None
    src_ids, dst_ids, _, _ = ids_for(rowptr, col, 6)
    inputs = [t for t in (x, a_s, a_d, a_e) if t is not None]

    def fn(*args):
        x, a_s, a_d = args[:3]
        a_e = args[3] if with_edge else None
        return gat_attention(rowptr, col, x, a_s, a_d, a_e, SLOPE, dropout, 17, src_ids, dst_ids)

    assert torch.autograd.gradcheck(fn, inputs, eps=1e-6, atol=1e-7)


@pytest.mark.parametrize("with_edge", [False, True])
@pytest.mark.parametrize("dropout", [0.0, 0.4])
def test_gatv2_gradcheck(with_edge, dropout):
    rowptr, col = csr(8, 6, DEGREES, seed=1)
    E, H, C = col.numel(), 2, 3
    x = rand(6, H, C, seed=2).requires_grad_()
    xd = rand(8, H, C, seed=3).requires_grad_()
    xe = rand(E, H, C, seed=4).requires_grad_() if with_edge else None
    att = rand(H, C, seed=5).requires_grad_()
    src_ids, dst_ids, _, _ = ids_for(rowptr, col, 6)

    def fn(x, xd, att, *rest):
        xe = rest[0] if with_edge else None
        return gatv2_attention(rowptr, col, x, xd, xe, att, SLOPE, dropout, 5, src_ids, dst_ids)

    inputs = [x, xd, att] + ([xe] if with_edge else [])
    assert torch.autograd.gradcheck(fn, inputs, eps=1e-6, atol=1e-7)


def _reference_grads(out, inputs, grad):
    return torch.autograd.grad(out, inputs, grad)


@pytest.mark.parametrize("heads,channels", [(1, 8), (4, 3), (16, 2)])
@pytest.mark.parametrize("scale", [1.0, 300.0])
def test_gat_matches_softmax_rule(heads, channels, scale):
    """Values and gradients equal the plain-torch online softmax, incl. huge/negative scores."""
    num_dst, num_src = 40, 30
    g = torch.Generator().manual_seed(heads)
    degrees = torch.randint(0, 6, (num_dst,), generator=g).tolist()
    rowptr, col = csr(num_dst, num_src, degrees, seed=heads)
    E = col.numel()
    x = rand(num_src, heads, channels, seed=1).requires_grad_()
    a_s = rand(num_src, heads, seed=2, scale=scale).requires_grad_()
    a_d = rand(num_dst, heads, seed=3, scale=scale).requires_grad_()
    a_e = rand(E, heads, seed=4, scale=scale).requires_grad_()
    src_ids, dst_ids, se, de = ids_for(rowptr, col, num_src)
    drop = gat_dropout_mask(se, de, heads, 0.3, 9)
    grad = rand(num_dst, heads, channels, seed=5)

    out = gat_attention(rowptr, col, x, a_s, a_d, a_e, SLOPE, 0.3, 9, src_ids, dst_ids)
    ref = attention_reference(rowptr, col, gat_scores(rowptr, col, a_s, a_d, a_e), x, drop)
    assert torch.isfinite(out).all()
    torch.testing.assert_close(out, ref, rtol=1e-12, atol=1e-12)
    got = torch.autograd.grad(out, [x, a_s, a_d, a_e], grad)
    want = torch.autograd.grad(ref, [x, a_s, a_d, a_e], grad)
    for a, b in zip(got, want):
        assert torch.isfinite(a).all()
        torch.testing.assert_close(a, b, rtol=1e-9, atol=1e-9)


def test_gatv2_matches_softmax_rule_float32():
    num_dst, num_src, H, C = 25, 20, 4, 5
    rowptr, col = csr(num_dst, num_src, [i % 5 for i in range(num_dst)], seed=3)
    E = col.numel()
    args = [rand(num_src, H, C, seed=1, dtype=torch.float32),
            rand(num_dst, H, C, seed=2, dtype=torch.float32),
            rand(E, H, C, seed=3, dtype=torch.float32), rand(H, C, seed=4, dtype=torch.float32)]
    args = [a.requires_grad_() for a in args]
    x, xd, xe, att = args
    out = gatv2_attention(rowptr, col, x, xd, xe, att, SLOPE)
    ref = attention_reference(rowptr, col, gatv2_scores(rowptr, col, x, xd, xe, att), x)
    torch.testing.assert_close(out, ref, rtol=1e-5, atol=1e-6)
    grad = rand(num_dst, H, C, seed=5, dtype=torch.float32)
    for a, b in zip(torch.autograd.grad(out, args, grad), torch.autograd.grad(ref, args, grad)):
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-5)


def test_blocks_fold_into_one_softmax():
    """Two blocks folded in place (in either order) give the softmax over their union, and the
    per-block backward ops sum to the gradient of the whole."""
    N, H, C = 12, 2, 3
    r1, c1 = csr(N, 7, [i % 3 for i in range(N)], seed=1)  # block 1: 7 source rows
    r2, c2 = csr(N, 5, [(i + 1) % 4 for i in range(N)], seed=2)  # block 2: 5 source rows
    x1, x2 = rand(7, H, C, seed=3), rand(5, H, C, seed=4)
    s1, s2 = rand(7, H, seed=5, scale=50), rand(5, H, seed=6, scale=50)
    ad = rand(N, H, seed=7, scale=50)
    outs = []
    for order in ((0, 1), (1, 0)):
        m, l, acc = attention_state(N, H, C, x1)
        blocks = [(r1, c1, x1, s1), (r2, c2, x2, s2)]
        for b in order:
            rp, cl, x, s = blocks[b]
            gat_block_forward_(rp, cl, x, s, ad, None, m, l, acc, SLOPE)
        outs.append((gat_finalize(acc, l), m, l))
    torch.testing.assert_close(outs[0][0], outs[1][0], rtol=1e-13, atol=1e-13)
    out, m, l = outs[0]
    # reference over the union: sources of block 2 offset by 7
    rows = [torch.repeat_interleave(torch.arange(N), r.diff()) for r in (r1, r2)]
    row = torch.cat(rows)
    colu = torch.cat([c1, c2 + 7])
    order = torch.argsort(row, stable=True)
    rowptr = torch.zeros(N + 1, dtype=torch.long)
    rowptr[1:] = torch.bincount(row, minlength=N).cumsum(0)
    xu = torch.cat([x1, x2]).requires_grad_()
    su = torch.cat([s1, s2]).requires_grad_()
    adl = ad.clone().requires_grad_()
    ref = attention_reference(rowptr, colu[order],
                              gat_scores(rowptr, colu[order], su, adl, None), xu)
    torch.testing.assert_close(out, ref, rtol=1e-12, atol=1e-12)
    grad = rand(N, H, C, seed=8)
    gx, gs, gad = torch.autograd.grad(ref, [xu, su, adl], grad)
    g1 = gat_block_backward(grad, out, m, l, r1, c1, x1, s1, ad, None, SLOPE)
    g2 = gat_block_backward(grad, out, m, l, r2, c2, x2, s2, ad, None, SLOPE)
    torch.testing.assert_close(torch.cat([g1[0], g2[0]]), gx, rtol=1e-10, atol=1e-12)
    torch.testing.assert_close(torch.cat([g1[1], g2[1]]), gs, rtol=1e-10, atol=1e-12)
    torch.testing.assert_close(g1[2] + g2[2], gad, rtol=1e-10, atol=1e-12)
    assert g1[3].numel() == 0


def test_empty_graph_and_isolated_rows_give_zero():
    rowptr = torch.zeros(5, dtype=torch.long)
    col = torch.zeros(0, dtype=torch.long)
    x = rand(3, 2, 4).requires_grad_()
    a_s, a_d = rand(3, 2).requires_grad_(), rand(4, 2).requires_grad_()
    out = gat_attention(rowptr, col, x, a_s, a_d)
    assert out.shape == (4, 2, 4) and (out == 0).all()
    gx, gs, gd = torch.autograd.grad(out, [x, a_s, a_d], torch.ones_like(out))
    assert (gx == 0).all() and (gs == 0).all() and (gd == 0).all()


def test_extreme_scores_stay_finite():
    """Scores of +-1e30 (exp overflows naively) give the exact hard attention."""
    rowptr, col = torch.tensor([0, 3]), torch.tensor([0, 1, 2])
    x = torch.tensor([[[1.0]], [[2.0]], [[4.0]]], dtype=torch.float64)
    a_s = torch.tensor([[1e30], [-1e30], [3e29]], dtype=torch.float64)
    a_d = torch.zeros(1, 1, dtype=torch.float64)
    out = gat_attention(rowptr, col, x, a_s, a_d)
    assert out.item() == 1.0
    a_s = torch.tensor([[-1e30], [-2e30], [-1e30]], dtype=torch.float64)
    out = gat_attention(rowptr, col, x, a_s, a_d)  # two equal maxima share the weight
    assert torch.isfinite(out).all() and out.item() == pytest.approx(2.5)


def test_dropout_mask_is_keyed_by_ids_not_position():
    src = torch.arange(2000) % 97
    dst = torch.arange(2000) // 97
    mask = gat_dropout_mask(src, dst, 4, 0.25, seed=3)
    kept = (mask > 0).double().mean().item()
    assert 0.72 < kept < 0.78
    assert set(mask.unique().tolist()) == {0.0, 1 / 0.75}
    perm = torch.randperm(2000, generator=torch.Generator().manual_seed(0))
    assert torch.equal(gat_dropout_mask(src[perm], dst[perm], 4, 0.25, 3), mask[perm])
    assert not torch.equal(gat_dropout_mask(src, dst, 4, 0.25, 4), mask)
    assert (gat_dropout_mask(src, dst, 2, 0.0, 3) == 1).all()
    assert (gat_dropout_mask(src, dst, 2, 1.0, 3) == 0).all()
    # heads are independent
    assert not torch.equal(mask[:, 0], mask[:, 1])


def test_dropout_replays_in_backward():
    """The forward and the backward op use the same mask: gradients match the reference that
    applies gat_dropout_mask explicitly."""
    rowptr, col = csr(10, 8, [2, 3, 0, 1, 4, 2, 2, 3, 1, 5], seed=4)
    x = rand(8, 2, 3).requires_grad_()
    xd = rand(10, 2, 3, seed=1).requires_grad_()
    att = rand(2, 3, seed=2).requires_grad_()
    src_ids, dst_ids, se, de = ids_for(rowptr, col, 8)
    out = gatv2_attention(rowptr, col, x, xd, None, att, SLOPE, 0.5, 21, src_ids, dst_ids)
    drop = gat_dropout_mask(se, de, 2, 0.5, 21)
    assert (drop == 0).any() and (drop > 0).any()
    ref = attention_reference(rowptr, col, gatv2_scores(rowptr, col, x, xd, None, att), x, drop)
    torch.testing.assert_close(out, ref, rtol=1e-12, atol=1e-12)
    grad = rand(10, 2, 3, seed=3)
    for a, b in zip(torch.autograd.grad(out, [x, xd, att], grad),
                    torch.autograd.grad(ref, [x, xd, att], grad)):
        torch.testing.assert_close(a, b, rtol=1e-10, atol=1e-12)


def test_gatv2_backward_op_shapes_without_edges():
    rowptr, col = csr(4, 3, [1, 2, 0, 1])
    x, xd, att = rand(3, 2, 2), rand(4, 2, 2, seed=1), rand(2, 2, seed=2)
    m, l, acc = attention_state(4, 2, 2, x)
    gatv2_block_forward_(rowptr, col, x, xd, None, att, m, l, acc)
    out = gat_finalize(acc, l)
    gx, gxd, gxe, gatt = gatv2_block_backward(torch.ones_like(out), out, m, l, rowptr, col, x,
                                              xd, None, att)
    assert gx.shape == x.shape and gxd.shape == xd.shape and gxe.numel() == 0
    assert gatt.shape == att.shape


def test_bad_arguments_name_the_value():
    rowptr, col = csr(4, 3, [1, 2, 0, 1])
    x, a_s, a_d = rand(3, 2, 2), rand(3, 2), rand(4, 2)
    m, l, acc = attention_state(4, 2, 2, x)
    with pytest.raises(ValueError, match=r"a_dst must have shape \[4, 2\]"):
        gat_block_forward_(rowptr, col, x, a_s, rand(5, 2), None, m, l, acc)
    with pytest.raises(ValueError, match=r"col values must lie in \[0, x_src.size\(0\)\) = "
                                         r"\[0, 3\) \(got min 0, max 3\)"):
        gat_block_forward_(rowptr, torch.tensor([0, 1, 3, 0]), x, a_s, a_d, None, m, l, acc)
    with pytest.raises(ValueError, match="src_ids is required when dropout > 0"):
        gat_block_forward_(rowptr, col, x, a_s, a_d, None, m, l, acc, SLOPE, 0.5, 1)
    with pytest.raises(ValueError, match=r"dropout must lie in \[0, 1\] \(got 1.5\)"):
        gat_block_forward_(rowptr, col, x, a_s, a_d, None, m, l, acc, SLOPE, 1.5, 1)
    with pytest.raises(ValueError, match="must have the same dtype"):
        gat_block_forward_(rowptr, col, x, a_s.float(), a_d, None, m, l, acc)
    with pytest.raises(RuntimeError, match="x_src has dtype int32, which the native kernels "
                                           "do not support"):
        gat_block_forward_(rowptr, col, x.int(), a_s, a_d, None, m, l, acc)
    with pytest.raises(ValueError, match=r"a_src and x_src must have the same dtype \(got "
                                         r"float64 and bfloat16\)"):
        gat_block_forward_(rowptr, col, x.bfloat16(), a_s, a_d, None, m, l, acc)
    with pytest.raises(ValueError, match=r"rowptr\[-1\] must equal the number of edges"):
        gat_block_forward_(torch.tensor([0, 1, 1, 1, 9]), col, x, a_s, a_d, None, m, l, acc)


def test_transpose_layout_and_cached_backward_match():
    # gat_transpose groups edges by source (ascending edge id within a source) with the
    # destination of every entry; backward given it equals backward building it itself.
    rowptr, col = csr(6, 5, [3, 0, 1, 4, 2, 3], seed=11)
    S, E, H, C = 5, int(col.numel()), 3, 4
    t = gat_transpose(rowptr, col, S)
    assert t.dtype == torch.long and t.numel() == S + 1 + 2 * E
    colptr, perm, row = t[:S + 1], t[S + 1:S + 1 + E], t[S + 1 + E:]
    assert colptr.tolist() == [0] + torch.bincount(col, minlength=S).cumsum(0).tolist()
    assert perm.tolist() == torch.argsort(col, stable=True).tolist()
    dst = torch.repeat_interleave(torch.arange(6), rowptr.diff())
    assert row.tolist() == dst[perm].tolist()

    x, asrc, adst = rand(S, H, C, seed=1), rand(S, H, seed=2), rand(6, H, seed=3)
    m, l, acc = attention_state(6, H, C, x)
    gat_block_forward_(rowptr, col, x, asrc, adst, None, m, l, acc, SLOPE)
    out, grad = gat_finalize(acc, l), rand(6, H, C, seed=4)
    plain = gat_block_backward(grad, out, m, l, rowptr, col, x, asrc, adst, None, SLOPE)
    cached = gat_block_backward(grad, out, m, l, rowptr, col, x, asrc, adst, None, SLOPE,
                                transposed=t)
    for a, b in zip(plain[:3], cached[:3]):
        torch.testing.assert_close(a, b, rtol=0, atol=0)

    xd, att = rand(6, H, C, seed=5), rand(H, C, seed=6)
    m, l, acc = attention_state(6, H, C, x)
    gatv2_block_forward_(rowptr, col, x, xd, None, att, m, l, acc, SLOPE)
    out = gat_finalize(acc, l)
    plain = gatv2_block_backward(grad, out, m, l, rowptr, col, x, xd, None, att, SLOPE)
    cached = gatv2_block_backward(grad, out, m, l, rowptr, col, x, xd, None, att, SLOPE,
                                  transposed=t)
    for i in (0, 1, 3):
        torch.testing.assert_close(plain[i], cached[i], rtol=0, atol=0)


def test_bad_transposed_is_rejected():
    rowptr, col = csr(4, 3, [2, 1, 0, 3], seed=12)
    S, E, H, C = 3, int(col.numel()), 2, 2
    x, asrc, adst = rand(S, H, C, seed=1), rand(S, H, seed=2), rand(4, H, seed=3)
    m, l, acc = attention_state(4, H, C, x)
    gat_block_forward_(rowptr, col, x, asrc, adst, None, m, l, acc, SLOPE)
    out, grad = gat_finalize(acc, l), rand(4, H, C, seed=4)
    t = gat_transpose(rowptr, col, S)
    with pytest.raises(ValueError, match="transposed must be"):
        gat_block_backward(grad, out, m, l, rowptr, col, x, asrc, adst, None, SLOPE,
                           transposed=t[:-1])
    bad = t.clone()
    bad[S + 1] = E + 5  # an edge id out of range
    with pytest.raises(ValueError, match="out of range"):
        gat_block_backward(grad, out, m, l, rowptr, col, x, asrc, adst, None, SLOPE,
                           transposed=bad)
    bad = t.clone()
    bad[S] = E - 1  # colptr does not end at E
    with pytest.raises(ValueError, match="colptr runs from"):
        gat_block_backward(grad, out, m, l, rowptr, col, x, asrc, adst, None, SLOPE,
                           transposed=bad)
