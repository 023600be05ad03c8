"""StatsRule (pyg_sar.core.combine) with the aggregations of pyg_sar.nn.adapters.aggregation:
folding messages block by block gives PyG's aggregation of all messages at once, and every message's
gradient (single process; the zoo runs PNAConv across ranks)."""
from __future__ import annotations

import pytest
import torch
from torch_geometric.nn import aggr

from pyg_sar.nn.adapters.aggregation import StatsAggregation, refusal

N, E = 12, 60


def _data(seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    row = torch.randint(0, N - 3, (E,), generator=g)  # the last 3 nodes get no messages
    msgs = torch.randn(E, 2, 4, generator=g, dtype=torch.float64)
    msgs[5] = msgs[7]  # ties for max/min across blocks
    row[5], row[7] = 1, 1
    blocks = torch.randint(0, 3, (E,), generator=g)
    blocks[5], blocks[7] = 0, 2
    weight = torch.randn(N, 2, 4, generator=g, dtype=torch.float64)
    return row, msgs, blocks, weight


MODULES = {
    "multi": lambda: aggr.MultiAggregation(["mean", "min", "max", "std", "var", "sum"]),
    "var_semi": lambda: aggr.VarAggregation(semi_grad=True),
    "std": lambda: aggr.StdAggregation(),
    "max": lambda: aggr.MaxAggregation(),
    "pna": lambda: aggr.DegreeScalerAggregation(
        ["mean", "min", "max", "std"],
        ["identity", "amplification", "attenuation", "linear", "inverse_linear"],
        deg=torch.tensor([3, 2, 4, 1, 2]), train_norm=True),
}


@pytest.mark.parametrize("name", sorted(MODULES))
def test_blockwise_equals_pyg(name):
    row, msgs, blocks, weight = _data()
    module = MODULES[name]().double()
    # PyG on all messages at once
    leaf = msgs.clone().requires_grad_()
    want = module(leaf, row, dim_size=N, dim=0)
    want_out = want.detach()
    want_params = torch.autograd.grad((want * _weight(want, weight)).sum(),
                                      [leaf, *module.parameters()])
    want_grad = want_params[0]

    in_degree = torch.bincount(row, minlength=N)
    stats = StatsAggregation(module, in_degree)
    rule = stats.rule()
    acc = None
    for b in range(3):
        sel = blocks == b
        acc = rule.init(N, msgs[sel]) if acc is None else acc
        acc = rule.fold(acc, msgs[sel], row[sel])
    raw = rule.finalize(acc)
    state = rule.state(raw, acc)
    raw_leaf = raw.detach().requires_grad_()
    out = stats.after(raw_leaf)
    assert torch.allclose(out.detach(), want_out, rtol=0, atol=1e-12), name
    grads = torch.autograd.grad((out * _weight(out, weight)).sum(),
                                [raw_leaf, *module.parameters()])
    got_grad = torch.zeros_like(msgs)
    for b in range(3):
        sel = blocks == b
        got_grad[sel] = rule.message_grad(grads[0], msgs[sel], row[sel], state)
    assert torch.allclose(got_grad, want_grad, rtol=0, atol=1e-12), name
    for got, ref in zip(grads[1:], want_params[1:]):  # the scalers' trainable averages
        assert torch.allclose(got, ref, rtol=0, atol=1e-12), name


def _weight(out: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    reps = out.shape[-1] // weight.shape[-1]
    return weight.repeat(1, 1, reps)


def test_refusals_name_the_aggregation():
    assert refusal(aggr.SoftmaxAggregation()) is not None
    assert "LSTMAggregation" in refusal(aggr.MultiAggregation(["mean", aggr.LSTMAggregation(
        4, 4)]))
    assert "mode='proj'" in refusal(aggr.MultiAggregation(["mean", "max"], mode="proj",
                                                          mode_kwargs={"in_channels": 4,
                                                                       "out_channels": 4}))
    assert "median" in refusal(aggr.DegreeScalerAggregation(["median"], ["identity"],
                                                            deg=torch.tensor([1, 2]))).lower()
    assert refusal(aggr.DegreeScalerAggregation(["mean", "var"], ["identity"],
                                                deg=torch.tensor([1, 2]))) is None
