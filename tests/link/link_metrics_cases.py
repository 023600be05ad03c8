"""Rank side of tests/link/test_link_metrics.py, and the single-process references.

Every rank builds the same global data (seeded), takes its slice of the rows (uneven slices,
one rank holding none where P >= 3), calls the distributed metric and compares it with the
reference computed on the whole data (the oracle): AUC against a direct O(n^2) count of the
pairs, MRR / Hits@K against OGB's evaluator formulas, recall / precision / NDCG against PyG's
``torch_geometric.metrics`` classes, top-k lists against a full score matrix sorted by (score
descending, id ascending), and the BPR loss with a converted model against PyG's ``BPRLoss``
(values and synchronised gradients).
"""
from __future__ import annotations

import copy

import torch
import torch.nn.functional as F

from pyg_sar.link.metrics import (
    bpr_loss,
    hits_at_k,
    mrr,
    ndcg_at_k,
    precision_at_k,
    recall_at_k,
    roc_auc,
)
from pyg_sar.link.topk import topk_items
from pyg_sar.testing import error_of

F64 = torch.float64


# ---- slices -------------------------------------------------------------------------------
def offsets(n: int, world: int, seed: int) -> list[int]:
    """Uneven contiguous slices of ``n`` rows over ``world`` ranks; rank 1 holds none when
    ``world >= 3``."""
    g = torch.Generator().manual_seed(100 + seed)
    weights = torch.rand(world, generator=g, dtype=F64) + 0.2
    if world >= 3:
        weights[1] = 0.0
    cuts = (weights.cumsum(0) / weights.sum() * n).round().long().tolist()
    return [0] + cuts[:-1] + [n]


def local(t: torch.Tensor, off: list[int], rank: int) -> torch.Tensor:
    return t[off[rank]:off[rank + 1]]


# ---- references ---------------------------------------------------------------------------
def ref_auc(scores: torch.Tensor, labels: torch.Tensor) -> float:
    pos, neg = scores[labels == 1], scores[labels == 0]
    wins = (pos[:, None] > neg[None, :]).double() + 0.5 * (pos[:, None] == neg[None, :]).double()
    return float(wins.sum() / (pos.numel() * neg.numel()))


def ogb_ranks(pos: torch.Tensor, neg: torch.Tensor) -> torch.Tensor:
    """OGB's evaluator (ogbl-citation2): optimistic and pessimistic rank averaged; a 1-d
    ``neg`` is one pool for every positive."""
    if neg.dim() == 1:
        neg = neg[None, :].expand(pos.numel(), -1)
    optimistic = (neg > pos.view(-1, 1)).sum(dim=1)
    pessimistic = (neg >= pos.view(-1, 1)).sum(dim=1)
    return 0.5 * (optimistic + pessimistic).double() + 1


def ref_mrr(pos, neg) -> float:
    return float((1.0 / ogb_ranks(pos, neg)).mean())


def ref_hits(pos, neg, k) -> float:
    if neg.dim() == 2:
        return float((ogb_ranks(pos, neg) <= k).double().mean())
    if neg.numel() < k:  # OGB ogbl-collab: fewer negatives than k -> 1
        return 1.0
    kth = torch.topk(neg, k)[0][-1]
    return float((pos > kth).double().sum() / pos.numel())


def ref_topk(users, items, k, exclude=None):
    """Full score matrix, excluded pairs -inf, order (score desc, id asc), padded to k."""
    scores = users @ items.T
    if exclude is not None:
        scores[exclude[0], exclude[1]] = float("-inf")
    ids = torch.arange(items.shape[0]).expand(users.shape[0], -1)
    order = scores.sort(dim=1, descending=True, stable=True).indices[:, :k]
    s, i = scores.gather(1, order), ids.gather(1, order)
    pad = k - s.shape[1]
    if pad > 0:
        s = torch.cat([s, s.new_full((s.shape[0], pad), float("-inf"))], 1)
        i = torch.cat([i, i.new_full((i.shape[0], pad), -1)], 1)
    return s, i


def pyg_list_metric(name: str, pred, gt_pairs, k: int) -> float:
    """PyG's LinkPredRecall / LinkPredPrecision / LinkPredNDCG in float64."""
    from torch_geometric.metrics import LinkPredNDCG, LinkPredPrecision, LinkPredRecall
    cls = {"recall": LinkPredRecall, "precision": LinkPredPrecision, "ndcg": LinkPredNDCG}[name]
    old = torch.get_default_dtype()
    torch.set_default_dtype(F64)
    try:
        metric = cls(k)
        metric.update(pred, gt_pairs)
        return float(metric.compute())
    finally:
        torch.set_default_dtype(old)


# ---- data ---------------------------------------------------------------------------------
def scores_data(seed: int, n: int, ties: bool) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    s = torch.randn(n, generator=g, dtype=F64)
    if ties:  # few distinct values: many ties between positives and negatives
        s = (s * 2).round() / 2
    y = (torch.rand(n, generator=g) < 0.4).long()
    y[:2] = torch.tensor([0, 1])  # both classes present
    return s, y


def ranking_data(seed: int, n: int, m: int, ties: bool):
    g = torch.Generator().manual_seed(seed)
    pos = torch.randn(n, generator=g, dtype=F64) + 0.5
    neg = torch.randn(n, m, generator=g, dtype=F64)
    pool = torch.randn(3 * n + 5, generator=g, dtype=F64)
    if ties:
        pos, neg, pool = ((t * 2).round() / 2 for t in (pos, neg, pool))
    return pos, neg, pool


def rec_data(seed: int, n_users: int, n_items: int, ties: bool):
    g = torch.Generator().manual_seed(seed)
    d = 4
    users = torch.randn(n_users, d, generator=g, dtype=F64)
    items = torch.randn(n_items, d, generator=g, dtype=F64)
    if ties:  # small integers: exact, many equal scores
        users = torch.randint(-1, 2, (n_users, d), generator=g).double()
        items = torch.randint(-1, 2, (n_items, d), generator=g).double()
    e = 3 * n_users
    exclude = torch.stack([torch.randint(0, n_users, (e,), generator=g),
                           torch.randint(0, max(n_items, 1), (e,), generator=g)])
    gt = torch.stack([torch.randint(0, n_users, (2 * n_users,), generator=g),
                      torch.randint(0, max(n_items, 1), (2 * n_users,), generator=g)])
    gt = gt[:, gt[0] % 5 != 0]  # users without ground truth
    return users, items, exclude, gt


def pairs_local(pairs: torch.Tensor, off: list[int], rank: int) -> torch.Tensor:
    keep = (pairs[0] >= off[rank]) & (pairs[0] < off[rank + 1])
    return torch.stack([pairs[0][keep] - off[rank], pairs[1][keep]])


# ---- rank side ----------------------------------------------------------------------------
def _rel(got: float, want: float) -> float:
    if want != want:  # nan
        return 0.0 if got != got else float("inf")
    return abs(got - want) / max(abs(want), 1e-30)


def metric_cases(world: int, rank: int, ctx=None) -> dict:
    """name -> {"got": value here, "want": reference on the whole data}."""
    out: dict = {}
    for seed, ties in ((1, False), (2, True)):
        s, y = scores_data(seed, 57, ties)
        off = offsets(57, world, seed)
        out[f"auc/{ties}"] = (float(roc_auc(local(s, off, rank), local(y, off, rank),
                                            context=ctx)), ref_auc(s, y))
        out[f"auc_float_bool/{ties}"] = (
            float(roc_auc(local(s, off, rank).float(), local(y, off, rank).bool(),
                          context=ctx)), ref_auc(s.float().double(), y))
        pos, neg, pool = ranking_data(seed, 23, 6, ties)
        off = offsets(23, world, seed)
        poff = offsets(pool.numel(), world, seed + 7)
        lp, ln, lpool = local(pos, off, rank), local(neg, off, rank), local(pool, poff, rank)
        out[f"mrr2d/{ties}"] = (float(mrr(lp, ln, context=ctx)), ref_mrr(pos, neg))
        out[f"mrr1d/{ties}"] = (float(mrr(lp, lpool, context=ctx)), ref_mrr(pos, pool))
        for k in (1, 3, 7, 50):  # 7 = m + 1 (every positive a hit), 50 > pool size
            out[f"hits2d@{k}/{ties}"] = (float(hits_at_k(lp, ln, k, context=ctx)),
                                         ref_hits(pos, neg, k))
        for k in (1, 10, 74, 75, 200):  # pool has 74
            out[f"hits1d@{k}/{ties}"] = (float(hits_at_k(lp, lpool, k, context=ctx)),
                                         ref_hits(pos, pool, k))
        # BPR on plain tensors (the model case checks the gradients)
        out[f"bpr1d/{ties}"] = (float(bpr_loss(lp, ln[:, 0], context=ctx)),
                                float(-F.logsigmoid(pos - neg[:, 0]).mean()))
        out[f"bpr2d_sum/{ties}"] = (
            float(bpr_loss(lp, ln, reduction="sum", context=ctx)),
            float(-F.logsigmoid(pos[:, None] - neg).sum()))
    # no positive on any rank: nan
    empty = torch.zeros(0, dtype=F64)
    out["mrr_empty"] = (float(mrr(empty, torch.zeros(0, 3, dtype=F64), context=ctx)),
                        float("nan"))
    return out


def topk_cases(world: int, rank: int, ctx=None) -> dict:
    """name -> {"scores": rel. error, "ids_equal": bool, plus list metrics (got, want)}."""
    out: dict = {}
    for seed, ties, n_items in ((3, False, 31), (4, True, 31), (5, False, 5)):
        users, items, exclude, gt = rec_data(seed, 19, n_items, ties)
        uoff, ioff = offsets(19, world, seed), offsets(n_items, world, seed + 11)
        lu, li = local(users, uoff, rank), local(items, ioff, rank)
        lex, lgt = pairs_local(exclude, uoff, rank), pairs_local(gt, uoff, rank)
        for k in (1, 4, 40):  # 40 > number of items
            for excl in (False, True):
                s, i = topk_items(lu, li, k, exclude=lex if excl else None,
                                  item_offsets=ioff if seed == 3 else None, context=ctx)
                rs, ri = ref_topk(users, items, k, exclude if excl else None)
                rs, ri = local(rs, uoff, rank), local(ri, uoff, rank)
                finite = torch.isfinite(rs)
                out[f"topk/{seed}/{k}/{excl}"] = {
                    "ids_equal": bool(torch.equal(i, ri)),
                    "inf_equal": bool(torch.equal(torch.isfinite(s), finite)),
                    "scores": float((s[finite] - rs[finite]).abs().max() / rs[finite].abs()
                                    .max()) if finite.any() else 0.0}
        # list metrics of the reference lists, local rows, against PyG on all rows; some
        # ground truth is taken from the lists, so that hits occur at every position
        _, ri_all = ref_topk(users, items, 6, exclude)
        g = torch.Generator().manual_seed(seed)
        u_hit = torch.randint(0, 19, (12,), generator=g)
        j_hit = torch.randint(0, min(6, n_items), (12,), generator=g)
        gt = torch.cat([gt, torch.stack([u_hit, ri_all[u_hit, j_hit]])], dim=1)
        lgt = pairs_local(gt, uoff, rank)
        li_lists = local(ri_all, uoff, rank)  # padded with -1 where n_items < 6
        padded = torch.full((li_lists.shape[0], 9), -1, dtype=torch.long)
        for u, it in lgt.T.tolist():
            row = padded[u]
            row[int((row >= 0).sum())] = it
        for k in (1, 3, 6, 8):  # 8 > the lists' 6 columns
            for name, fn in (("recall", recall_at_k), ("precision", precision_at_k),
                             ("ndcg", ndcg_at_k)):
                want = pyg_list_metric(name, ri_all[:, :n_items], gt, k)  # PyG: no -1
                out[f"{name}@{k}/{seed}"] = (float(fn(li_lists, lgt, k, context=ctx)), want)
                out[f"{name}@{k}/{seed}/tuple"] = (
                    float(fn(li_lists, (lgt[0], lgt[1]), k, context=ctx)), want)
                out[f"{name}@{k}/{seed}/padded"] = (
                    float(fn(li_lists, padded, k, padded=True, context=ctx)), want)
    return out


def bad_input_cases(world: int, rank: int, ctx=None) -> dict:
    """Errors; only rank 0 holds the bad value in the ``one_rank`` cases."""
    s = torch.tensor([0.1, 0.2, 0.3], dtype=F64)
    bad_here = rank == 0
    labels = torch.tensor([0, 1, 2 if bad_here else 1])
    return {
        "auc_labels_one_rank": error_of(lambda: roc_auc(s, labels, context=ctx)),
        "mrr_shape_one_rank": error_of(lambda: mrr(
            s, torch.zeros(2 if bad_here else 3, 4, dtype=F64), context=ctx)),
        "recall_user_one_rank": error_of(lambda: recall_at_k(
            torch.zeros(3, 2, dtype=torch.long),
            torch.tensor([[5 if bad_here else 0], [1]]), 2, context=ctx)),
        "topk_offsets_one_rank": error_of(lambda: topk_items(
            torch.zeros(3, 2, dtype=F64), torch.zeros(2, 2, dtype=F64), 2,
            item_offsets=[2 * r + (1 if bad_here and r else 0) for r in range(world + 1)],
            context=ctx)),
        "topk_exclude_one_rank": error_of(lambda: topk_items(
            torch.zeros(3, 2, dtype=F64), torch.zeros(2, 2, dtype=F64), 2,
            exclude=torch.tensor([[0], [10**6 if bad_here else 0]]), context=ctx)),
    }


def model_case(ctx, parts: str) -> dict:
    """BPR loss through a converted GraphSAGE: value and synchronised parameter gradients
    against PyG's BPRLoss (lambda_reg = 0) on the whole graph."""
    from torch_geometric.data import Data
    from torch_geometric.nn import GraphSAGE
    from torch_geometric.nn.models.lightgcn import BPRLoss

    import pyg_sar

    data = model_graph()
    part = pyg_sar.load_partition(parts, ctx.rank)
    torch.manual_seed(0)
    ref = GraphSAGE(5, 8, num_layers=2, out_channels=3).double()
    model = pyg_sar.convert(copy.deepcopy(ref))
    assert isinstance(data, Data)
    out: dict = {}
    cases = {
        # one negative per positive: PyG's BPRLoss exactly
        "bpr_1neg": (lambda o, m: BPRLoss(lambda_reg=0)(o[m, 0], o[m, 1]),
                     lambda o, m: bpr_loss(o[m, 0], o[m, 1])),
        # two negatives per positive: n * 2 pairs
        "bpr_2neg": (lambda o, m: -F.logsigmoid(o[m, :1] - o[m, 1:]).mean(),
                     lambda o, m: bpr_loss(o[m, 0], o[m, 1:])),
        "bpr_sum": (lambda o, m: -F.logsigmoid(o[m, 0] - o[m, 2]).sum(),
                    lambda o, m: bpr_loss(o[m, 0], o[m, 2], reduction="sum")),
    }
    for name, (want_fn, got_fn) in cases.items():
        ref.zero_grad(set_to_none=True)
        model.zero_grad(set_to_none=True)
        want = want_fn(ref(data.x, data.edge_index), data.train_mask)
        got = got_fn(model(part.x.double(), part.graph), part.train_mask)
        want.backward()
        got.backward()
        scale = max(float(p.grad.abs().max()) for p in ref.parameters())
        grad = max(float((p.grad - q.grad).abs().max()) / scale
                   for p, q in zip(ref.parameters(), model.parameters(), strict=True))
        out[name] = {"value": _rel(float(got), float(want)), "grad": grad,
                     "values": ctx.comm.allgather_object(float(got))}
    return out


def model_graph():
    from torch_geometric.data import Data
    g = torch.Generator().manual_seed(0)
    n = 50
    ei = torch.unique(torch.randint(0, n, (2, 250), generator=g), dim=1)
    return Data(x=torch.randn(n, 5, generator=g, dtype=F64), edge_index=ei,
                train_mask=torch.rand(n, generator=g) < 0.5, num_nodes=n)


def traffic_case(ctx) -> dict:
    """The ring's bytes in the traffic ledger: every block but the next rank's is sent, every
    block but this rank's is received."""
    users, items, _, _ = rec_data(3, 19, 31, False)
    world, rank = ctx.world_size, ctx.rank
    uoff, ioff = offsets(19, world, 3), offsets(31, world, 14)
    ctx.comm.traffic.reset()
    topk_items(local(users, uoff, rank), local(items, ioff, rank), 4, item_offsets=ioff)
    got = ctx.comm.traffic.as_dict().get("topk_items", {}).get("rows", {"sent": 0, "recv": 0})
    ctx.comm.traffic.reset()
    row = items.shape[1] * items.element_size()
    size = [ioff[r + 1] - ioff[r] for r in range(world)]
    nxt = (rank + 1) % world
    want = {"sent": (31 - size[nxt]) * row if world > 1 else 0,
            "recv": (31 - size[rank]) * row if world > 1 else 0}
    return {"got": got, "want": want}


def suite(ctx, parts: str) -> dict:
    """Every case on this rank; values gathered so the test sees every rank's."""
    world, rank = ctx.world_size, ctx.rank
    metrics = metric_cases(world, rank)
    topk = topk_cases(world, rank)
    mine = {**{k: v[0] for k, v in metrics.items()},
            **{k: v[0] for k, v in topk.items() if isinstance(v, tuple)}}
    same = ctx.comm.allgather_object({k: repr(v) for k, v in mine.items()})  # nan-safe
    return {"metrics": metrics, "topk": topk, "bad": bad_input_cases(world, rank),
            "model": model_case(ctx, parts), "same_on_ranks": same == [same[0]] * world,
            "traffic": traffic_case(ctx)}
