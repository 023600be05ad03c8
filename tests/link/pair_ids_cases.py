"""Rank side of tests/link/test_pair_ids.py (in the shared pairs launch of pairs_cases.py, on a
random partition, so new ids differ from original ids).

* ``z[pairs]``: the rows of those NEW global ids from their owners (``z`` holds each row's
  original id, so a returned row names its node), as :class:`PairRows`; the gradient of a
  global sum reaches each owner once per use on any rank.
* torch's losses on fetched rows (``BCEWithLogitsLoss()``, ``F.mse_loss``) and full
  ``sum`` / ``mean`` equal one process on the concatenation of every rank's pairs, value and
  gradient.
* selection and concatenation keep pairs; arithmetic gives plain tensors; pickling gives the
  plain tensor; indexing a tensor that is not the rank's rows is refused on every rank.
* ``negative_sampling`` in PyG's form: the multiset of negatives (in original ids) is the
  same at every P; a second call draws others.
* ``roc_auc_score`` (sklearn's signature, numpy arrays) equals the AUC of the concatenation.
"""
from __future__ import annotations

import pickle

import torch
import torch.nn.functional as F

from pyg_sar.link.pair_ids import PairIds, PairRows, as_pair_ids
from tests.closeness import rel_error
from tests.link.gather_cases import value_error_message as _error

F64 = torch.float64
TOTAL_NEG = 31  # negatives drawn in PyG's form, split unevenly over the ranks


def _allgather(ctx, t: torch.Tensor) -> torch.Tensor:
    if ctx.comm is None:
        return t
    return torch.cat([torch.as_tensor(x, dtype=t.dtype).reshape(-1, *t.shape[1:])
                      for x in ctx.comm.allgather_object(t.tolist())])


def _pairs(ctx, n: int, seed: int) -> torch.Tensor:
    gen = torch.Generator().manual_seed(seed + ctx.rank)
    m = 0 if (ctx.world_size >= 3 and ctx.rank == 2) else 5 + 3 * ctx.rank
    return torch.randint(0, n, (2, m), generator=gen)


def suite(ctx, part) -> dict:
    g = part.edge_index
    rank, off = ctx.rank, g.node_offsets
    n = off[-1]
    everyone = _allgather(ctx, part.node_ids)  # new id -> original id
    out: dict = {}

    # z[pairs]: the rows of the pairs' nodes, whichever rank owns them
    z = torch.stack([part.node_ids, 10 * part.node_ids], 1).to(F64).requires_grad_()
    pairs = as_pair_ids(_pairs(ctx, n, 10), g)
    src = z[pairs[0]]
    both = z[pairs]
    src.sum().backward()  # a global sum: every rank's uses reach the owners
    all_src = _allgather(ctx, pairs[0].as_subclass(torch.Tensor))
    want_grad = torch.bincount(all_src, minlength=n).to(F64)[off[rank]:off[rank + 1]]
    out["rows"] = bool(isinstance(src, PairRows)
                       and torch.equal(src.detach()[:, 0].long(), everyone[pairs[0].as_subclass(
                           torch.Tensor)])
                       and tuple(both.shape) == (2, pairs.shape[1], 2)
                       and torch.equal(both.detach()[1, :, 0].long(),
                                       everyone[pairs[1].as_subclass(torch.Tensor)]))
    out["rows_grad"] = bool(torch.equal(z.grad[:, 0], want_grad))

    # torch's losses over fetched rows: one process on the concatenation
    gen = torch.Generator().manual_seed(77)
    zg = torch.randn(n, 4, generator=gen, dtype=F64)
    mine = _pairs(ctx, n, 20)
    labels = (torch.arange(mine.shape[1]) % 2).to(F64)
    losses = {}
    for name, loss_fn in (("bce_module", torch.nn.BCEWithLogitsLoss()),
                          ("bce_sum", lambda s, y: F.binary_cross_entropy_with_logits(
                              s, y, reduction="sum")),
                          ("mse", F.mse_loss),
                          ("mean", lambda s, y: (s - y).pow(2).mean()),
                          ("none_then_mean", lambda s, y: F.binary_cross_entropy_with_logits(
                              s, y, reduction="none").mean())):
        zl = zg[off[rank]:off[rank + 1]].clone().requires_grad_()
        pl = as_pair_ids(mine, g)
        score = (zl[pl[0]] * zl[pl[1]]).sum(dim=-1)
        loss = loss_fn(score, labels)
        loss.backward()
        ref_z = zg.clone().requires_grad_()
        all_pairs = _allgather(ctx, mine.t()).t()
        all_labels = _allgather(ctx, labels)
        ref = loss_fn((ref_z[all_pairs[0]] * ref_z[all_pairs[1]]).sum(dim=-1), all_labels)
        ref.backward()
        losses[name] = [rel_error(loss.detach(), ref.detach()),
                        rel_error(zl.grad, ref_z.grad[off[rank]:off[rank + 1]])]
    out["losses"] = losses

    # what keeps pairs pairs
    cat = torch.cat([pairs, as_pair_ids(_pairs(ctx, n, 30), g)], dim=-1)
    col = z.detach()[pairs[0], 1]  # rows of the pairs, then a column
    out["rows_then_column"] = bool(torch.equal(col.as_subclass(torch.Tensor).long(),
                                               10 * everyone[pairs[0].as_subclass(torch.Tensor)]))
    out["pairs_not_first"] = _error(lambda: z.detach()[:, pairs[0]])
    uniq = torch.unique(cat)
    uniq_rows = z.detach()[uniq]  # collective: outside any short-circuit
    out["kept"] = {
        "select": isinstance(pairs[0], PairIds),
        "cat": isinstance(cat, PairIds),
        "flatten": isinstance(cat.flatten(), PairIds),
        "cat_with_plain": not isinstance(torch.cat([pairs, torch.zeros(2, 1, dtype=torch.long)],
                                                   dim=-1), PairIds),
        "arithmetic": not isinstance(pairs + 1, PairIds),
        "unique": isinstance(uniq, PairIds)
        and not isinstance(torch.unique(cat, return_inverse=True)[1], PairIds)
        and torch.equal(uniq_rows[:, 0].long(),
                        everyone[torch.unique(cat.as_subclass(torch.Tensor))]),
        "sort": isinstance(cat.flatten().sort().values, PairIds)
        and not isinstance(cat.flatten().sort().indices, PairIds),
        "float": not isinstance(pairs.to(F64), PairIds),
        "pickle": type(pickle.loads(pickle.dumps(pairs))) is torch.Tensor,
    }
    # a tensor that is not this rank's rows (here the whole table): refused on every rank
    out["not_rows"] = _error(lambda: zg[pairs[0]]) if ctx.world_size > 1 else "one process"

    # negative_sampling in PyG's form: the same multiset of negatives at every P
    from pyg_sar.link import negative_sampling
    cuts = [TOTAL_NEG * r // ctx.world_size + (r == 1) for r in range(ctx.world_size)]
    cuts = [0, *cuts[1:], TOTAL_NEG]
    mine_n = cuts[rank + 1] - cuts[rank]
    draws = []
    for _ in range(2):
        neg = negative_sampling(edge_index=g, num_nodes=part.num_nodes,
                                num_neg_samples=mine_n, method="sparse")
        out["neg_is_pairs"] = isinstance(neg, PairIds) and tuple(neg.shape) == (2, mine_n)
        orig = everyone[_allgather(ctx, neg.as_subclass(torch.Tensor).t())].tolist()
        draws.append(sorted(map(tuple, orig)))
    out["negatives"] = draws

    # roc_auc_score: sklearn's signature, numpy arrays, every rank's rows
    from pyg_sar.link import roc_auc_score
    gen = torch.Generator().manual_seed(90 + rank)
    y = (torch.rand(8 + rank, generator=gen) > 0.4).to(F64)
    s = torch.rand(8 + rank, generator=gen, dtype=F64)
    ys, ss = _allgather(ctx, y), _allgather(ctx, s)
    pos, neg = ss[ys == 1][:, None], ss[ys == 0][None, :]
    want = float(((pos > neg).to(F64) + 0.5 * (pos == neg).to(F64)).mean())
    out["auc"] = [roc_auc_score(y.numpy(), s.numpy()), want]
    return out
