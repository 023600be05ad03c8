"""Rank side of tests/partition/test_hetero_link_split.py: ``pyg_sar.distribute`` of PyG's
heterogeneous ``RandomLinkSplit`` triple (users rate movies, with the reverse edge type), every
form in one launch per P.

Every rank makes the same seeded split of the same bipartite ``HeteroData``, distributes it and
reports, per split and pair set, its pairs mapped back to ORIGINAL ids (through every rank's
``node_ids_dict``), their labels, their positions in the input split (``*_ids``), whether it
owns every pair's source, and each split's message-passing edges per edge type (original ids);
the pair ends' features fetched by type with ``pyg_sar.gather``; negatives of
``pyg_sar.link.negative_sampling(part, keys, edge_type=...)`` against
``reference_negative_sampling(..., num_nodes=(users, movies))``; and a few Adam steps of PyG's
``to_hetero`` GraphSAGE encoder with a dot-product classifier (``hetero_link_pred.py``'s
model with the classifier of PyG's hetero link-prediction tutorial) against single-process PyG
on the same split, in float64.
"""
from __future__ import annotations

import copy
import random

import numpy as np
import torch
import torch.nn.functional as F

import pyg_sar
from tests.closeness import rel_error

SPLITS = ("train", "val", "test")
PAIR_SETS = ("edge_label", "pos_edge_label", "neg_edge_label")
ET = ("user", "rates", "movie")
REV = ("movie", "rev_rates", "user")
NUM_USERS, NUM_MOVIES, HIDDEN = 60, 40, 8
NEG_SEED = 5
# name -> RandomLinkSplit keyword arguments (num_val / num_test / edge types apart)
FORMS = {
    "mixed_negatives": dict(split_labels=False, add_negative_train_samples=True),
    "mixed_no_train_negatives": dict(split_labels=False, add_negative_train_samples=False,
                                     neg_sampling_ratio=0.5),
    "split_labels": dict(split_labels=True, add_negative_train_samples=False),
    "split_labels_negatives": dict(split_labels=True, add_negative_train_samples=True,
                                   neg_sampling_ratio=2.0, disjoint_train_ratio=0.3),
    # PyG's hetero_link_pred.py: ratings as edge_label, no negatives
    "ratings": dict(neg_sampling_ratio=0.0),
}


def make_hetero(ratings: bool = False):
    """Users and movies with float64 features, ``rates`` from the latent-factor user-item
    graph of :mod:`pyg_sar.datasets.synthetic_bipartite` and its reverse ``rev_rates`` (PyG's
    ``T.ToUndirected()``); ``ratings``: an integer rating per edge as ``edge_label``, removed
    from the reverse type, as PyG's hetero_link_pred.py does with MovieLens."""
    import torch_geometric.transforms as T
    from torch_geometric.data import HeteroData

    from pyg_sar.datasets.synthetic_bipartite import user_item
    d = user_item(NUM_USERS, NUM_MOVIES, interactions_per_user=6, test_fraction=0.0, seed=3)
    ei = d.edge_index[:, d.edge_index[0] < NUM_USERS]
    g = torch.Generator().manual_seed(1)
    data = HeteroData()
    data["user"].x = torch.randn(NUM_USERS, 4, generator=g, dtype=torch.float64)
    data["movie"].x = torch.randn(NUM_MOVIES, 5, generator=g, dtype=torch.float64)
    data[ET].edge_index = torch.stack([ei[0], ei[1] - NUM_USERS])
    if ratings:
        data[ET].edge_label = torch.randint(0, 6, (ei.shape[1],), generator=g)
    data = T.ToUndirected()(data)
    if ratings:
        del data[REV].edge_label
    return data


def make_triple(form: str, seed: int = 0) -> tuple:
    """PyG's RandomLinkSplit of :func:`make_hetero` in the form ``form``, its generators
    seeded (the same on every rank)."""
    import torch_geometric.transforms as T
    torch.manual_seed(seed)
    random.seed(seed)
    np.random.seed(seed)
    return T.RandomLinkSplit(num_val=0.1, num_test=0.15, edge_types=ET, rev_edge_types=REV,
                             **FORMS[form])(make_hetero(ratings=form == "ratings"))


def sets_of(store) -> list[str]:
    return [s for s in PAIR_SETS if f"{s}_index" in store]


def _all_ids(ctx, part) -> dict[str, torch.Tensor]:
    """Original id of every new id, per node type (from every rank's node_ids_dict)."""
    out = {}
    for t in part.node_types:
        mine = part.node_ids_dict[t].tolist()
        every = ctx.comm.allgather_object(mine) if ctx.world_size > 1 else [mine]
        out[t] = torch.tensor([i for ids in every for i in ids], dtype=torch.long)
    return out


def _gather(part, t: str, z: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
    """Rows of node type ``t`` by new id, from their owners."""
    return pyg_sar.gather(z, index, ids="new", node_offsets=part.node_offsets_dict[t])


def pairs_report(ctx, triple: tuple, parts: tuple) -> dict:
    orig = _all_ids(ctx, parts[2])
    off = parts[2].node_offsets_dict["user"]
    lo, hi = off[ctx.rank], off[ctx.rank + 1]
    res = {}
    for split, ref, p in zip(SPLITS, triple, parts):
        sets = {}
        for s in sets_of(p[ET]):
            typed, label, ids = p[ET][f"{s}_index"], p[ET][s], p[ET][f"{s}_ids"]
            index = typed.as_subclass(torch.Tensor)  # the plain new ids, for bookkeeping
            pairs = torch.stack([orig["user"][index[0]], orig["movie"][index[1]]])
            # the pair ends' rows, fetched by type from their owners
            xu = _gather(p, "user", p.x_dict["user"], index[0])
            xm = _gather(p, "movie", p.x_dict["movie"], index[1])
            # ... and as PyG's decoders index them: typed pairs, one row per node type
            row, col = typed
            pu, pm = p.x_dict["user"][row], p.x_dict["movie"][col]
            gathered = torch.equal(xu, ref["user"].x[pairs[0]]) and \
                torch.equal(xm, ref["movie"].x[pairs[1]]) and \
                torch.equal(pu.as_subclass(torch.Tensor), xu) and \
                torch.equal(pm.as_subclass(torch.Tensor), xm)
            sets[s] = {"pairs": pairs.tolist(), "label": label.tolist(), "ids": ids.tolist(),
                       "owns_sources": bool(((index[0] >= lo) & (index[0] < hi)).all()),
                       "dtype": str(label.dtype), "gathered": gathered}
        mp = {}
        for et in p.edge_types:
            e = p.global_edge_index(et)
            mp["/".join(et)] = e.tolist()
        res[split] = {"sets": sets, "mp": mp,
                      "edge_keys": {"/".join(et): sorted(p.edge_data_dict[et])
                                    for et in p.edge_types}}
    res["shared"] = {"train_val": parts[0].edge_index_dict[ET] is parts[1].edge_index_dict[ET],
                     "val_test": parts[1].edge_index_dict[ET] is parts[2].edge_index_dict[ET]}
    return res


def negatives_report(ctx, triple: tuple, parts: tuple) -> dict:
    """Negatives of the train split's positives (keys: their ids) drawn over the partition,
    mapped to original ids, against the single-process reference (0 when equal)."""
    orig = _all_ids(ctx, parts[0])
    train, p = triple[0], parts[0]
    s = sets_of(p[ET])[0]
    keys, index = p[ET][f"{s}_ids"], p[ET][f"{s}_index"].as_subclass(torch.Tensor)
    ref_edges = train[ET].edge_index
    out = {}
    for method in ("uniform", "degree"):
        for reject in (False, True):
            for keep_src in (False, True):
                src = index[0] if keep_src else None
                neg = pyg_sar.link.negative_sampling(
                    p, keys, edge_type=ET, seed=NEG_SEED, epoch=2, num_neg=3, method=method,
                    reject_existing=reject, src=src)
                ref = pyg_sar.link.reference_negative_sampling(
                    ref_edges, keys, num_nodes=(NUM_USERS, NUM_MOVIES), seed=NEG_SEED,
                    epoch=2, num_neg=3, method=method, reject_existing=reject,
                    src=None if src is None else orig["user"][src])
                neg = neg.as_subclass(torch.Tensor)  # plain new ids, to index the id tables
                got = torch.stack([orig["user"][neg[0]], orig["movie"][neg[1]]])
                out[f"{method}/{reject}/{keep_src}"] = float(not torch.equal(got, ref))
    return out


# ---- the end-to-end training check ----------------------------------------------------------

class GNNEncoder(torch.nn.Module):
    """hetero_link_pred.py's encoder."""

    def __init__(self, hidden_channels: int, out_channels: int) -> None:
        from torch_geometric.nn import SAGEConv
        super().__init__()
        self.conv1 = SAGEConv((-1, -1), hidden_channels)
        self.conv2 = SAGEConv((-1, -1), out_channels)

    def forward(self, x, edge_index):
        return self.conv2(self.conv1(x, edge_index).relu(), edge_index)


class Model(torch.nn.Module):
    """``to_hetero`` encoder and the dot-product classifier
    ``(z_dict['user'][row] * z_dict['movie'][col]).sum(-1)``; ``pick(t, z, ids)`` fetches
    rows of node type ``t`` (``z[ids]`` for PyG, ``pyg_sar.gather`` for the converted copy)."""

    def __init__(self, metadata) -> None:
        from torch_geometric.nn import to_hetero
        super().__init__()
        self.encoder = to_hetero(GNNEncoder(HIDDEN, HIDDEN), metadata, aggr="sum")

    def forward(self, x_dict, edge_index_dict, edge_label_index, pick):
        z_dict = self.encoder(x_dict, edge_index_dict)
        row, col = edge_label_index
        return (pick("user", z_dict["user"], row) * pick("movie", z_dict["movie"], col)).sum(-1)


def _take(t, z, ids):
    return z[ids]


def _supervision(store) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """``(pairs, float labels, positive ids)`` of one split's edge-type store (a HeteroData's
    or a part's): edge_label_index / edge_label, or the pos_ and neg_ sets together."""
    if "edge_label_index" in store:
        label = store["edge_label"].double()
        ids = store["edge_label_ids"] if "edge_label_ids" in store else None
        return store["edge_label_index"], label, ids
    pairs, labels = [store["pos_edge_label_index"]], [store["pos_edge_label"].double()]
    if "neg_edge_label_index" in store:
        pairs.append(store["neg_edge_label_index"])
        labels.append(store["neg_edge_label"].double())
    ids = store["pos_edge_label_ids"] if "pos_edge_label_ids" in store else None
    return torch.cat(pairs, 1), torch.cat(labels), ids


def _has_negatives(store) -> bool:
    if "neg_edge_label_index" in store:
        return True
    return "edge_label" in store and bool((store["edge_label"] == 0).any())


def train_report(ctx, triple: tuple, parts: tuple, form: str, steps: int) -> dict:
    """Losses of ``steps`` Adam steps of PyG on the whole split and of the converted model on
    this rank's parts (negatives drawn per step where the train split has none), the final
    parameters' error, and val / test scores at the end (this rank's pairs)."""
    train_ref, train = triple[0], parts[0]
    torch.manual_seed(7)
    ref = Model(train_ref.metadata())
    with torch.no_grad():  # materialise the lazy shapes (float32), then go float64
        ref({t: x.float() for t, x in train_ref.x_dict.items()}, train_ref.edge_index_dict,
            torch.zeros(2, 1, dtype=torch.long), _take)
    ref = ref.double()
    dist = pyg_sar.convert(copy.deepcopy(ref))

    def pick(t, z, ids, part=train):
        return _gather(part, t, z, ids)

    ref_pairs, ref_labels, _ = _supervision(train_ref[ET])
    pairs, labels, pos_ids = _supervision(train[ET])
    draw = not _has_negatives(train_ref[ET])
    opt_ref = torch.optim.Adam(ref.parameters(), lr=0.01)
    opt = torch.optim.Adam(dist.parameters(), lr=0.01)
    losses_ref, losses = [], []
    for step in range(1, steps + 1):
        rp, rl, p, lab = ref_pairs, ref_labels, pairs, labels
        if draw:  # one negative per positive, keyed by the positives' ids
            n_pos = int((ref_labels != 0).sum())
            neg_ref = pyg_sar.link.reference_negative_sampling(
                train_ref[ET].edge_index, torch.arange(n_pos), seed=NEG_SEED, epoch=step,
                num_nodes=(NUM_USERS, NUM_MOVIES))
            neg = pyg_sar.link.negative_sampling(train, pos_ids, edge_type=ET, seed=NEG_SEED,
                                                 epoch=step)
            rp, rl = torch.cat([rp, neg_ref], 1), torch.cat([rl, rl.new_zeros(n_pos)])
            p, lab = torch.cat([p, neg], 1), torch.cat([lab, lab.new_zeros(neg.shape[1])])
        opt_ref.zero_grad()
        out_ref = ref(train_ref.x_dict, train_ref.edge_index_dict, rp, _take)
        loss_ref = F.binary_cross_entropy_with_logits(out_ref, rl)
        loss_ref.backward()
        opt_ref.step()
        opt.zero_grad()
        out = dist(train.x_dict, train.edge_index_dict, p, pick)
        loss = pyg_sar.nn.functional.binary_cross_entropy_with_logits(out, lab)
        loss.backward()
        pyg_sar.all_reduce_gradients(dist)
        opt.step()
        losses_ref.append(float(loss_ref))
        losses.append(float(loss))
    params_ref = dict(ref.named_parameters())
    param_err = max(rel_error(q.detach(), params_ref[name].detach())
                    for name, q in dist.named_parameters())
    scores = {}
    for i, name in ((1, "val"), (2, "test")):
        split_ref, split = triple[i], parts[i]
        ref_pairs_i, _, _ = _supervision(split_ref[ET])
        pairs_i, _, _ = _supervision(split[ET])
        with torch.no_grad():
            s_ref = ref(split_ref.x_dict, split_ref.edge_index_dict, ref_pairs_i, _take)
            s = dist(split.x_dict, split.edge_index_dict, pairs_i,
                     lambda t, z, ids, part=split: _gather(part, t, z, ids))
        # this rank's pairs are the input split's at their *_ids positions, set by set
        want = []
        offset = 0
        for key in sets_of(split_ref[ET]):
            want.append(split[ET][f"{key}_ids"] + offset)
            offset += split_ref[ET][f"{key}_index"].shape[1]
        scores[name] = rel_error(s, s_ref[torch.cat(want)])
    return {"losses": losses, "losses_ref": losses_ref, "param_err": param_err,
            "scores": scores, "drew_negatives": draw}


def suite(ctx, forms: list, train_forms: list, steps: int = 4) -> dict:
    out = {}
    for form in forms:
        triple = make_triple(form)
        parts = pyg_sar.distribute(triple, method="metis", seed=0, context=ctx)
        res = {"pairs": pairs_report(ctx, triple, parts)}
        if form in ("split_labels", "mixed_negatives"):
            res["negatives"] = negatives_report(ctx, triple, parts)
        if form in train_forms:
            res["train"] = train_report(ctx, triple, parts, form, steps)
        out[form] = res
    return out
