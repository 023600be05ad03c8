"""Rank side of test_rel_reshard.py: a model with a rank-local node table
(:func:`pyg_sar.shard_embedding`) and shared layers, trained full-batch (float64, no dropout),
checkpointed by one world size and continued by another."""
from __future__ import annotations

import torch
from torch_geometric.nn import GCNConv

import pyg_sar
from pyg_sar.partition import load_partition

DIM, LR = 6, 0.05


class TableGCN(torch.nn.Module):
    """PyG's ``rgcn_link_pred.py`` shape: a trainable row per node, then message passing."""

    def __init__(self, num_nodes: int, num_classes: int):
        super().__init__()
        self.node_emb = torch.nn.Parameter(torch.randn(num_nodes, DIM))
        self.conv = GCNConv(DIM, DIM)
        self.head = torch.nn.Linear(DIM, num_classes)

    def forward(self, edge_index):
        return self.head(self.conv(self.node_emb, edge_index).relu())


def train(ctx, parts: str, folder: str, first: int, last: int, save_at: int = 0,
          resume: bool = False) -> dict:
    part = load_partition(parts, ctx.rank)
    torch.manual_seed(0)
    model = TableGCN(part.meta["num_nodes"], part.meta["num_classes"]).double()
    pyg_sar.convert(model)
    pyg_sar.shard_embedding(model.node_emb, part)
    opt = torch.optim.Adam(model.parameters(), lr=LR)
    out: dict = {}
    if resume:
        state = pyg_sar.load_checkpoint(folder, model, opt, partition=part)
        out["resumed"] = [state.epoch, state.world_size]
    losses = []
    for epoch in range(first, last + 1):
        opt.zero_grad()
        loss = pyg_sar.nn.functional.cross_entropy(model(part.edge_index), part.y,
                                                   part.train_mask)
        loss.backward()
        opt.step()
        losses.append(float(loss))
        if epoch == save_at:
            pyg_sar.save_checkpoint(folder, model, opt, epoch, partition=part)
    shared = {n: p.detach().flatten().tolist() for n, p in model.named_parameters()
              if n != "node_emb"}
    adam = opt.state[model.node_emb]
    return dict(out, losses=losses, shared=shared, ids=part.node_ids.tolist(),
                rows=model.node_emb.detach().tolist(), exp_avg=adam["exp_avg"].tolist())
