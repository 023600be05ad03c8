"""The engine's precision rules, one at a time: float32 accumulation of bfloat16 messages in
every combine rule and in the linear fast path, outputs in the messages' dtype, the autocast
replay of recomputed blocks, DistributedBatchNorm and the global losses on bf16 inputs.

Each accumulation test is built so that bfloat16 accumulation would fail it (asserted too):
a node with 300 in-edges (bfloat16 holds integers exactly only up to 256, and a running sum of
300 ones stops at 256).
"""
from __future__ import annotations

import contextlib

import pytest
import torch
from torch_geometric.nn import EdgeConv

import pyg_sar
import pyg_sar.nn.functional as SF
from pyg_sar.core.combine import ExtremeRule, SoftmaxRule, StatsRule, SumRule
from pyg_sar.core.kernels import block_sum, block_sum_transpose
from pyg_sar.core.precision import AutocastState, accumulate_dtype

BF16 = torch.bfloat16
DEG = 300  # in-degree of node 0 in these tests (> 256)


def _blocks():
    """300 messages to node 0 and 3 to node 1 (``[E, 2]`` bf16), in 61 blocks of 5 (as from
    61 source ranks: a rule's accumulator carries the sum from block to block)."""
    g = torch.Generator().manual_seed(0)
    msgs = (1 + torch.rand(DEG + 3, 2, generator=g) / 64).to(BF16)
    row = torch.cat([torch.zeros(DEG, dtype=torch.long), torch.ones(3, dtype=torch.long)])
    return msgs, row, [(msgs[i:i + 5], row[i:i + 5]) for i in range(0, DEG + 3, 5)]


def _fold(rule, blocks, num_nodes=2):
    acc = None
    for m, r in blocks:
        acc = rule.init(num_nodes, m) if acc is None else acc
        acc = rule.fold(acc, m, r)
    return acc


def test_accumulate_dtype():
    assert accumulate_dtype(BF16) == torch.float32
    assert accumulate_dtype(torch.float16) == torch.float32
    assert accumulate_dtype(torch.float32) == torch.float32
    assert accumulate_dtype(torch.float64) == torch.float64


@pytest.mark.parametrize("mean", [False, True])
def test_sum_and_mean_accumulate_in_float32(mean):
    msgs, row, blocks = _blocks()
    deg = torch.tensor([DEG, 3])
    rule = SumRule(mean, deg)
    acc = _fold(rule, blocks)
    assert acc.dtype == torch.float32
    out = rule.finalize(acc)
    assert out.dtype == BF16
    want = torch.zeros(2, 2).index_add_(0, row, msgs.float())
    if mean:
        want = want / deg.float().view(-1, 1)
    assert torch.equal(out, want.to(BF16))  # one rounding, at the end
    # bf16 accumulation (what the rule must not do) is far off at node 0
    naive = torch.zeros(2, 2, dtype=BF16)
    for m, r in blocks:
        naive.index_add_(0, r, m)
    if mean:
        naive = naive / deg.to(BF16).view(-1, 1)
    assert not torch.equal(naive, out)
    # backward: a mean's 1 / degree in float32, the message gradient in the messages' dtype
    g = torch.ones(2, 2, dtype=BF16)
    grad = rule.message_grad(g, msgs, row, rule.state(out, acc))
    assert grad.dtype == BF16
    expect = (1.0 / deg.float())[row] if mean else torch.ones(row.numel())
    assert torch.equal(grad[:, 0], expect.to(BF16))


def test_max_keeps_exact_values_and_counts_ties_in_float32():
    msgs = torch.ones(DEG, 1, dtype=BF16)  # 300 tied maxima at node 0
    row = torch.zeros(DEG, dtype=torch.long)
    rule = ExtremeRule(True)
    acc = _fold(rule, [(msgs[:100], row[:100]), (msgs[100:], row[100:])], num_nodes=1)
    value, count = acc
    assert value.dtype == BF16 and count.dtype == torch.float32
    assert float(count[0, 0]) == DEG  # a bf16 count would stop at 256
    out = rule.finalize(acc)
    grad = rule.message_grad(torch.ones(1, 1, dtype=BF16), msgs, row, rule.state(out, acc))
    assert grad.dtype == BF16
    assert torch.equal(grad, torch.full_like(msgs, 1.0 / DEG))


def test_stats_variance_in_float32():
    msgs, row, blocks = _blocks()
    deg = torch.tensor([DEG, 3])

    def finish(v):
        n = deg.to(v["sum"].dtype).view(-1, 1)
        return v["sumsq"] / n - (v["sum"] / n) ** 2
    rule = StatsRule(("sum", "sumsq"), finish)
    acc = _fold(rule, blocks)
    assert all(t.dtype == torch.float32 for t in acc.values())
    out = rule.finalize(acc)
    assert out.dtype == BF16
    x = msgs.double()
    n = deg.double().view(-1, 1)
    s1 = torch.zeros(2, 2, dtype=torch.float64).index_add_(0, row, x)
    s2 = torch.zeros(2, 2, dtype=torch.float64).index_add_(0, row, x * x)
    want = s2 / n - (s1 / n) ** 2
    # float32 statistics: the variance (~1e-5 here, a difference of two ~1 values) within
    # float32's cancellation error; bf16 statistics would not even get its sign right
    assert torch.allclose(out.double(), want, rtol=0.05, atol=1e-6)
    grad = rule.message_grad(torch.ones(2, 2, dtype=BF16), msgs, row, rule.state(out, acc))
    assert grad.dtype == BF16


def test_online_softmax_state_in_float32():
    msgs, row, blocks = _blocks()
    scores = [(m[:, :1] * 4, m.unsqueeze(1), None) for m, _ in blocks]
    rule = SoftmaxRule()
    acc = None
    for (s, v, d), (_, r) in zip(scores, blocks):
        acc = rule.init(2, (s, v, d)) if acc is None else acc
        acc = rule.fold(acc, (s, v, d), r)
    assert all(t.dtype == torch.float32 for t in acc)
    out = rule.finalize(acc)
    assert out.dtype == BF16
    s = msgs[:, :1].double() * 4
    w = torch.exp(s - s.max())
    den = torch.zeros(2, 1, dtype=torch.float64).index_add_(0, row, w)
    num = torch.zeros(2, 1, 2, dtype=torch.float64).index_add_(
        0, row, w.unsqueeze(-1) * msgs.double().unsqueeze(1))
    want = num / den.unsqueeze(-1)
    assert torch.allclose(rule._wide(acc).double(), want, rtol=1e-6)
    assert torch.equal(out, rule._wide(acc).to(BF16))
    state = rule.state(out, acc)
    assert state[0].dtype == torch.float32  # backward reads the unrounded output
    gs, gv, _ = rule.message_grad(torch.ones_like(out), scores[0], blocks[0][1], state)
    assert gs.dtype == BF16 and gv.dtype == BF16


def test_linear_path_sums_bf16_rows_in_float32():
    num_src = DEG
    rowptr = torch.tensor([0, DEG])
    col = torch.arange(DEG)
    x = torch.ones(num_src, 3, dtype=BF16)
    out = block_sum(rowptr, col, x, None)
    assert out.dtype == torch.float32 and float(out[0, 0]) == DEG
    w = torch.full((DEG,), 0.5, dtype=BF16)
    assert float(block_sum(rowptr, col, x, w)[0, 0]) == DEG / 2
    # backward: grad_out read in float32, the mean's scaling not rounded to bf16
    g = torch.ones(1, 3, dtype=BF16)
    gx = block_sum_transpose(g, rowptr, col, None, num_src,
                             row_scale=torch.tensor([1.0 / DEG]))
    assert gx.dtype == torch.float32
    assert torch.equal(gx, torch.full((num_src, 3), 1.0 / DEG))


def test_autocast_state_is_replayed():
    with torch.autocast("cpu", dtype=BF16):
        state = AutocastState.capture()
    assert state.enabled and not torch.is_autocast_enabled("cpu")
    a = torch.randn(3, 3)
    with state.replay():
        assert torch.is_autocast_enabled("cpu")
        assert (a @ a).dtype == BF16
    assert (a @ a).dtype == torch.float32
    off = AutocastState.capture()
    with torch.autocast("cpu", dtype=BF16), off.replay():  # a disabled state re-entered
        assert (a @ a).dtype == torch.float32


def _edge_conv_grads(part, x, backward_inside: bool, replay: bool, monkeypatch):
    torch.manual_seed(0)
    model = EdgeConv(torch.nn.Sequential(torch.nn.Linear(12, 8), torch.nn.Tanh(),
                                         torch.nn.Linear(8, 4)))
    pyg_sar.convert(model, pyg_sar.SARConfig(check_loss=False))
    if not replay:
        monkeypatch.setattr(AutocastState, "replay", lambda self: contextlib.nullcontext())
    x = x.clone().requires_grad_()
    ctx = torch.autocast("cpu", dtype=BF16)
    with ctx:
        out = model(x, part.graph)
        if backward_inside:
            out.float().square().sum().backward()
    if not backward_inside:
        out.float().square().sum().backward()
    monkeypatch.undo()
    return [x.grad] + [p.grad for p in model.parameters()]


def test_sar_backward_replays_the_forward_autocast(tmp_path, monkeypatch):
    """EdgeConv's message is an MLP (bf16 under autocast), recomputed block by block in
    backward. Backward outside autocast (torch's recipe) gives the gradients of backward inside
    it, bit for bit; without the replay the recomputation would run in float32 and differ."""
    from torch_geometric.data import Data
    g = torch.Generator().manual_seed(1)
    data = Data(x=torch.randn(40, 6, generator=g),
                edge_index=torch.randint(0, 40, (2, 200), generator=g))
    pyg_sar.partition_graph(data, 1, tmp_path / "p1")
    part = pyg_sar.load_partition(tmp_path / "p1", 0, world_size=1)
    inside = _edge_conv_grads(part, part.x, True, True, monkeypatch)
    outside = _edge_conv_grads(part, part.x, False, True, monkeypatch)
    assert all(torch.equal(a, b) for a, b in zip(inside, outside))
    unreplayed = _edge_conv_grads(part, part.x, False, False, monkeypatch)
    assert not all(torch.equal(a, b) for a, b in zip(inside, unreplayed))


def test_batch_norm_bf16_input_single_rank_is_torch():
    """One rank: DistributedBatchNorm is torch's BatchNorm1d (bf16 in, bf16 out)."""
    bn = pyg_sar.nn.norm.DistributedBatchNorm(3)
    x = torch.randn(20, 3).to(BF16)
    with torch.autocast("cpu", dtype=BF16):
        assert bn(x).dtype == BF16


def test_global_loss_of_bf16_logits_sums_in_float32():
    """A bf16 loss sum over many nodes is taken in float32 and returned in bf16 (torch's
    dtype for bf16 logits); its value is the float32 mean rounded once."""
    g = torch.Generator().manual_seed(2)
    out = torch.randn(3000, 4, generator=g).to(BF16).requires_grad_()
    y = torch.randint(0, 4, (3000,), generator=g)
    loss = SF.cross_entropy(out, y)
    assert loss.dtype == BF16
    per = torch.nn.functional.cross_entropy(out.detach(), y, reduction="none")
    assert torch.equal(loss.detach(), (per.float().sum() / 3000).to(BF16))
    loss.backward()
    assert out.grad.dtype == BF16
    mean = SF.global_mean(per)
    assert mean.dtype == BF16 and torch.equal(mean, (per.float().sum() / 3000).to(BF16))


def test_global_max_counts_bf16_ties_in_float32(tmp_path):
    """``global_max`` (graph preprocessing) splits the gradient between 300 tied bf16 maxima:
    the count is float32 (a bf16 count stops at 256), the gradient bf16."""
    from torch_geometric.data import Data

    from pyg_sar.core.reduce import global_max
    data = Data(x=torch.zeros(4, 1), edge_index=torch.tensor([[0, 1], [1, 2]]))
    pyg_sar.partition_graph(data, 1, tmp_path / "p1")
    part = pyg_sar.load_partition(tmp_path / "p1", 0, world_size=1)
    t = torch.ones(DEG, dtype=BF16, requires_grad=True)
    peak = global_max(part.graph, t)
    assert peak.dtype == BF16
    peak.backward()
    assert t.grad.dtype == BF16
    assert torch.equal(t.grad, torch.full((DEG,), 1.0 / DEG).to(BF16))


@pytest.mark.parametrize("dtype", [BF16, torch.float16])
def test_bf16_gat_takes_the_fused_kernels_where_built(tmp_path, monkeypatch, dtype):
    """A pure bf16 / f16 GATConv runs the fused kernels (float32 state) where the build has
    them, and agrees with the plain-torch path (also float32-accumulating) to the dtype's
    rounding; the output and gradients keep the dtype."""
    from torch_geometric.data import Data
    from torch_geometric.nn import GATConv

    from pyg_sar.core import fused_attention
    if fused_attention.fused_dtype([torch.zeros(1, dtype=dtype)], torch.device("cpu")) is None:
        pytest.skip(f"this build's attention kernels lack {dtype} (the plain path runs it)")
    g = torch.Generator().manual_seed(3)
    data = Data(x=torch.randn(50, 6, generator=g),
                edge_index=torch.randint(0, 50, (2, 300), generator=g))
    pyg_sar.partition_graph(data, 1, tmp_path / "p1")
    part = pyg_sar.load_partition(tmp_path / "p1", 0, world_size=1)
    calls = []
    real = fused_attention.FusedAttentionFunction.apply
    monkeypatch.setattr(fused_attention.FusedAttentionFunction, "apply",
                        lambda *a: calls.append(1) or real(*a))
    results = []
    for kernels in (True, False):
        torch.manual_seed(0)
        model = GATConv(6, 4, heads=2).to(dtype)
        pyg_sar.convert(model, pyg_sar.SARConfig(use_kernels=kernels, check_loss=False))
        x = part.x.to(dtype).requires_grad_()
        out = model(x, part.graph)
        out.float().square().sum().backward()
        results.append([out, x.grad] + [p.grad for p in model.parameters()])
    assert len(calls) == 1  # the kernels' run only
    for a, b in zip(*results):
        assert a.dtype == b.dtype == dtype
        assert torch.allclose(a.float(), b.float(), rtol=2 ** -6, atol=2 ** -6 * float(
            b.float().abs().max()))
