"""Rank-side cases for the engine's helpers: DDP, distributed batch norm, global loss/accuracy."""
from __future__ import annotations

import copy

import torch
import torch.nn.functional as F
from torch_geometric.nn import GraphSAGE

import pyg_sar
from pyg_sar.nn.functional import accuracy, cross_entropy
from tests.closeness import max_abs_diff
from tests.core import engine_cases as ec


def _reference_and_dist(ctx, parts: str):
    data = ec.make_graph()
    part = pyg_sar.load_partition(parts, ctx.rank)
    torch.manual_seed(3)
    ref = GraphSAGE(ec.IN, 8, num_layers=2, out_channels=3, norm="batch_norm").double()
    dist = pyg_sar.convert(copy.deepcopy(ref))
    return data, part, ref, dist


def _max_grad_diff(ref, dist) -> float:
    scale = max(float(p.grad.abs().max()) for p in ref.parameters())
    return max(max_abs_diff(b.grad, a.grad) for a, b in
               zip(ref.parameters(), dist.parameters())) / scale


def ddp(ctx, parts: str) -> dict:
    """A converted model inside torch DDP (sum hook) gives the single-process gradients."""
    from pyg_sar.nn.ddp import distributed_data_parallel
    data, part, ref, dist = _reference_and_dist(ctx, parts)
    model = distributed_data_parallel(dist)
    loss_ref = F.cross_entropy(ref(data.x, data.edge_index)[data.train_mask],
                               data.y[data.train_mask])
    loss_ref.backward()
    loss = cross_entropy(model(part.x.double(), part.graph), part.y, part.train_mask)
    loss.backward()
    return {"loss_diff": abs(float(loss.detach()) - float(loss_ref.detach())),
            "grad_rel": _max_grad_diff(ref, dist)}


def helpers(ctx, parts: str) -> dict:
    """Batch-norm running statistics and eval outputs, global loss and accuracy."""
    data, part, ref, dist = _reference_and_dist(ctx, parts)
    x_loc = part.x.double()
    for _ in range(3):  # three training forwards update the running statistics
        ref(data.x, data.edge_index)
        dist(x_loc, part.graph)
    ref.eval()
    dist.eval()
    stats = []
    for bn_ref, bn in zip(ref.norms, dist.norms):
        if isinstance(bn_ref, torch.nn.Identity):  # BasicGNN has no norm after the last layer
            continue
        stats.append(float((bn_ref.module.running_mean - bn.module.running_mean).abs().max()))
        stats.append(float((bn_ref.module.running_var - bn.module.running_var).abs().max()))
    with torch.no_grad():
        out_ref = ref(data.x, data.edge_index)
        out = dist(x_loc, part.graph)
    masks = {"train": (data.train_mask, part.train_mask),
             "none": (torch.zeros_like(data.train_mask), torch.zeros_like(part.train_mask)),
             "rank0_only": (torch.isin(torch.arange(data.num_nodes),
                                       _rank0_nodes(ctx, part)),
                            torch.full_like(part.train_mask, ctx.rank == 0))}
    acc = {}
    for name, (m_ref, m_loc) in masks.items():
        if not bool(m_ref.any()):
            continue
        acc[name] = abs(accuracy(out, part.y, m_loc)
                        - float((out_ref.argmax(-1) == data.y)[m_ref].double().mean()))
    loss_ref = F.cross_entropy(out_ref[masks["rank0_only"][0]],
                               data.y[masks["rank0_only"][0]])
    loss = cross_entropy(out, part.y, masks["rank0_only"][1])
    return {"running_stats": max(stats), "eval_out": float((out - out_ref[part.node_ids])
                                                           .abs().max()),
            "accuracy": acc, "loss_rank0_only": abs(float(loss) - float(loss_ref))}


def _rank0_nodes(ctx, part) -> torch.Tensor:
    ids = ctx.comm.allgather_object(part.node_ids.tolist())
    return torch.tensor(ids[0])
