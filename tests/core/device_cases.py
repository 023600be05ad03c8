"""Engine exactness on a device: the converted model on its partition vs single-process PyG on
the whole graph, both on the same device (outputs, input gradients, every parameter gradient).

Shared by tests/core/test_engine_device.py (P = 1 in the pytest process) and the multi-rank
GPU tests (tests/gpu, P = 2 ranks sharing one device). Layers come from engine_cases.LAYERS.
"""
from __future__ import annotations

import copy

import torch

import pyg_sar
from pyg_sar.testing.devices import NativeOpCounter
from tests.closeness import rel_error
from tests.core import engine_cases as ec

# The device subset: GCN, SAGE (mean; max aggregation), GIN, GAT and GATv2 (fused attention),
# batch norm (GCN and SAGE with jumping knowledge).
LAYERS = ("gcn", "sage_mean", "sage_max_normalize", "gin", "gat", "gat_edge_no_loops",
          "gatv2_edge", "basic_gcn_bn", "basic_sage_bn_jk")
# Layers whose propagate runs a native op (gather-aggregate or fused attention) with kernels on.
NATIVE = {"gcn": "gather_aggregate", "sage_mean": "gather_aggregate",
          "gin": "gather_aggregate", "gat": "gat_block_forward_",
          "gat_edge_no_loops": "gat_block_forward_", "gatv2_edge": "gatv2_block_forward_",
          "basic_gcn_bn": "gather_aggregate", "basic_sage_bn_jk": "gather_aggregate"}
TOL = {"float64": 1e-10, "float32": 1e-5}


def on_device(part, device: torch.device):
    """The partition's graph and edge data on ``device``."""
    return (part.graph.to(device), part.edge_attr.to(device), part.edge_weight.to(device),
            part.node_ids.to(device))


def device_case(part, data, layer: str, dtype: torch.dtype, device: torch.device,
                use_kernels: bool = True, reduce_gradients: bool = True) -> dict:
    """Relative errors of one layer on ``device`` and the native op calls per device type."""
    torch.manual_seed(7)
    ref = ec.LAYERS[layer]().to(dtype).to(device)
    dist = copy.deepcopy(ref)
    pyg_sar.convert(dist, pyg_sar.SARConfig(use_kernels=use_kernels, check_loss=False))
    graph, edge_attr, edge_weight, nid = on_device(part, device)
    x_all = data.x.to(dtype).to(device)
    x_ref = x_all.clone().requires_grad_()
    x_loc = x_all[nid].clone().requires_grad_()
    ea, ew = data.edge_attr.to(dtype).to(device), data.edge_weight.to(dtype).to(device)
    out_ref = ec._forward(ref, x_ref, data.edge_index.to(device), ea, ew)
    weight = torch.randn(out_ref.shape, generator=torch.Generator().manual_seed(3),
                         dtype=torch.float64).to(dtype).to(device)
    (out_ref * weight).sum().backward()
    with NativeOpCounter() as ops:
        out = ec._forward(dist, x_loc, graph, edge_attr.to(dtype), edge_weight.to(dtype))
        (out * weight[nid]).sum().backward()
    if reduce_gradients:
        pyg_sar.all_reduce_gradients(dist)
    errs = {"out": rel_error(out.detach(), out_ref.detach()[nid]),
            "x_grad": rel_error(x_loc.grad, x_ref.grad[nid])}
    pairs = list(zip(ref.named_parameters(), dist.parameters()))
    scale = max(float(p_ref.grad.abs().max()) for (_, p_ref), _ in pairs
                if p_ref.grad is not None)
    for (name, p_ref), p in pairs:
        assert p_ref.device.type == device.type, (name, p_ref.device)
        if p_ref.grad is None:
            errs[f"grad:{name}"] = 0.0 if p.grad is None or not p.grad.any() else 1.0
        else:
            errs[f"grad:{name}"] = float((p.grad - p_ref.grad).abs().max()) / scale
    return {"errors": errs, "out_device": out.device.type,
            "native": {f"{op}@{dev}": n for (op, dev), n in ops.calls.items()}}


def device_cases(part, data, device: torch.device, dtypes: list[str],
                 layers=LAYERS) -> dict:
    """Every (layer, dtype) case on ``device``: ``{"layer/dtype": result}``."""
    return {f"{layer}/{dtype}": device_case(part, data, layer, getattr(torch, dtype), device)
            for layer in layers for dtype in dtypes}
