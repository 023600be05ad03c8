"""Rank side of tests/partition/test_partition_balance.py: an edge-balanced partition made by
``pyg_sar.distribute(..., balance="edges")`` trains exactly as single-process PyG (one launch).
"""
from __future__ import annotations

import copy

import torch
import torch.nn.functional as F
from torch_geometric.data import Data
from torch_geometric.nn import GraphSAGE

import pyg_sar
import pyg_sar.nn.functional as SF
from pyg_sar.datasets import rmat
from tests.closeness import rel_error


def make_data() -> Data:
    """A small power-law graph (node balance leaves most in-edges on one part) in float64."""
    data = rmat(600, 3000, num_features=6, num_classes=3, seed=1)
    data.x = data.x.double()
    return data


def edge_balanced_training(ctx) -> dict:
    data = make_data()
    part = pyg_sar.distribute(data, balance="edges", method="metis", seed=0)
    torch.manual_seed(0)
    ref = GraphSAGE(6, 8, num_layers=2, out_channels=3).double()
    model = pyg_sar.convert(copy.deepcopy(ref))
    out_ref = ref(data.x, data.edge_index)
    out = model(part.x, part.graph)
    loss_ref = F.cross_entropy(out_ref[data.train_mask], data.y[data.train_mask])
    loss = SF.cross_entropy(out, part.y, part.train_mask)
    loss_ref.backward()
    loss.backward()
    grads = [rel_error(q.grad, p.grad) for p, q in zip(ref.parameters(), model.parameters(),
                                                    strict=True)]
    return {"balance": part.meta["balance"], "num_edges": part.num_edges,
            "out_error": rel_error(out.detach(), out_ref.detach()[part.node_ids]),
            "loss_error": abs(float(loss) - float(loss_ref)) / abs(float(loss_ref)),
            "grad_error": max(grads)}
