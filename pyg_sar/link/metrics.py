r"""Global link-prediction losses and ranking metrics: each rank passes its own rows, every
rank gets the value over the rows of ALL ranks, equal to the single-process computation on the
concatenation of the ranks' rows (in rank order; the metrics do not depend on the order).

* :func:`roc_auc`: area under the ROC curve of scores against 0/1 labels;
  :func:`average_precision`: the area under the precision-recall curve (scikit-learn's AP).
* :func:`mrr`, :func:`hits_at_k`: each positive ranked against its own negatives (``neg``
  2-D, OGB ``ogbl-citation2`` style) or against one pool of negatives spread over the ranks
  (``neg`` 1-D, OGB ``ogbl-collab`` / ``ogbl-ddi`` style).
* :func:`bpr_loss`: the Bayesian personalised ranking loss, a global loss (differentiable).
* :func:`recall_at_k`, :func:`precision_at_k`, :func:`ndcg_at_k`: top-``k`` recommendation
  lists (from :func:`~pyg_sar.link.topk_items`) against ground-truth items, per user, as PyG's
  ``torch_geometric.metrics.LinkPredRecall`` / ``LinkPredPrecision`` / ``LinkPredNDCG``.

Every function takes ``context``: the ranks to reduce over, a
:class:`~pyg_sar.distributed.DistContext` or a :class:`~pyg_sar.DistGraph` (default:
:func:`pyg_sar.init`'s context; one process when there is none). The metrics are collective:
every rank calls them, also a rank with no rows. Bad input on any rank raises ``ValueError``
on every rank (the offending rank's error names the value), so no rank waits forever.
Metrics are computed in float64 and returned as 0-dim float64 tensors on the input's device.
"""
from __future__ import annotations

import operator
from typing import Any, Optional, Union

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor

from pyg_sar.core.collectives import sum_over_ranks
from pyg_sar.core.loss_reduction import check_reduction as _check_reduction
from pyg_sar.core.loss_reduction import local_values
from pyg_sar.core.loss_reduction import reduce_over_ranks as _reduce
from pyg_sar.core.precision import accumulate_dtype, is_low_precision
from pyg_sar.distributed.collectives import refuse_together
from pyg_sar.distributed.context import communicator_of as _comm

Pairs = Union[Tensor, tuple[Tensor, Tensor]]


# ---- collective helpers -----------------------------------------------------------------
def _agree(comm, name: str, problem: Optional[str], device: torch.device) -> None:
    """:func:`~pyg_sar.distributed.collectives.refuse_together`: one rank's bad input
    refused on every rank."""
    refuse_together(comm, name, problem, device)


def _allgather_rows(t: Tensor, comm, name: str) -> Tensor:
    """The concatenation over ranks (in rank order) of every rank's ``t`` (rows along dim 0;
    the other dimensions must agree). Memory: the whole concatenation on every rank."""
    if comm is None:
        return t
    t = t.contiguous()
    counts = [int(c) for c in comm.allgather_object(int(t.shape[0]))]
    out = t.new_empty((sum(counts), *t.shape[1:]))
    p = comm.world_size
    comm.all_to_all_single(out, t.repeat(p, *([1] * (t.dim() - 1))), counts,
                           [t.shape[0]] * p)
    row = t[0].numel() * t.element_size() if t.dim() > 1 else t.element_size()
    comm.traffic.add(name, "rows", row * t.shape[0] * (p - 1), row * (out.shape[0] -
                                                                     t.shape[0]))
    return out


def _scalar(value: float, device: torch.device) -> Tensor:
    return torch.tensor(value, dtype=torch.float64, device=device)


def _float_problem(name: str, what: str, t: Tensor) -> Optional[str]:
    if not (t.dtype.is_floating_point or t.dtype in (torch.int32, torch.int64, torch.int16,
                                                      torch.int8, torch.uint8)):
        return f"{name}: {what} must be real numbers (got dtype {t.dtype})"
    if t.dtype.is_floating_point and t.numel() and bool(torch.isnan(t).any()):
        return f"{name}: {what} contains NaN (at index {int(torch.isnan(t).nonzero()[0, 0])})"
    return None


def _check_k(name: str, k: Any) -> int:
    """``k`` as an int (Python, NumPy or 0-dim integer tensor), or ValueError."""
    try:
        value = operator.index(k) if not isinstance(k, bool) else 0
    except TypeError:
        value = 0
    if value <= 0:
        raise ValueError(f"{name}: k must be a positive integer (got {k!r})")
    return value


# ---- AUC --------------------------------------------------------------------------------
def roc_auc(scores: Tensor, labels: Tensor, *, context: Any = None) -> Tensor:
    r"""Area under the ROC curve of ``scores`` against ``labels`` over the rows of ALL ranks,
    exact, as ``sklearn.metrics.roc_auc_score`` on the concatenation:

    .. math::
        \mathrm{AUC} = \frac{1}{|P|\,|N|} \sum_{p \in P} \Bigl(|\{n \in N : s_n < s_p\}|
        + \tfrac12 |\{n \in N : s_n = s_p\}|\Bigr)

    with :math:`P` / :math:`N` the positive / negative rows of all ranks (ties count half).
    The negatives' scores are gathered on every rank (memory and traffic O(total negatives):
    meant for evaluation sets); each rank counts its own positives against them, and the
    counts are summed exactly (integers) before the one division.

    Args:
        scores: ``[n]`` scores of this rank's pairs (logits or probabilities: only their order
            matters).
        labels: ``[n]`` 0/1 labels (bool, integer or float).
        context: the ranks (see the module docstring).

    Returns:
        0-dim float64 tensor, the same on every rank.

    Raises:
        ValueError: shapes differ, a label is not 0 or 1, a score is NaN, or all ranks together
            have no positive or no negative (the AUC is undefined, as in scikit-learn).
    """
    scores, labels = local_values(scores), local_values(labels)
    comm = _comm(context)
    problem = None
    if scores.dim() != 1 or labels.shape != scores.shape:
        problem = (f"roc_auc: scores and labels must be 1-d of the same length (got shapes "
                   f"{tuple(scores.shape)} and {tuple(labels.shape)})")
    else:
        problem = _float_problem("roc_auc", "scores", scores)
        bad = (labels != 0) & (labels != 1)
        if problem is None and bool(bad.any()):
            i = int(bad.nonzero()[0, 0])
            problem = (f"roc_auc: labels must be 0 or 1 (got {labels[i].item()!r} at "
                       f"index {i})")
    _agree(comm, "roc_auc", problem, scores.device)
    s = scores.detach().to(torch.float64)
    positive = labels.detach() == 1
    neg = _allgather_rows(s[~positive], comm, "roc_auc")
    neg = neg.sort().values
    pos = s[positive]
    # 2 x (negatives below + half the tied ones), summed as integers: exact
    twice = (torch.searchsorted(neg, pos, right=False)
             + torch.searchsorted(neg, pos, right=True)).sum()
    stats = sum_over_ranks(torch.stack([twice.to(torch.int64),
                                        torch.tensor(pos.numel(), device=s.device)]), comm)
    n_pos, n_neg = int(stats[1]), int(neg.numel())
    if n_pos == 0 or n_neg == 0:
        raise ValueError(f"roc_auc: the labels of all ranks hold {n_pos} positives and "
                         f"{n_neg} negatives; the AUC needs both")
    return _scalar(int(stats[0]) / (2.0 * n_pos * n_neg), s.device)


def average_precision(scores: Tensor, labels: Tensor, *, context: Any = None) -> Tensor:
    r"""Average precision of ``scores`` against ``labels`` over the rows of ALL ranks, as
    ``sklearn.metrics.average_precision_score`` on the concatenation:

    .. math::
        \mathrm{AP} = \sum_k (R_k - R_{k-1})\, P_k
        = \frac{1}{|P|} \sum_{p \in P} \frac{|\{q \in P : s_q \ge s_p\}|}
          {|\{q \in P \cup N : s_q \ge s_p\}|}

    (precision and recall at each distinct score taken as a threshold; tied scores form one
    threshold). Every rank's positive and negative scores are gathered on every rank (memory
    and traffic O(total rows): meant for evaluation sets), sorted, and the sum taken over the
    sorted positives: the same value, bit for bit, on every rank and for every number of ranks.

    Args:
        scores: ``[n]`` scores of this rank's pairs (only their order matters).
        labels: ``[n]`` 0/1 labels (bool, integer or float).
        context: the ranks (see the module docstring).

    Returns:
        0-dim float64 tensor, the same on every rank.

    Raises:
        ValueError: shapes differ, a label is not 0 or 1, a score is NaN, or all ranks together
            have no positive (the AP is undefined).
    """
    name = "average_precision"
    scores, labels = local_values(scores), local_values(labels)
    comm = _comm(context)
    if scores.dim() != 1 or labels.shape != scores.shape:
        problem = (f"{name}: scores and labels must be 1-d of the same length (got shapes "
                   f"{tuple(scores.shape)} and {tuple(labels.shape)})")
    else:
        problem = _float_problem(name, "scores", scores)
        bad = (labels != 0) & (labels != 1)
        if problem is None and bool(bad.any()):
            i = int(bad.nonzero()[0, 0])
            problem = f"{name}: labels must be 0 or 1 (got {labels[i].item()!r} at index {i})"
    _agree(comm, name, problem, scores.device)
    s = scores.detach().to(torch.float64)
    positive = labels.detach() == 1
    pos = _allgather_rows(s[positive], comm, name).sort().values
    neg = _allgather_rows(s[~positive], comm, name).sort().values
    if pos.numel() == 0:
        raise ValueError(f"{name}: the labels of all ranks hold no positive; the average "
                         f"precision needs one")
    # rows scoring at least each positive's score (the threshold it ends the recall step at)
    tp = pos.numel() - torch.searchsorted(pos, pos, right=False)
    fp = neg.numel() - torch.searchsorted(neg, pos, right=False)
    precision = tp.to(torch.float64) / (tp + fp).to(torch.float64)
    return (precision.sum() / pos.numel()).to(s.device)


# ---- MRR and Hits@K ---------------------------------------------------------------------
def _as_tensor(values: Any) -> Tensor:
    """Arrays as tensors; tensors as they are (roc_auc / average_precision take their
    rank's values and detach them)."""
    return values if isinstance(values, Tensor) else torch.as_tensor(np.asarray(values))


def roc_auc_score(y_true: Any, y_score: Any, *, context: Any = None) -> float:
    """``sklearn.metrics.roc_auc_score(y_true, y_score)`` over the rows of ALL ranks: PyG's
    evaluation line ``roc_auc_score(data.edge_label.cpu().numpy(), out.cpu().numpy())`` runs
    unchanged with this import. Arrays or tensors of this rank's labels and scores (binary
    labels only); collective. See :func:`roc_auc`."""
    return float(roc_auc(_as_tensor(y_score).reshape(-1), _as_tensor(y_true).reshape(-1),
                         context=context))


def average_precision_score(y_true: Any, y_score: Any, *, context: Any = None) -> float:
    """``sklearn.metrics.average_precision_score(y_true, y_score)`` over the rows of ALL
    ranks (binary labels; collective). See :func:`average_precision`."""
    return float(average_precision(_as_tensor(y_score).reshape(-1),
                                   _as_tensor(y_true).reshape(-1), context=context))


def _ranking_inputs(name: str, pos: Tensor, neg: Tensor, comm) -> tuple[Tensor, Tensor]:
    pos, neg = local_values(pos), local_values(neg)
    problem = None
    if pos.dim() != 1:
        problem = f"{name}: pos_scores must be 1-d [n] (got shape {tuple(pos.shape)})"
    elif neg.dim() == 2 and neg.shape[0] != pos.shape[0]:
        problem = (f"{name}: neg_scores [n, m] must have one row per positive: got "
                   f"{neg.shape[0]} rows for {pos.shape[0]} positives")
    elif neg.dim() not in (1, 2):
        problem = (f"{name}: neg_scores must be [n, m] (negatives per positive) or [m] (one "
                   f"pool of negatives) (got shape {tuple(neg.shape)})")
    else:
        problem = (_float_problem(name, "pos_scores", pos)
                   or _float_problem(name, "neg_scores", neg))
    _agree(comm, name, problem, pos.device)
    return pos.detach().to(torch.float64), neg.detach().to(torch.float64)


def _ranks(pos: Tensor, neg: Tensor, comm, name: str) -> Tensor:
    """The rank of each positive among its negatives: 1 + (number higher) + (number tied) /
    2, the mean of the optimistic and the pessimistic rank (OGB's evaluator)."""
    if neg.dim() == 2:
        higher = (neg > pos[:, None]).sum(dim=1)
        tied = (neg == pos[:, None]).sum(dim=1)
    else:
        pool = _allgather_rows(neg, comm, name).sort().values
        at_most = torch.searchsorted(pool, pos, right=True)
        below = torch.searchsorted(pool, pos, right=False)
        higher = pool.numel() - at_most
        tied = at_most - below
    return 1.0 + higher.to(torch.float64) + 0.5 * tied.to(torch.float64)


def _global_mean(values: Tensor, comm) -> Tensor:
    stats = sum_over_ranks(torch.stack([values.sum(), _scalar(values.numel(),
                                                               values.device)]), comm)
    return stats[0] / stats[1] if float(stats[1]) > 0 else _scalar(float("nan"),
                                                                    values.device)


def mrr(pos_scores: Tensor, neg_scores: Tensor, *, context: Any = None) -> Tensor:
    r"""Mean reciprocal rank of the positives of ALL ranks.

    The rank of positive :math:`i` with score :math:`s_i` among its negatives :math:`N_i` is

    .. math::
        r_i = 1 + |\{n \in N_i : s_n > s_i\}| + \tfrac12 |\{n \in N_i : s_n = s_i\}|,

    the mean of the optimistic and the pessimistic rank, as OGB's evaluator for
    ``ogbl-citation2``; the result is :math:`\frac{1}{|P|}\sum_i 1 / r_i` over the positives
    of all ranks.

    * ``neg_scores`` 2-D ``[n, m]``: row ``i`` holds positive ``i``'s own ``m`` negatives
      (e.g. its source with ``m`` corrupted destinations); only local, one all-reduce.
    * ``neg_scores`` 1-D ``[m_r]``: this rank's part of ONE pool of negatives shared by every
      positive of every rank; the pool is gathered on every rank (memory O(total negatives)).

    This is the classic ranking MRR; PyG's ``LinkPredMRR`` is a different metric (the first
    relevant item in a top-k recommendation list).

    Args:
        pos_scores: ``[n]`` scores of this rank's positives (``n`` may be 0).
        neg_scores: ``[n, m]`` or ``[m_r]`` negative scores (see above).
        context: the ranks (see the module docstring).

    Returns:
        0-dim float64 tensor, the same on every rank (``nan`` when no rank has a positive).

    Raises:
        ValueError: a shape does not fit, or a score is NaN.
    """
    comm = _comm(context)
    pos, neg = _ranking_inputs("mrr", pos_scores, neg_scores, comm)
    return _global_mean(1.0 / _ranks(pos, neg, comm, "mrr"), comm)


def hits_at_k(pos_scores: Tensor, neg_scores: Tensor, k: int, *,
              context: Any = None) -> Tensor:
    r"""Hits@K: the fraction of the positives of ALL ranks ranked in the top ``k``.

    * ``neg_scores`` 2-D ``[n, m]`` (negatives per positive, OGB ``ogbl-citation2``): a hit
      when the rank :math:`r_i` of :func:`mrr` (ties count half) is at most ``k``; ``k >= m +
      1`` makes every positive a hit.
    * ``neg_scores`` 1-D ``[m_r]`` (this rank's part of one global pool, OGB ``ogbl-collab``
      / ``ogbl-ddi``): a hit when the positive's score is strictly above the ``k``-th largest
      negative score of the whole pool; when the pool holds fewer than ``k`` negatives every
      positive is a hit (1.0), as OGB's evaluator. The ``k``-th largest is found by a
      distributed top-k: each rank's top ``min(k, m_r)`` scores are gathered (``P * k``
      values), so the pool itself never moves.

    Args:
        pos_scores: ``[n]`` scores of this rank's positives.
        neg_scores: ``[n, m]`` or ``[m_r]`` (see above).
        k: positive integer.
        context: the ranks (see the module docstring).

    Returns:
        0-dim float64 tensor, the same on every rank (``nan`` when no rank has a positive).

    Raises:
        ValueError: ``k`` is not a positive integer, a shape does not fit, a score is NaN.
    """
    k = _check_k("hits_at_k", k)
    comm = _comm(context)
    pos, neg = _ranking_inputs("hits_at_k", pos_scores, neg_scores, comm)
    if neg.dim() == 2:
        hits = (_ranks(pos, neg, comm, "hits_at_k") <= k).to(torch.float64)
        return _global_mean(hits, comm)
    top = _allgather_rows(neg.topk(min(k, neg.numel())).values, comm, "hits_at_k")
    if top.numel() < k:
        return _global_mean(torch.ones_like(pos), comm)
    threshold = top.topk(k).values[-1]
    return _global_mean((pos > threshold).to(torch.float64), comm)


# ---- BPR --------------------------------------------------------------------------------
def bpr_loss(pos_scores: Tensor, neg_scores: Tensor, *, reduction: str = "mean",
             context: Any = None) -> Tensor:
    r"""Bayesian personalised ranking loss over the (positive, negative) pairs of ALL ranks:

    .. math::
        \mathcal{L} = \frac{1}{\sum_r |S_r|} \sum_r \sum_{(i, j) \in S_r}
        -\log \sigma(s_i - s_j)

    the BPR part of PyG's ``LightGCN.recommendation_loss`` / ``BPRLoss`` (its weight
    regulariser is not included: add it on one rank, or as a
    :func:`~pyg_sar.nn.functional.global_loss` share). A
    global loss: the value on every rank, this rank's share of the gradient (summed over
    ranks by a converted model), accepted by the gradient synchronisation's loss check.

    Args:
        pos_scores: ``[n]`` scores of this rank's positive pairs.
        neg_scores: ``[n]`` (one negative per positive) or ``[n, m]`` (``m`` negatives per
            positive: ``n * m`` pairs).
        reduction: ``"mean"`` (over the pairs of all ranks), ``"sum"`` or ``"none"`` (this
            rank's per-pair losses, not reduced over ranks).
        context: the ranks (see the module docstring).

    Raises:
        ValueError: the shapes do not fit, or no rank has a pair (``"mean"``).
    """
    pos_scores, neg_scores = local_values(pos_scores), local_values(neg_scores)
    _check_reduction(reduction, "bpr_loss")
    if (pos_scores.dim() != 1 or neg_scores.dim() not in (1, 2)
            or neg_scores.shape[0] != pos_scores.shape[0]):
        raise ValueError(f"bpr_loss: expected pos_scores [n] and neg_scores [n] or [n, m] "
                         f"(got shapes {tuple(pos_scores.shape)} and "
                         f"{tuple(neg_scores.shape)})")
    comm = _comm(context)
    pos = pos_scores if neg_scores.dim() == 1 else pos_scores[:, None]
    per = -F.logsigmoid(pos - neg_scores)
    if reduction == "none":
        return per
    dtype = per.dtype if is_low_precision(per.dtype) else None
    return _reduce(per.sum(dtype=accumulate_dtype(per.dtype)), per.numel(), reduction, comm,
                   "bpr_loss", dtype)


# ---- top-k recommendation lists ---------------------------------------------------------
def _pairs(name: str, ground_truth: Pairs, n_users: int, padded: bool
           ) -> tuple[Optional[str], Tensor, Tensor]:
    """(problem, users, items) of the ground truth, pairs or a padded ``[n_users, L]``."""
    empty = torch.empty(0, dtype=torch.long)
    if padded:
        if not isinstance(ground_truth, Tensor) or ground_truth.dim() != 2 \
                or ground_truth.shape[0] != n_users:
            shape = tuple(getattr(ground_truth, "shape", ()))
            return (f"{name}: a padded ground truth must be [n_users={n_users}, L] (got "
                    f"shape {shape})", empty, empty)
        valid = ground_truth >= 0
        users = torch.arange(n_users, device=ground_truth.device)[:, None].expand_as(
            ground_truth)
        return None, users[valid], ground_truth[valid]
    if isinstance(ground_truth, Tensor):
        if ground_truth.dim() != 2 or ground_truth.shape[0] != 2:
            return (f"{name}: ground_truth pairs must be [2, g] (user_local_idx, "
                    f"item_global_id) (got shape {tuple(ground_truth.shape)}); a "
                    f"[n_users, L] tensor padded with -1 needs padded=True", empty, empty)
        users, items = ground_truth[0], ground_truth[1]
    else:
        users, items = ground_truth
        if users.shape != items.shape or users.dim() != 1:
            return (f"{name}: ground_truth (users, items) must be two 1-d tensors of the "
                    f"same length (got shapes {tuple(users.shape)} and "
                    f"{tuple(items.shape)})", empty, empty)
    if users.numel() and (int(users.min()) < 0 or int(users.max()) >= n_users):
        bad = users[(users < 0) | (users >= n_users)][0]
        return (f"{name}: ground-truth user index {int(bad)} is out of range for "
                f"{n_users} local users", empty, empty)
    if items.numel() and int(items.min()) < 0:
        return f"{name}: ground-truth item id {int(items.min())} is negative", empty, empty
    return None, users, items


def _relevance(name: str, pred_item_ids: Tensor, ground_truth: Pairs, k: int, padded: bool,
               comm) -> tuple[Tensor, Tensor]:
    """``rel [n_users, min(k, K)]`` (bool: prediction ``j`` of user ``u`` is one of its
    ground-truth items) and the label count per user (duplicates counted, as PyG)."""
    k = _check_k(name, k)
    problem = None
    if pred_item_ids.dim() != 2 or pred_item_ids.dtype.is_floating_point:
        problem = (f"{name}: pred_item_ids must be an integer tensor [n_users, K] (got "
                   f"{pred_item_ids.dtype} of shape {tuple(pred_item_ids.shape)})")
        users = items = torch.empty(0, dtype=torch.long)
    else:
        problem, users, items = _pairs(name, ground_truth, pred_item_ids.shape[0], padded)
    _agree(comm, name, problem, pred_item_ids.device)
    pred = pred_item_ids[:, :k].long()
    users, items = users.to(pred.device).long(), items.to(pred.device).long()
    count = torch.bincount(users, minlength=pred.shape[0])
    # flat keys user * width + item, width above every item id (-1 = padding never matches)
    width = 1 + max(int(pred.max()) if pred.numel() else 0,
                    int(items.max()) if items.numel() else 0)
    keys = (users * width + items).sort().values
    flat = torch.arange(pred.shape[0], device=pred.device)[:, None] * width + pred
    if keys.numel() == 0:
        return torch.zeros_like(pred, dtype=torch.bool), count
    at = torch.searchsorted(keys, flat).clamp(max=keys.numel() - 1)
    return (keys[at] == flat) & (pred >= 0), count


def _user_mean(per_user: Tensor, count: Tensor, comm) -> Tensor:
    """PyG's LinkPredMetric reduction: the sum over users of the metric, divided by the
    number of users with at least one ground-truth item (0 when there is none)."""
    stats = sum_over_ranks(torch.stack([per_user.to(torch.float64).sum(),
                                        (count > 0).sum().to(torch.float64)]), comm)
    return stats[0] / stats[1] if float(stats[1]) > 0 else _scalar(0.0, per_user.device)


def recall_at_k(pred_item_ids: Tensor, ground_truth: Pairs, k: int, *,
                padded: bool = False, context: Any = None) -> Tensor:
    r"""Recall@k over the users of ALL ranks, as PyG's ``LinkPredRecall(k)`` on the
    concatenation: per user :math:`u` with ground-truth items :math:`G_u`,
    :math:`|\text{top}_k(u) \cap G_u| / |G_u|`, averaged over the users that have ground
    truth (0 when no user has any).

    Args:
        pred_item_ids: ``[n_users, K]`` global item ids of this rank's users' recommendations,
            best first (:func:`~pyg_sar.link.topk_items`); the first ``k`` columns count; ``-1``
            (padding) is never relevant.
        ground_truth: ``[2, g]`` pairs (row 0: this rank's local user index, row 1: global
            item id) or a ``(users, items)`` tuple; with ``padded=True`` a ``[n_users, L]``
            tensor of item ids per user, padded with ``-1``. Duplicate pairs count twice, as
            in PyG.
        k: positive integer.
        context: the ranks (see the module docstring).

    Returns:
        0-dim float64 tensor, the same on every rank.

    Raises:
        ValueError: ``k`` is not a positive integer, a malformed shape, a user index out of
            range or a negative item id (named in the message).
    """
    comm = _comm(context)
    rel, count = _relevance("recall_at_k", pred_item_ids, ground_truth, k, padded, comm)
    per_user = rel.sum(dim=1).to(torch.float64) / count.to(torch.float64).clamp(min=1e-7)
    return _user_mean(per_user, count, comm)


def precision_at_k(pred_item_ids: Tensor, ground_truth: Pairs, k: int, *,
                   padded: bool = False, context: Any = None) -> Tensor:
    r"""Precision@k over the users of ALL ranks, as PyG's ``LinkPredPrecision(k)``:
    :math:`|\text{top}_k(u) \cap G_u| / k` averaged over the users that have ground truth.
    Arguments as in :func:`recall_at_k`."""
    k = _check_k("precision_at_k", k)
    comm = _comm(context)
    rel, count = _relevance("precision_at_k", pred_item_ids, ground_truth, k, padded, comm)
    return _user_mean(rel.sum(dim=1).to(torch.float64) / k, count, comm)


def ndcg_at_k(pred_item_ids: Tensor, ground_truth: Pairs, k: int, *,
              padded: bool = False, context: Any = None) -> Tensor:
    r"""NDCG@k (binary relevance) over the users of ALL ranks, as PyG's ``LinkPredNDCG(k)``:

    .. math::
        \mathrm{NDCG}_u = \frac{\sum_{j=1}^{k} \mathrm{rel}_{uj} / \log_2(j + 1)}
        {\sum_{j=1}^{\min(|G_u|, k)} 1 / \log_2(j + 1)}

    averaged over the users that have ground truth. Arguments as in :func:`recall_at_k`.
    """
    k = _check_k("ndcg_at_k", k)
    comm = _comm(context)
    rel, count = _relevance("ndcg_at_k", pred_item_ids, ground_truth, k, padded, comm)
    discount = torch.arange(2, k + 2, dtype=torch.float64, device=rel.device).log2()
    dcg = (rel.to(torch.float64) / discount[:rel.shape[1]]).sum(dim=1)
    idcg = torch.cat([discount.new_zeros(1), (1.0 / discount).cumsum(0)])
    out = dcg / idcg[count.clamp(max=k)]
    return _user_mean(torch.where(torch.isfinite(out), out, torch.zeros_like(out)), count,
                      comm)
