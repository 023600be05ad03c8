"""Rank side of tests/link/test_rgcn_distmult.py: PyG's ``rgcn_link_pred.py`` model (an RGCN
encoder over a node table ``node_emb = Parameter([N, H])`` and a DistMult decoder inside
``GAE``), called as PyG's script calls it: ``model.encode(edge_index, edge_type)``,
``model.decode(z, pairs, types)``, BCE plus a regulariser over ``z`` and the decoder's
relation table, ``clip_grad_norm_``, Adam.

The port's changes: ``pyg_sar.distribute(data)``, ``pyg_sar.convert(model)``,
``pyg_sar.shard_embedding(model.encoder.node_emb, data)`` (the table keeps the rank's rows),
the regulariser through ``pyg_sar.global_mean`` and ``pyg_sar.replicated`` (the term every
rank computes alike; torch's BCE of the decoded scores is global as it is),
``pyg_sar.clip_grad_norm_``, pairs in the partition's new ids
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
    # valid: a few triples of the relations the decoder scores (0 .. RELATIONS // 2 - 1)
    valid = torch.randint(0, N, (2, 12), generator=g)
    valid = valid[:, valid[0] != valid[1]]
    return Data(edge_index=ei, edge_type=edge_type, num_nodes=N,
                train_edge_index=ei[:, train], train_edge_type=edge_type[train],
                valid_edge_index=valid,
                valid_edge_type=torch.randint(0, RELATIONS // 2, (valid.shape[1],),
                                              generator=g))


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
        # torch's BCE as PyG's script calls it: decode returns PairRows, so it is global
        loss = F.binary_cross_entropy_with_logits(out, gt) + 1e-2 * (
            pyg_sar.global_mean(z**2) + pyg_sar.replicated(model.decoder.rel_emb.pow(2).mean()))
        loss.backward()
        if torch_clip:
            torch.nn.utils.clip_grad_norm_(model.parameters(), CLIP)
        else:
            pyg_sar.clip_grad_norm_(model.parameters(), CLIP)
        opt.step()
        losses.append(float(loss))
    return losses


def reference_mrr(decoder, z, data, edge_index, edge_type) -> float:
    """PyG's ``rgcn_link_pred.py`` ``compute_mrr`` (its loops, its filters, its fair rank),
    one process on the whole graph."""
    sets = [(data.train_edge_index, data.train_edge_type),
            (data.valid_edge_index, data.valid_edge_type)]
    ranks = []
    for i in range(edge_type.numel()):
        (src, dst), rel = edge_index[:, i], edge_type[i]
        for side in (0, 1):
            mask = torch.ones(data.num_nodes, dtype=torch.bool)
            for (heads, tails), types in sets:
                if side == 0:
                    mask[tails[(heads == src) & (types == rel)]] = False
                else:
                    mask[heads[(tails == dst) & (types == rel)]] = False
            cand = torch.cat([torch.tensor([dst if side == 0 else src]),
                              torch.arange(data.num_nodes)[mask]])
            fixed = torch.full_like(cand, fill_value=src if side == 0 else dst)
            pairs = torch.stack([fixed, cand] if side == 0 else [cand, fixed])
            out = decoder(z, pairs, torch.full_like(cand, fill_value=rel))
            true = out[0]
            ranks.append(float(((out > true).sum() + 1 + (out >= true).sum()).double() * 0.5))
    return float((1.0 / torch.tensor(ranks, dtype=torch.float64)).mean())


def mrr_and_corruption(ctx, data: Data, part, ref: GAE) -> dict:
    """``pyg_sar.link.FilteredMRR`` against the script's ``compute_mrr`` on the trained
    reference's ``z`` (the rank's rows of it), and ``corrupt_pairs`` against
    ``reference_corrupt_pairs`` (original ids, two epochs)."""
    with torch.no_grad():
        z_all = ref.encode(data.edge_index, data.edge_type)
    want = reference_mrr(ref.decoder, z_all, data, data.valid_edge_index, data.valid_edge_type)
    mrr = pyg_sar.link.FilteredMRR(ref.decoder, part)
    got = float(mrr(z_all[part.node_ids], part.valid_edge_index, part.valid_edge_type))
    import pyg_sar.link.filtered_rank as filtered_rank
    whole, filtered_rank._ELEMENTS_PER_CALL = filtered_rank._ELEMENTS_PER_CALL, 40
    try:  # a few queries per decoder call: the chunked loop gives the same counts
        chunked = float(mrr(z_all[part.node_ids], part.valid_edge_index, part.valid_edge_type))
    finally:
        filtered_rank._ELEMENTS_PER_CALL = whole
    out = {"mrr": got, "mrr_want": want, "mrr_error": abs(got - want) / want,
           "mrr_chunked": chunked}
    mine = part.train_edge_index
    def to_original(pairs):  # new ids -> original ids, each end from its owner
        return torch.stack([pyg_sar.gather(part.node_ids.double()[:, None], row, ids="new",
                                           graph=part).view(-1).long()
                            for row in pairs.as_subclass(torch.Tensor)])

    mine_orig = to_original(mine)
    corrupt = {}
    for epoch in (0, 1):
        neg = pyg_sar.link.corrupt_pairs(mine, part.num_nodes, epoch=epoch)
        original = to_original(neg)
        ref_neg = pyg_sar.link.reference_corrupt_pairs(mine_orig, N, epoch=epoch)
        corrupt[str(epoch)] = {"equal": bool(torch.equal(original, ref_neg)),
                          "changed_one_end": bool(((original != mine_orig).sum(0) <= 1).all()),
                          "n": int(neg.shape[1])}
    out["corrupt"] = corrupt
    out["mrr_plain_pairs"] = error_of(lambda: mrr(z_all[part.node_ids], part.valid_edge_index
                                                  .as_subclass(torch.Tensor),
                                                  part.valid_edge_type))
    whole = pyg_sar.link.reference_corrupt_pairs(data.train_edge_index, N, epoch=0)
    out["heads_replaced"] = float((whole[0] != data.train_edge_index[0]).double().mean())
    out["bad_num_nodes"] = error_of(lambda: pyg_sar.link.corrupt_pairs(mine, N + 1))
    out["plain_pairs"] = error_of(lambda: pyg_sar.link.corrupt_pairs(
        mine.as_subclass(torch.Tensor)))
    return out


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
    out.update(mrr_and_corruption(ctx, data, part, ref))
    pyg_sar.barrier()
    return out
