"""Rank-side cases of the fused-attention engine tests (one launch per world size)."""
from __future__ import annotations

import torch
from torch_geometric.nn import GATConv, GATv2Conv

import pyg_sar
import pyg_sar.core.fused_attention as fa
from tests.core import engine_cases as ec

DROPOUT_MODELS = {
    "gat": lambda: ec.Stack(GATConv(ec.IN, 4, heads=2, dropout=0.5, edge_dim=4),
                            GATConv(8, 3, heads=2, dropout=0.3, concat=False), edge="attr"),
    "gatv2": lambda: ec.Stack(GATv2Conv(ec.IN, 4, heads=2, dropout=0.5, edge_dim=4),
                              GATv2Conv(8, 3, heads=1, dropout=0.3, edge_dim=4),
                              edge="attr"),
}


def _count_kernel_calls():
    calls = {"n": 0}
    original = fa._block_forward

    def counting(*args, **kwargs):
        calls["n"] += 1
        return original(*args, **kwargs)

    fa._block_forward = counting
    return calls, original


def dropout_run(ctx, part, data, name: str, mode: str) -> dict:
    """Train-mode forward/backward with attention dropout, same torch seed on every rank."""
    torch.manual_seed(21)
    model = DROPOUT_MODELS[name]().double()
    pyg_sar.convert(model, pyg_sar.SARConfig(mode=mode, check_loss=False))
    model.train()
    x = data.x[part.node_ids].clone().requires_grad_()
    torch.manual_seed(1234)  # the same on every rank: the dropout seed is drawn from it
    out = model(x, part.graph, part.edge_attr.double())
    weight = torch.randn(data.num_nodes, out.shape[1], dtype=torch.float64,
                         generator=torch.Generator().manual_seed(4))[part.node_ids]
    (out * weight).sum().backward()
    pyg_sar.all_reduce_gradients(model)
    model.eval()
    with torch.no_grad():
        plain = model(x, part.graph, part.edge_attr.double())
    return {"train_vs_eval": float((out.detach() - plain).abs().max()),
            "node_ids": part.node_ids.tolist(), "out": out.detach().tolist(),
            "x_grad": x.grad.tolist(),
            "param_grads": [p.grad.reshape(-1).tolist() for p in model.parameters()]}


def suite(ctx, parts: str, cases: list) -> dict:
    data = ec.make_graph()
    part = pyg_sar.load_partition(parts, ctx.rank)
    assert part.graph.node_ids is not None  # load_partition keys dropout by original ids
    calls, original = _count_kernel_calls()
    results = {}
    try:
        for layer, mode, dtype_name, depth, kernels in cases:
            before = calls["n"]
            key = f"{layer}/{mode}/{dtype_name}/d{depth}/k{int(kernels)}"
            res = ec.one_case(ctx, part, data, layer, mode, getattr(torch, dtype_name), depth,
                              kernels)
            res["kernel_calls"] = calls["n"] - before
            results[key] = res
        for name in DROPOUT_MODELS:
            for mode in ("sar", "sa"):
                results[f"dropout/{name}/{mode}"] = dropout_run(ctx, part, data, name, mode)
    finally:
        fa._block_forward = original
    return results
