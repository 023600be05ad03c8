"""Rank side of tests/link/test_autoencoders.py: PyG's GAE, VGAE and ARGVA converted and trained
on a rank's part of a ``RandomLinkSplit`` against single-process PyG on the whole split (the
oracle), every case in one launch per P.

Every rank builds the same graph, the same seeded split and the same seeded model. The oracle
runs PyG's own methods, called as PyG's ``examples/autoencoder.py`` and
``examples/argva_node_clustering.py`` call them, with the draws pyg_sar makes P-independent
given to it: the negatives of ``recon_loss`` from ``reference_negative_sampling`` (keys
``arange(M)``, the model's draw counter as the epoch) and ``torch.randn_like`` patched to
``keyed_normal`` over ``arange(N)`` (VGAE's reparametrization, ARGA's prior samples). The
converted copy runs the same calls on its part (``pyg_sar.distribute`` of the triple, pairs in
new global ids). Reported: the largest relative error of the per-step losses, the final
parameters, the last encoding's rows (matched by ``node_ids``), ``decode`` of the rank's test
pairs (matched by ``*_ids``), and (AUC, AP) against a torch reference computed on the oracle's
concatenated pairs (and scikit-learn's, through PyG's ``test``, when it is installed).
"""
from __future__ import annotations

import copy
import random
from contextlib import contextmanager
from unittest import mock

import numpy as np
import torch
from torch_geometric.data import Data
from torch_geometric.nn import GCNConv
from torch_geometric.nn.models import ARGVA, GAE, VGAE

import pyg_sar
from pyg_sar.link import reference_negative_sampling
from pyg_sar.nn.autoencoder import keyed_normal
from tests.closeness import rel_norm_error as _rel_norm

NUM_NODES, NUM_EDGES, DIM, OUT = 70, 200, 6, 4
STEPS, LR = 6, 0.01


def make_graph(seed: int = 0) -> Data:
    """An undirected graph (both directions, no duplicates or self-loops), float64 features,
    two isolated nodes."""
    g = torch.Generator().manual_seed(seed)
    n = NUM_NODES - 2
    src = torch.randint(0, n, (NUM_EDGES,), generator=g)
    dst = torch.randint(0, n, (NUM_EDGES,), generator=g)
    keep = src != dst
    ei = torch.unique(torch.stack([torch.minimum(src, dst)[keep],
                                   torch.maximum(src, dst)[keep]]), dim=1)
    ei = torch.cat([ei, ei.flip(0)], dim=1)
    x = torch.randn(NUM_NODES, DIM, generator=g, dtype=torch.float64)
    return Data(x=x, edge_index=ei, num_nodes=NUM_NODES)


def make_split(split_labels: bool, seed: int = 0) -> tuple:
    """PyG's RandomLinkSplit as examples/autoencoder.py makes it, generators seeded."""
    import torch_geometric.transforms as T
    transform = T.RandomLinkSplit(num_val=0.1, num_test=0.2, is_undirected=True,
                                  split_labels=split_labels, add_negative_train_samples=False)
    states = torch.random.get_rng_state(), random.getstate(), np.random.get_state()
    try:
        torch.manual_seed(seed)
        random.seed(seed)
        np.random.seed(seed)
        return transform(make_graph(seed))
    finally:
        torch.random.set_rng_state(states[0])
        random.setstate(states[1])
        np.random.set_state(states[2])


class GCNEncoder(torch.nn.Module):  # examples/autoencoder.py
    def __init__(self, in_channels: int, out_channels: int) -> None:
        super().__init__()
        self.conv1 = GCNConv(in_channels, 2 * out_channels)
        self.conv2 = GCNConv(2 * out_channels, out_channels)

    def forward(self, x, edge_index):
        return self.conv2(self.conv1(x, edge_index).relu(), edge_index)


class VariationalGCNEncoder(torch.nn.Module):  # examples/autoencoder.py
    def __init__(self, in_channels: int, out_channels: int) -> None:
        super().__init__()
        self.conv1 = GCNConv(in_channels, 2 * out_channels)
        self.conv_mu = GCNConv(2 * out_channels, out_channels)
        self.conv_logstd = GCNConv(2 * out_channels, out_channels)

    def forward(self, x, edge_index):
        x = self.conv1(x, edge_index).relu()
        return self.conv_mu(x, edge_index), self.conv_logstd(x, edge_index)


class Discriminator(torch.nn.Module):  # examples/argva_node_clustering.py
    def __init__(self, in_channels: int, hidden: int, out_channels: int) -> None:
        super().__init__()
        self.lin1 = torch.nn.Linear(in_channels, hidden)
        self.lin2 = torch.nn.Linear(hidden, hidden)
        self.lin3 = torch.nn.Linear(hidden, out_channels)

    def forward(self, x):
        return self.lin3(self.lin2(self.lin1(x).relu()).relu())


def make_model(kind: str) -> torch.nn.Module:
    torch.manual_seed(0)
    if kind == "gae":
        model = GAE(GCNEncoder(DIM, OUT))
    elif kind == "vgae":
        model = VGAE(VariationalGCNEncoder(DIM, OUT))
    else:
        model = ARGVA(VariationalGCNEncoder(DIM, OUT), Discriminator(OUT, 8, 1))
    return model.double()


def pairs(split, split_labels: bool) -> tuple[torch.Tensor, torch.Tensor]:
    """(positives, negatives) of a split, in either form (negatives empty when none)."""
    if split_labels:
        neg = split.neg_edge_label_index if "neg_edge_label_index" in split else None
        return split.pos_edge_label_index, (neg if neg is not None
                                            else torch.zeros(2, 0, dtype=torch.long))
    label = split.edge_label
    return split.edge_label_index[:, label == 1], split.edge_label_index[:, label == 0]


class Oracle:
    """The draws of the converted model, for plain PyG on the whole graph."""

    def __init__(self, mp_edge_index: torch.Tensor) -> None:
        self.mp = mp_edge_index
        self.count = {"negatives": 0, "reparametrize": 0, "prior": 0}

    def negatives(self, num_pos: int) -> torch.Tensor:
        epoch = self.count["negatives"]
        self.count["negatives"] += 1
        return reference_negative_sampling(self.mp, torch.arange(num_pos), num_nodes=NUM_NODES,
                                           seed=0, epoch=epoch, reject_existing=True)

    @contextmanager
    def randn(self, kind: str):
        def draw(t: torch.Tensor, **_) -> torch.Tensor:
            epoch = self.count[kind]
            self.count[kind] += 1
            return keyed_normal(torch.arange(t.shape[0]), t.shape[1], seed=0, epoch=epoch,
                                kind=kind, dtype=t.dtype)
        with mock.patch.object(torch, "randn_like", draw):
            yield


def auc_ap(scores: torch.Tensor, labels: torch.Tensor) -> tuple[float, float]:
    """Torch AUC (pair counting, ties one half) and AP (scikit-learn's step sum over the
    distinct thresholds, descending)."""
    pos, neg = scores[labels == 1], scores[labels == 0]
    diff = pos.view(-1, 1) - neg.view(1, -1)
    auc = float(((diff > 0).double() + 0.5 * (diff == 0).double()).mean())
    order = torch.argsort(scores, descending=True, stable=True)
    s, y = scores[order], labels[order].double()
    last = torch.ones_like(s, dtype=torch.bool)
    last[:-1] = s[1:] != s[:-1]  # the last row of each group of tied scores
    tp, seen = torch.cumsum(y, 0)[last], torch.arange(1, len(s) + 1, dtype=torch.float64)[last]
    recall = tp / y.sum()
    precision = tp / seen
    steps = torch.cat([recall[:1], recall[1:] - recall[:-1]])
    return auc, float((steps * precision).sum())


def _scalar_rel(a: float, b: float) -> float:
    return abs(a - b) / max(abs(b), 1e-300)


def _step(model, kind: str, x, mp, pos, opt, disc_opt, scale: float, draw_negs=None,
          oracle=None) -> float:
    """One training step as PyG's examples do it (GAE / VGAE: examples/autoencoder.py;
    ARGVA: examples/argva_node_clustering.py with 2 discriminator steps); ``oracle`` given:
    plain PyG on the whole graph with the converted model's draws."""
    model.train()
    opt.zero_grad()
    randn = oracle.randn if oracle is not None else (lambda kind: _nothing())
    # the converted model only (the oracle's full gradients must not be summed over ranks);
    # a no-op where the converted model summed them already
    sync = pyg_sar.all_reduce_gradients if oracle is None else (lambda module: None)
    with randn("reparametrize"):
        z = model.encode(x, mp)
    if kind == "argva":
        for _ in range(2):
            disc_opt.zero_grad()
            with randn("prior"):
                d_loss = model.discriminator_loss(z)
            d_loss.backward()
            sync(model.discriminator)
            disc_opt.step()
    neg = draw_negs(pos.shape[1]) if draw_negs is not None else None
    loss = model.recon_loss(z, pos, neg)
    if kind == "argva":
        loss = loss + model.reg_loss(z)
    if kind in ("vgae", "argva"):
        loss = loss + scale * model.kl_loss()
    loss.backward()
    sync(model)
    opt.step()
    return float(loss)


@contextmanager
def _nothing():
    yield


def _optimizers(model, kind: str):
    if kind != "argva":
        return torch.optim.Adam(model.parameters(), lr=LR), None
    return (torch.optim.Adam(model.encoder.parameters(), lr=LR),
            torch.optim.Adam(model.discriminator.parameters(), lr=LR))


def one_case(ctx, triple, parts, kind: str, split_labels: bool) -> dict:
    train, _, test = triple
    ref = make_model(kind)
    model = copy.deepcopy(ref)
    pyg_sar.convert(model)
    ref_opt, ref_disc = _optimizers(ref, kind)
    opt, disc = _optimizers(model, kind)
    part_train, _, part_test = parts
    ref_pos, _ = pairs(train, split_labels)
    my_pos, _ = pairs(part_train, split_labels)
    oracle = Oracle(train.edge_index)
    scale = 1.0 / NUM_NODES  # examples: 1 / train_data.num_nodes (of the whole graph)
    ref_losses, losses = [], []
    for _ in range(STEPS):
        ref_losses.append(_step(ref, kind, train.x, train.edge_index, ref_pos, ref_opt,
                                ref_disc, scale, draw_negs=oracle.negatives, oracle=oracle))
        losses.append(_step(model, kind, part_train.x, part_train.edge_index, my_pos, opt,
                            disc, scale))
    out = {"losses": max(_scalar_rel(a, b) for a, b in zip(losses, ref_losses)),
           "steps": len(losses)}
    named = dict(ref.named_parameters())
    out["params"] = max(_rel_norm(p, named[n]) for n, p in model.named_parameters())
    # evaluation, as examples/autoencoder.py's test(): eval mode, the test split's graph
    ref.eval()
    model.eval()
    with torch.no_grad():
        z_ref = ref.encode(test.x, test.edge_index)
        z = model.encode(part_test.x, part_test.edge_index)
        ref_tp, ref_tn = pairs(test, split_labels)
        tp, tn = pairs(part_test, split_labels)
        ref_auc, ref_ap = ref.test(z_ref, ref_tp, ref_tn) if _has_sklearn() else (None, None)
        auc, ap = model.test(z, tp, tn)
        scores = torch.cat([ref.decode(z_ref, ref_tp), ref.decode(z_ref, ref_tn)])
        labels = torch.cat([torch.ones(ref_tp.shape[1]), torch.zeros(ref_tn.shape[1])])
        torch_auc, torch_ap = auc_ap(scores, labels)
        # decode(z, pairs) of this rank's pairs (new ids) = PyG's on the same pairs (by *_ids)
        decode_err = 0.0
        for name in ("pos_edge_label", "neg_edge_label") if split_labels else ("edge_label",):
            mine, at = getattr(part_test, f"{name}_index"), getattr(part_test, f"{name}_ids")
            want = ref.decode(z_ref, getattr(test, f"{name}_index")[:, at])
            decode_err = max(decode_err, _rel_norm(model.decode(z, mine), want))
    out["decode"] = decode_err
    out["z"] = _rel_norm(z, z_ref[part_test.node_ids])
    out["auc"] = _scalar_rel(auc, torch_auc)
    out["ap"] = _scalar_rel(ap, torch_ap)
    if ref_auc is not None:
        out["auc_sklearn"] = _scalar_rel(auc, float(ref_auc))
        out["ap_sklearn"] = _scalar_rel(ap, float(ref_ap))
    out["values"] = [auc, ap, losses[0], losses[-1]]
    out["negatives_drawn"] = int(model.__dict__.get("_sar_draws", {}).get("negatives", 0))
    return out


def _has_sklearn() -> bool:
    try:
        import sklearn.metrics  # noqa: F401
    except ImportError:
        return False
    return True


def suite(ctx, cases: list) -> dict:
    """Every case ``[model kind, split_labels]``; results by ``"kind/labels"`` (an error
    raises on every rank: the ranks' collectives stay in step)."""
    out = {}
    triples: dict[bool, tuple] = {}
    for kind, split_labels in cases:
        if split_labels not in triples:
            triple = make_split(split_labels)
            triples[split_labels] = (triple, pyg_sar.distribute(triple, context=ctx))
        triple, parts = triples[split_labels]
        out[f"{kind}/{'split' if split_labels else 'mixed'}"] = one_case(
            ctx, triple, parts, kind, split_labels)
    return out
