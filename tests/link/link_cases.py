"""Rank-side cases of the link-prediction exactness tests: every case in one launch per P.

Every rank builds the same graph and the same ``RandomLinkSplit`` triple, runs plain PyG on the
whole split (the oracle: negatives from ``reference_negative_sampling``, torch's own
``binary_cross_entropy_with_logits``) and the converted model on its part (``distribute`` of
the triple, negatives from ``negative_sampling`` keyed by the pairs' ids, ends fetched by
``pyg_sar.gather``, the global BCE), and reports relative errors of the node embeddings (its
own rows), the pair scores (its own pairs, matched by ``edge_label_ids``), the negatives
themselves, the loss, every parameter gradient (after the sum over ranks), the validation and
test scores (each on its own message-passing graph) and the global AUC. The pytest side
asserts the tolerance.
"""
from __future__ import annotations

import copy
from typing import Any

import torch
import torch.nn.functional as F
from torch_geometric.data import Data
from torch_geometric.nn import GCN, GraphSAGE

import pyg_sar
from pyg_sar.partition.link_split import random_link_split
from tests.closeness import max_abs_diff, rel_error

NUM_NODES, NUM_EDGES, DIM, HIDDEN = 60, 160, 6, 8
SEED, NEG_SEED = 0, 11


def make_graph(seed: int = SEED) -> Data:
    """An undirected graph (both directions stored, no duplicates, no self-loops) with
    float64 features and two isolated nodes."""
    g = torch.Generator().manual_seed(seed)
    n = NUM_NODES - 2
    src = torch.randint(0, n, (NUM_EDGES,), generator=g)
    dst = torch.randint(0, n, (NUM_EDGES,), generator=g)
    keep = src != dst
    ei = torch.stack([torch.minimum(src, dst)[keep], torch.maximum(src, dst)[keep]])
    ei = torch.unique(ei, dim=1)
    ei = torch.cat([ei, ei.flip(0)], dim=1)
    x = torch.randn(NUM_NODES, DIM, generator=g, dtype=torch.float64)
    return Data(x=x, edge_index=ei, num_nodes=NUM_NODES)


def make_split(seed: int = SEED) -> tuple:
    """PyG's RandomLinkSplit of :func:`make_graph`, seeded: the same on every rank."""
    return random_link_split(make_graph(seed), 0.15, 0.15, seed=seed)


class LinkNet(torch.nn.Module):
    """A 2-layer encoder (GCN or GraphSAGE) and a dot-product or MLP decoder over the pair
    ends; ``pick(z, index)`` fetches rows by global id (``z[index]`` for PyG,
    ``pyg_sar.gather`` for the converted copy)."""

    def __init__(self, encoder: str, decoder: str) -> None:
        super().__init__()
        cls = {"gcn": GCN, "sage": GraphSAGE}[encoder]
        self.encoder = cls(DIM, HIDDEN, num_layers=2, out_channels=HIDDEN)
        self.mlp = (torch.nn.Sequential(torch.nn.Linear(2 * HIDDEN, HIDDEN), torch.nn.ReLU(),
                                        torch.nn.Linear(HIDDEN, 1))
                    if decoder == "mlp" else None)

    def encode(self, x, edge_index):
        return self.encoder(x, edge_index)

    def decode(self, z, pairs, pick):
        src, dst = pick(z, pairs.flatten()).chunk(2)
        if self.mlp is None:
            return (src * dst).sum(dim=-1)
        return self.mlp(torch.cat([src, dst], dim=-1)).view(-1)


def _take(z, index):
    return z[index]


def _auc(scores: torch.Tensor, labels: torch.Tensor) -> float:
    """ROC AUC by counting (positive, negative) pairs: ties count one half."""
    pos, neg = scores[labels == 1], scores[labels == 0]
    diff = pos.view(-1, 1) - neg.view(1, -1)
    return float(((diff > 0).double() + 0.5 * (diff == 0).double()).mean())


def gather_new(z: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
    """``pyg_sar.gather`` of pairs in the partition's new global ids."""
    return pyg_sar.gather(z, index, ids="new")


def new_of(part) -> torch.Tensor:
    """The new global id of every original id (from the ranks' ``node_ids``)."""
    graph = part.edge_index
    n = graph.num_global_nodes
    original = pyg_sar.gather(part.node_ids.double(), torch.arange(n), ids="new",
                              node_offsets=graph).long()
    out = torch.empty_like(original)
    out[original] = torch.arange(n)
    return out


def hand_split(triple: tuple, ctx) -> tuple:
    """This rank's parts of the split, built from ``pyg_sar.distribute`` of each split's
    message-passing graph (val shares train's): the fields the split partitioner gives
    (``edge_index`` the DistGraph, ``edge_label_index`` in new ids of the pairs whose source
    the rank owns, ``edge_label``, ``edge_label_ids``), independent of that partitioner."""
    parts, done = [], {}
    for split in triple:
        key = (split.edge_index.data_ptr(), split.edge_index.shape[1])
        if key not in done:
            part = pyg_sar.distribute(Data(x=split.x, edge_index=split.edge_index,
                                           num_nodes=split.num_nodes), context=ctx)
            done[key] = (part, new_of(part))
        part, new = done[key]
        graph = part.edge_index
        lo, hi = graph.node_offsets[graph.rank], graph.node_offsets[graph.rank + 1]
        pairs = new[split.edge_label_index]
        mine = (pairs[0] >= lo) & (pairs[0] < hi)
        view = copy.copy(part)
        view.edge_label_index, view.edge_label = pairs[:, mine], split.edge_label[mine]
        view.edge_label_ids = mine.nonzero().view(-1)
        parts.append(view)
    return tuple(parts)


def _ref_negatives(triple: tuple, epoch: int) -> torch.Tensor:
    train = triple[0]
    keys = torch.arange(train.edge_label_index.shape[1])
    return pyg_sar.link.reference_negative_sampling(
        train.edge_index, keys, num_nodes=train.num_nodes, seed=NEG_SEED, epoch=epoch)


def _dist_negatives(train: Any, epoch: int) -> torch.Tensor:
    return pyg_sar.link.negative_sampling(train.edge_index, train.edge_label_ids,
                                          seed=NEG_SEED, epoch=epoch)


def _bce_ref(model: LinkNet, triple: tuple, epoch: int):
    train = triple[0]
    z = model.encode(train.x, train.edge_index)
    neg = _ref_negatives(triple, epoch)
    pairs = torch.cat([train.edge_label_index, neg], dim=1)
    labels = torch.cat([train.edge_label, train.edge_label.new_zeros(neg.shape[1])]).double()
    out = model.decode(z, pairs, _take)
    return z, neg, out, F.binary_cross_entropy_with_logits(out, labels)


def _bce_dist(model: LinkNet, part: tuple, epoch: int):
    train = part[0]
    z = model.encode(train.x.double(), train.edge_index)
    neg = _dist_negatives(train, epoch)
    pairs = torch.cat([train.edge_label_index, neg], dim=1)
    labels = torch.cat([train.edge_label, train.edge_label.new_zeros(neg.shape[1])]).double()
    out = model.decode(z, pairs, gather_new)
    loss = pyg_sar.nn.functional.binary_cross_entropy_with_logits(out, labels)
    return z, neg, out, loss


def _grad_errors(dist: torch.nn.Module, grads: dict) -> dict:
    scale = max(float(g.abs().max()) for g in grads.values() if g is not None)
    errs = {}
    for name, p in dist.named_parameters():
        g = grads[name]
        if g is None:
            errs[f"grad:{name}"] = 0.0 if p.grad is None or not p.grad.any() else 1.0
        else:
            errs[f"grad:{name}"] = max_abs_diff(p.grad, g) / scale
    return errs


def one_case(ctx, triple: tuple, part: tuple, encoder: str, decoder: str, mode: str) -> dict:
    """Errors of one (encoder, decoder, mode) case on this rank: one forward and backward of
    the training step, and the evaluation of val and test."""
    torch.manual_seed(7)
    ref = LinkNet(encoder, decoder).double()
    pristine = copy.deepcopy(ref)
    z_ref, neg_ref, out_ref, loss_ref = _bce_ref(ref, triple, epoch=1)
    loss_ref.backward()
    grads = {name: p.grad for name, p in ref.named_parameters()}

    dist = pyg_sar.convert(copy.deepcopy(pristine), pyg_sar.SARConfig(mode=mode))
    z, neg, out, loss = _bce_dist(dist, part, epoch=1)
    train = part[0]
    ids, n_pos = train.edge_label_ids, triple[0].edge_label_index.shape[1]
    errs = {"z": rel_error(z.detach(), z_ref.detach()[train.node_ids]),
            "neg_ids": float(not torch.equal(neg, new_of(train)[neg_ref[:, ids]])),
            "out:pos": rel_error(out.detach()[:ids.numel()], out_ref.detach()[ids]),
            "out:neg": rel_error(out.detach()[ids.numel():], out_ref.detach()[n_pos + ids]),
            "loss": rel_error(loss.detach(), loss_ref.detach())}
    loss.backward()
    pyg_sar.all_reduce_gradients(dist)
    errs.update(_grad_errors(dist, grads))
    for i, name in ((1, "val"), (2, "test")):
        split_ref, split = triple[i], part[i]
        with torch.no_grad():
            s_ref = ref.decode(ref.encode(split_ref.x, split_ref.edge_index),
                               split_ref.edge_label_index, _take)
            s = dist.decode(dist.encode(split.x.double(), split.edge_index),
                            split.edge_label_index, gather_new)
        errs[f"{name}:scores"] = rel_error(s, s_ref[split.edge_label_ids])
        auc = float(pyg_sar.link.roc_auc(s, split.edge_label))
        errs[f"{name}:auc"] = abs(auc - _auc(s_ref, split_ref.edge_label))
    return {"max": max(errs.values()), "errors": errs}


def curve(ctx, triple: tuple, part: tuple, encoder: str, decoder: str, mode: str,
          steps: int) -> dict:
    """Losses of ``steps`` Adam steps (fresh negatives per step) of PyG on the whole split and
    of the converted model on this rank's part, and the final parameters' error."""
    torch.manual_seed(7)
    ref = LinkNet(encoder, decoder).double()
    dist = pyg_sar.convert(copy.deepcopy(ref), pyg_sar.SARConfig(mode=mode))
    opt_ref = torch.optim.Adam(ref.parameters(), lr=0.01)
    opt = torch.optim.Adam(dist.parameters(), lr=0.01)
    losses_ref, losses = [], []
    for step in range(1, steps + 1):
        opt_ref.zero_grad()
        loss_ref = _bce_ref(ref, triple, epoch=step)[3]
        loss_ref.backward()
        opt_ref.step()
        opt.zero_grad()
        loss = _bce_dist(dist, part, epoch=step)[3]
        loss.backward()
        pyg_sar.all_reduce_gradients(dist)
        opt.step()
        losses_ref.append(float(loss_ref))
        losses.append(float(loss))
    params_ref = dict(ref.named_parameters())
    param_err = max(rel_error(p.detach(), params_ref[name].detach())
                    for name, p in dist.named_parameters())
    return {"losses": losses, "losses_ref": losses_ref, "param_err": param_err}


def suite(ctx, cases: list, curve_case: list, steps: int, partition_cases: list = ()) -> dict:
    """Run ``cases`` = [[encoder, decoder, mode], ...] and the training curve on this rank's
    hand-built parts, and ``partition_cases`` on the parts of ``pyg_sar.distribute(triple)``
    (the split partitioner: one partition, test's graph with its levels)."""
    triple = make_split()
    part = hand_split(triple, ctx)
    results = {}
    # (An error raises on every rank: a case caught on one rank only would leave the others
    # waiting in its collectives.)
    for encoder, decoder, mode in cases:
        results[f"{encoder}/{decoder}/{mode}"] = one_case(ctx, triple, part, encoder, decoder,
                                                          mode)
    results["curve"] = curve(ctx, triple, part, *curve_case, steps)
    if partition_cases:
        real = pyg_sar.distribute(triple, context=ctx)
        for encoder, decoder, mode in partition_cases:
            results[f"partition/{encoder}/{decoder}/{mode}"] = one_case(
                ctx, triple, real, encoder, decoder, mode)
        results["partition/curve"] = curve(ctx, triple, real, *curve_case, steps)
    return results
