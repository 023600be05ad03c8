"""Rank side of tests/nn/test_model_adapters.py."""
from __future__ import annotations

import copy

import torch
from torch_geometric.nn.models import LabelPropagation

import pyg_sar


def label_classes(ctx, parts: str, graph: dict) -> dict:
    """Integer labels whose largest class is missing on some rank: one-hot with the whole
    graph's classes, outputs equal to PyG's rows."""
    data = torch.load(graph, weights_only=True)
    part = pyg_sar.load_partition(parts, ctx.rank)
    ref = LabelPropagation(num_layers=2, alpha=0.6)
    want = ref(data["y"], data["edge_index"], mask=data["train_mask"],
               edge_weight=data["edge_weight"], post_step=lambda out: out)
    model = pyg_sar.convert(copy.deepcopy(ref))
    got = model(data["y"][part.node_ids], part.graph, mask=data["train_mask"][part.node_ids],
                edge_weight=part.edge_weight, post_step=lambda out: out)
    rows = want[part.node_ids]
    return {"local_classes": int(data["y"][part.node_ids].max()) + 1,
            "columns": got.shape[1],
            "error": float((got - rows).abs().max() / rows.abs().max())}
