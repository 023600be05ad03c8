"""Rank side of tests/link/test_rgcn_distmult.py: PyG's ``rgcn_link_pred.py`` model (an RGCN
encoder over a node table ``node_emb = Parameter([N, H])`` and a DistMult decoder inside
``GAE``), called as PyG's script calls it: ``model.encode(edge_index, edge_type)``,
``model.decode(z, pairs, types)``, BCE plus a regulariser over ``z`` and the decoder's
relation table, ``clip_grad_norm_``, Adam.

The port's changes: ``pyg_sar.distribute(data)``, ``pyg_sar.convert(model)``,
``pyg_sar.shard_embedding(model.encoder.node_emb, data)`` (the table keeps the rank's rows),
the loss and regulariser through ``pyg_sar.nn.functional`` (``SF.replicated`` for the term
every rank computes alike), ``pyg_sar.clip_grad_norm_``, pairs in the partition's new ids
(``pyg_sar.link.to_new_ids``) and negatives drawn the same at every P (a seeded draw of all
pairs, each rank taking its share). Dropout is 0 (each rank would draw its own masks).
"""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch.nn import Parameter
from torch_geometric.data import Data
from torch_geometric.nn import GAE, RGCNConv

import pyg_sar
import pyg_sar.nn.functional as SF
from pyg_sar.testing import error_of
from tests.closeness import rel_error

N, H, RELATIONS, STEPS = 50, 8, 4, 5
# PyG's script clips at 1.0; this small model's gradients stay below it, so the test clips
# at 0.05, where every step is scaled (and a wrong norm would show).
CLIP = 0.05


class RGCNEncoder(torch.nn.Module):  # PyG's rgcn_link_pred.py (dropout 0 here)
    def __init__(self, num_nodes, hidden_channels, num_relations):
        super().__init__()
        self.node_emb = Parameter(torch.empty(num_nodes, hidden_channels))
        self.conv1 = RGCNConv(hidden_channels, hidden_channels, num_relations, num_blocks=2)
        self.conv2 = RGCNConv(hidden_channels, hidden_channels, num_relations, num_blocks=2)
        self.reset_parameters()

    def reset_parameters(self):
        torch.nn.init.xavier_uniform_(self.node_emb)
        self.conv1.reset_parameters()
        self.conv2.reset_parameters()

    def forward(self, edge_index, edge_type):
        x = self.node_emb
        x = self.conv1(x, edge_index, edge_type).relu_()
        x = F.dropout(x, p=0.0, training=self.training)
        x = self.conv2(x, edge_index, edge_type)
        return x


class DistMultDecoder(torch.nn.Module):  # PyG's rgcn_link_pred.py
    def __init__(self, num_relations, hidden_channels):
        super().__init__()
        self.rel_emb = Parameter(torch.empty(num_relations, hidden_channels))
        self.reset_parameters()

    def reset_parameters(self):
        torch.nn.init.xavier_uniform_(self.rel_emb)

    def forward(self, z, edge_index, edge_type):
        z_src, z_dst = z[edge_index[0]], z[edge_index[1]]
        rel = self.rel_emb[edge_type]
        return torch.sum(z_src * rel * z_dst, dim=1)


def make_model(seed: int) -> GAE:
    torch.manual_seed(seed)
    return GAE(RGCNEncoder(N, H, RELATIONS), DistMultDecoder(RELATIONS // 2, H)).double()


def make_data() -> Data:
    g = torch.Generator().manual_seed(0)
    ei = torch.unique(torch.randint(0, N, (2, 240), generator=g), dim=1)
    ei = ei[:, ei[0] != ei[1]]
    edge_type = torch.randint(0, RELATIONS, (ei.shape[1],), generator=g)
    train = edge_type < RELATIONS // 2
    return Data(edge_index=ei, edge_type=edge_type, num_nodes=N,
                train_edge_index=ei[:, train], train_edge_type=edge_type[train])


def negatives(edge_index: torch.Tensor, step: int) -> torch.Tensor:
    """PyG's script's corruption of subject or object, from a seeded generator: every rank
    draws every pair's (the same at every P) and takes its share."""
    g = torch.Generator().manual_seed(100 + step)
    mask_1 = torch.rand(edge_index.size(1), generator=g) < 0.5
    neg = edge_index.clone()
    neg[0, mask_1] = torch.randint(N, (int(mask_1.sum()),), generator=g)
    neg[1, ~mask_1] = torch.randint(N, (int((~mask_1).sum()),), generator=g)
    return neg


def _train_ref(model, data, norms: list[float]) -> list[float]:
    opt = torch.optim.Adam(model.parameters(), lr=0.01)
    losses = []
    for step in range(STEPS):
        model.train()
        opt.zero_grad()
        z = model.encode(data.edge_index, data.edge_type)
        pos_out = model.decode(z, data.train_edge_index, data.train_edge_type)
        neg_out = model.decode(z, negatives(data.train_edge_index, step), data.train_edge_type)
        out = torch.cat([pos_out, neg_out])
        gt = torch.cat([torch.ones_like(pos_out), torch.zeros_like(neg_out)])
        loss = F.binary_cross_entropy_with_logits(out, gt) + 1e-2 * (
            z.pow(2).mean() + model.decoder.rel_emb.pow(2).mean())
        loss.backward()
        norms.append(float(torch.nn.utils.clip_grad_norm_(model.parameters(), CLIP)))
        opt.step()
        losses.append(float(loss))
    return losses


def _train_dist(model, part, mine, world: int, torch_clip: bool = False) -> list[float]:
    opt = torch.optim.Adam(model.parameters(), lr=0.01)
    pos_pairs = pyg_sar.link.to_new_ids(part, mine[0])
    types = mine[1]
    losses = []
    for step in range(STEPS):
        model.train()
        opt.zero_grad()
        z = model.encode(part.edge_index, part.edge_type)
        pos_out = model.decode(z, pos_pairs, types)
        neg_all = negatives(mine[2], step)[:, mine[3]]
        neg_out = model.decode(z, pyg_sar.link.to_new_ids(part, neg_all), types)
        out = torch.cat([pos_out, neg_out])
        gt = torch.cat([torch.ones_like(pos_out), torch.zeros_like(neg_out)])
        loss = SF.binary_cross_entropy_with_logits(out, gt) + 1e-2 * (
            SF.global_mean(z.pow(2)) + SF.replicated(model.decoder.rel_emb.pow(2).mean()))
        loss.backward()
        if torch_clip:
            torch.nn.utils.clip_grad_norm_(model.parameters(), CLIP)
        else:
            pyg_sar.clip_grad_norm_(model.parameters(), CLIP)
        opt.step()
        losses.append(float(loss))
    return losses


def suite(ctx) -> dict:
    data = make_data()
    part = pyg_sar.distribute(data, context=ctx)
    world, rank = ctx.world_size, ctx.rank
    # The rank's share of the training triples (original ids), and all of them for the
    # negatives' draw.
    share = torch.arange(data.train_edge_index.shape[1]) % world == rank
    mine = (data.train_edge_index[:, share], data.train_edge_type[share],
            data.train_edge_index, share)
    ref = make_model(0)
    norms: list[float] = []
    ref_losses = _train_ref(ref, data, norms)
    model = pyg_sar.convert(make_model(rank))  # each rank its own init: convert copies rank 0's
    pyg_sar.shard_embedding(model.encoder.node_emb, part)
    losses = _train_dist(model, part, mine, world)
    out = {"losses": max(abs(a - b) / abs(b) for a, b in zip(losses, ref_losses)),
           "steps": len(losses), "min_norm_over_clip": min(norms) / CLIP}
    named = dict(ref.named_parameters())
    errors = {}
    for name, p in model.named_parameters():
        want = named[name][part.node_ids] if name == "encoder.node_emb" else named[name]
        errors[name] = rel_error(p, want)
    out["params"] = errors
    # torch's own clip_grad_norm_ sees this rank's rows of node_emb only: the ranks scale
    # differently, and the drift check refuses the next step (several ranks).
    model = pyg_sar.convert(make_model(0))
    pyg_sar.shard_embedding(model.encoder.node_emb, part)
    out["torch_clip"] = error_of(lambda: _train_dist(model, part, mine, world, torch_clip=True))
    pyg_sar.barrier()
    return out
