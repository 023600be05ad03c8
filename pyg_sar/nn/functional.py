r"""Global losses and metrics: P ranks, each holding its own nodes, see the single-process value.

Every loss here reduces over the nodes of ALL ranks. With :math:`\ell_i` the per-element loss
of element :math:`i` and :math:`D` the global denominator of the reduction (the number of
selected elements for ``"mean"``, the sum of the class weights of the targets for a weighted
``cross_entropy`` / ``nll_loss``, the number of rows for ``kl_div``'s ``"batchmean"``, 1 for
``"sum"``), rank :math:`r` holding the elements :math:`S_r` returns

.. math::
    \mathcal{L} = \frac{1}{D} \sum_{r} \sum_{i \in S_r} \ell_i
    \qquad\text{with gradient}\qquad
    \frac{\partial}{\partial \theta} \frac{1}{D} \sum_{i \in S_r} \ell_i ,

the single-process value on every rank and this rank's share of the single-process gradient:
the gradients summed over ranks (which a converted model does after every backward pass, see
``SARConfig.sync_gradients``) equal single-process PyG's. Each loss takes the whole local
output and a ``mask`` (``SF.nll_loss(out, y, data.train_mask)``) or inputs masked already
(``SF.nll_loss(out[data.train_mask], y[data.train_mask])``); a mask is a bool tensor with one
entry per row, or integer row indices.

Any other per-node loss becomes global with :func:`global_mean`::

    loss = SF.global_mean(F.smooth_l1_loss(out, y, reduction="none"), data.train_mask)

A reduction of your own that is already this rank's share of a global loss (its terms divided
by a global count) goes through :func:`global_loss`. On more than one rank, a backward pass
through a converted model's output that comes from none of these raises (see
``SARConfig.check_loss``).

Every function takes ``context``: the ranks to reduce over, a
:class:`~pyg_sar.distributed.DistContext` or the :class:`~pyg_sar.DistGraph` the model ran on
(default: :func:`pyg_sar.init`'s context; one process when there is none).

Precision: the per-element losses are torch's, in the dtype torch computes them in (under CPU
or CUDA ``torch.autocast`` the class-index losses run in float32, as autocast decides); when they
are bfloat16 / float16 (a ``model.bfloat16()`` model), the local sum and the global sums are
taken in float32 and the loss is returned in the per-element losses' dtype, the dtype torch's
own reduction returns for that input. Global sums of counts are float64 throughout.
"""
from __future__ import annotations

import math
from typing import Any, Optional

import torch
import torch.nn.functional as F
from torch import Tensor

from pyg_sar.core.collectives import sum_over_ranks
from pyg_sar.core.loss_reduction import REDUCTIONS, local_values, reduce_elements
from pyg_sar.core.loss_reduction import RankShare as _RankShare
from pyg_sar.core.loss_reduction import check_reduction as _check_reduction
from pyg_sar.core.loss_reduction import reduce_over_ranks as _reduce
from pyg_sar.core.precision import accumulate_dtype, is_low_precision
from pyg_sar.distributed.backward import mark_global_loss


def _comm(context: Any):
    """See :func:`pyg_sar.distributed.context.communicator_of`."""
    from pyg_sar.distributed.context import communicator_of
    return communicator_of(context)


def _check_mask(mask: Tensor, rows: int, name: str) -> None:
    if mask.dtype == torch.bool:
        if mask.dim() != 1 or mask.shape[0] != rows:
            raise ValueError(f"{name}: expected a bool mask with {rows} rows, one per row of "
                             f"the input (got shape {tuple(mask.shape)})")
    elif mask.dtype.is_floating_point or mask.dtype.is_complex or mask.dim() != 1:
        raise ValueError(f"{name}: mask must be a bool tensor with one entry per row or a "
                         f"1-d tensor of row indices (got dtype {mask.dtype}, shape "
                         f"{tuple(mask.shape)}); pass class weights as weight=...")


def _select(out: Tensor, target: Optional[Tensor], mask: Optional[Tensor],
            name: str = "pyg_sar.nn.functional") -> tuple[Tensor, Optional[Tensor]]:
    out, target, mask = local_values(out), local_values(target), local_values(mask)
    if mask is None:
        return out, target
    _check_mask(mask, out.shape[0], name)
    if target is not None and target.dim() > 0 and target.shape[0] != out.shape[0]:
        raise ValueError(f"{name}: the target has {target.shape[0]} rows and the input "
                         f"{out.shape[0]}; with a mask both must hold every local row")
    return out[mask], (target[mask] if target is not None and target.dim() > 0 else target)


def _select_like(t: Optional[Tensor], like: Tensor, mask: Optional[Tensor]) -> Optional[Tensor]:
    """An element weight with the input's shape is masked with it; others broadcast."""
    if t is None or mask is None or t.shape != like.shape:
        return t
    return t[mask]


def _local_sum(fn, *args, **kwargs) -> tuple[Tensor, Optional[torch.dtype]]:
    """``fn(*args, reduction="sum")``; for low-precision per-element losses their sum in
    float32, with the dtype to return the loss in (``None``: the sum's own)."""
    per = fn(*args, reduction="none", **kwargs) if _low(args[0]) else None
    if per is None or not is_low_precision(per.dtype):
        return fn(*args, reduction="sum", **kwargs), None
    return per.sum(dtype=accumulate_dtype(per.dtype)), per.dtype


def _low(t: Tensor) -> bool:
    return is_low_precision(t.dtype)


def global_loss(share: Tensor, *, context: Any = None) -> Tensor:
    r"""A loss of your own whose reduction over ranks you did yourself: ``share`` is this
    rank's share of it (for a mean, the local sum divided by the GLOBAL count, e.g. from
    :func:`pyg_sar.global_sum`), so that the global loss is the sum of the shares.

    Returns :math:`\sum_r \text{share}_r` on every rank; the gradient flows to this rank's
    ``share`` unchanged, and the backward pass counts as one through a global loss
    (``SARConfig.check_loss``). A term that every rank computes identically (a weight penalty)
    would be counted once per rank by the summed gradients: add it on one rank only.
    """
    if share.dim() != 0:
        raise ValueError(f"global_loss: expected a scalar share of the loss (got shape "
                         f"{tuple(share.shape)}); reduce it first, or use global_mean")
    comm = _comm(context)
    if comm is None:
        return share
    # a low-precision share is summed over ranks in float32, then returned in its dtype
    return _RankShare.apply(share, sum_over_ranks(share.detach().to(
        accumulate_dtype(share.dtype)), comm))


class _Replicated(torch.autograd.Function):
    """Forward: the term itself. Backward: its gradient on rank 0 only (zeros elsewhere), and
    the pass marked as one through a global loss."""

    @staticmethod
    def forward(ctx, term: Tensor, keep: bool) -> Tensor:
        ctx.keep = keep
        return term.clone()

    @staticmethod
    def backward(ctx, grad: Tensor):
        mark_global_loss()
        return (grad if ctx.keep else torch.zeros_like(grad)), None


def replicated(term: Tensor, *, context: Any = None) -> Tensor:
    r"""A loss term that every rank computes identically (a penalty on the parameters, such
    as ``model.decoder.rel_emb.pow(2).mean()``), counted once.

    The converted model sums the parameter gradients over ranks, so a term every rank adds
    would reach the parameters once per rank. :func:`replicated` returns ``term`` unchanged
    and lets its gradient through on rank 0 only, so the summed gradient is the
    single-process one; the pass counts as one through a global loss.

    Example::

        reg = SF.global_mean(z.pow(2)) + SF.replicated(model.decoder.rel_emb.pow(2).mean())
    """
    comm = _comm(context)
    if comm is None:
        return term
    return _Replicated.apply(term, comm.rank == 0)


def global_mean(values: Tensor, mask: Optional[Tensor] = None, *, context: Any = None
                ) -> Tensor:
    r"""Mean of ``values`` over the selected rows of ALL ranks: the way to make any per-node
    loss global.

    .. math::
        \mathcal{L} = \frac{\sum_r \sum_{i \in S_r} v_i}{\sum_r |S_r|}

    over every element of the selected rows (as ``Tensor.mean`` on the concatenation), e.g.
    ``SF.global_mean(F.smooth_l1_loss(out, y, reduction="none"), data.train_mask)`` equals
    single-process ``F.smooth_l1_loss(out[train_mask], y[train_mask])``.

    Args:
        values: per-node values ``[N, ...]`` (a loss with ``reduction="none"``).
        mask: bool mask or row indices selecting rows (``None``: every row, or ``values``
            masked already).
    """
    comm = _comm(context)
    values, _ = _select(values, None, mask, "global_mean")
    return reduce_elements(values, "mean", comm, "global_mean")


def _class_index_loss(name: str, fn, out: Tensor, target: Tensor, mask: Optional[Tensor],
                      weight: Optional[Tensor], ignore_index: int, reduction: str,
                      context: Any, **kwargs) -> Tensor:
    _check_reduction(reduction, name)
    comm = _comm(context)
    out, target = _select(out, target, mask, name)
    if reduction == "none":
        return fn(out, target, weight=weight, ignore_index=ignore_index, reduction="none",
                  **kwargs)
    local, dtype = _local_sum(fn, out, target, weight=weight, ignore_index=ignore_index,
                              **kwargs)
    if target.is_floating_point():  # class probabilities: torch divides by the rows
        count = out.numel() // out.shape[1] if out.dim() > 1 else 1
    else:
        valid = target != ignore_index
        if weight is None:
            count = valid.sum()
        else:
            count = weight.to(torch.float64)[target[valid]].sum()
    return _reduce(local, count, reduction, comm, name, dtype)


def cross_entropy(out: Tensor, target: Tensor, mask: Optional[Tensor] = None, *,
                  weight: Optional[Tensor] = None, ignore_index: int = -100,
                  reduction: str = "mean", label_smoothing: float = 0.0,
                  context: Any = None) -> Tensor:
    r"""Cross-entropy over the selected nodes of ALL ranks, as
    :func:`torch.nn.functional.cross_entropy` on the concatenation.

    .. math::
        \mathcal{L} = \frac{\sum_r \sum_{i \in S_r} w_{y_i}
        \bigl(-\log \operatorname{softmax}(x_i)_{y_i}\bigr)}{\sum_r \sum_{i \in S_r} w_{y_i}}

    (:math:`w = 1` without ``weight``; targets equal to ``ignore_index`` are left out; with
    class probabilities as targets the denominator is the number of rows). The value is the
    global one on every rank; the gradient is this rank's share (see the module docstring).

    Args:
        out: logits ``[N, C]`` of the local nodes (or of the selected ones).
        target: class indices ``[N]`` or class probabilities ``[N, C]``.
        mask: bool mask or row indices of the nodes in the loss (``None``: all rows).
        weight, ignore_index, label_smoothing: as in :func:`torch.nn.functional.cross_entropy`.
        reduction: ``"mean"`` (global mean), ``"sum"`` (global sum) or ``"none"`` (the local
            per-node losses, not reduced over ranks).
        context: the ranks to reduce over (see the module docstring).

    Raises:
        ValueError: no node is selected on any rank (``"mean"``), or a malformed mask.
    """
    return _class_index_loss("cross_entropy", F.cross_entropy, out, target, mask, weight,
                             ignore_index, reduction, context, label_smoothing=label_smoothing)


def nll_loss(out: Tensor, target: Tensor, mask: Optional[Tensor] = None, *,
             weight: Optional[Tensor] = None, ignore_index: int = -100,
             reduction: str = "mean", context: Any = None) -> Tensor:
    r"""Negative log-likelihood over the selected nodes of ALL ranks, as
    :func:`torch.nn.functional.nll_loss` on the concatenation (for ``log_softmax`` outputs).

    .. math::
        \mathcal{L} = \frac{\sum_r \sum_{i \in S_r} -w_{y_i} x_{i, y_i}}
        {\sum_r \sum_{i \in S_r} w_{y_i}}

    Arguments and errors as in :func:`cross_entropy`.
    """
    return _class_index_loss("nll_loss", F.nll_loss, out, target, mask, weight, ignore_index,
                             reduction, context)


def _elementwise(name: str, fn, out: Tensor, target: Tensor, mask: Optional[Tensor],
                 reduction: str, context: Any, weight: Optional[Tensor] = None,
                 **kwargs) -> Tensor:
    _check_reduction(reduction, name)
    comm = _comm(context)
    weight = _select_like(weight, out, mask)
    out, target = _select(out, target, mask, name)
    if weight is not None:
        kwargs["weight"] = weight
    if reduction == "none":
        return fn(out, target, reduction="none", **kwargs)
    local, dtype = _local_sum(fn, out, target, **kwargs)
    count = math.prod(torch.broadcast_shapes(out.shape, target.shape))
    return _reduce(local, count, reduction, comm, name, dtype)


def binary_cross_entropy(out: Tensor, target: Tensor, mask: Optional[Tensor] = None, *,
                         weight: Optional[Tensor] = None, reduction: str = "mean",
                         context: Any = None) -> Tensor:
    r"""Binary cross-entropy of probabilities over the selected rows of ALL ranks, as
    :func:`torch.nn.functional.binary_cross_entropy` on the concatenation:

    .. math::
        \mathcal{L} = \frac{1}{\sum_r |S_r|} \sum_r \sum_{i \in S_r}
        -w_i \bigl(y_i \log x_i + (1 - y_i) \log(1 - x_i)\bigr)

    over every element of the selected rows. ``weight`` with the input's shape is masked with
    it; another shape broadcasts. Other arguments as in :func:`cross_entropy`.
    """
    return _elementwise("binary_cross_entropy", F.binary_cross_entropy, out, target, mask,
                        reduction, context, weight)


def binary_cross_entropy_with_logits(out: Tensor, target: Tensor,
                                     mask: Optional[Tensor] = None, *,
                                     weight: Optional[Tensor] = None,
                                     pos_weight: Optional[Tensor] = None,
                                     reduction: str = "mean", context: Any = None) -> Tensor:
    r"""Binary cross-entropy of logits over the selected rows of ALL ranks, as
    :func:`torch.nn.functional.binary_cross_entropy_with_logits` on the concatenation:

    .. math::
        \mathcal{L} = \frac{1}{\sum_r |S_r|} \sum_r \sum_{i \in S_r}
        -w_i \bigl(p\, y_i \log \sigma(x_i) + (1 - y_i) \log(1 - \sigma(x_i))\bigr)

    (:math:`p` = ``pos_weight``, per class). Other arguments as in
    :func:`binary_cross_entropy`.
    """
    return _elementwise("binary_cross_entropy_with_logits",
                        F.binary_cross_entropy_with_logits, out, target, mask, reduction,
                        context, weight, pos_weight=pos_weight)


def mse_loss(out: Tensor, target: Tensor, mask: Optional[Tensor] = None, *,
             reduction: str = "mean", context: Any = None) -> Tensor:
    r"""Mean squared error over the selected rows of ALL ranks, as
    :func:`torch.nn.functional.mse_loss` on the concatenation:
    :math:`\mathcal{L} = \frac{1}{\sum_r |S_r|} \sum_r \sum_{i \in S_r} (x_i - y_i)^2` over
    every element. Arguments as in :func:`cross_entropy`.
    """
    return _elementwise("mse_loss", F.mse_loss, out, target, mask, reduction, context)


def l1_loss(out: Tensor, target: Tensor, mask: Optional[Tensor] = None, *,
            reduction: str = "mean", context: Any = None) -> Tensor:
    r"""Mean absolute error over the selected rows of ALL ranks, as
    :func:`torch.nn.functional.l1_loss` on the concatenation:
    :math:`\mathcal{L} = \frac{1}{\sum_r |S_r|} \sum_r \sum_{i \in S_r} |x_i - y_i|` over
    every element. Arguments as in :func:`cross_entropy`.
    """
    return _elementwise("l1_loss", F.l1_loss, out, target, mask, reduction, context)


def kl_div(out: Tensor, target: Tensor, mask: Optional[Tensor] = None, *,
           reduction: str = "mean", log_target: bool = False, context: Any = None) -> Tensor:
    r"""Kullback-Leibler divergence over the selected rows of ALL ranks, as
    :func:`torch.nn.functional.kl_div` on the concatenation (``out`` holds log-probabilities):

    .. math::
        \mathcal{L} = \frac{1}{D} \sum_r \sum_{i \in S_r} \sum_c
        y_{ic} \bigl(\log y_{ic} - x_{ic}\bigr)

    with :math:`D` the global number of elements for ``"mean"``, the global number of rows
    for ``"batchmean"`` (the mathematically correct KL divergence per node, as PyG's glnn
    example uses) and 1 for ``"sum"``. Arguments not listed here are as in
    :func:`cross_entropy`.

    Args:
        reduction: ``"batchmean"``, ``"mean"`` (torch's default), ``"sum"`` or ``"none"``.
        log_target: ``target`` holds log-probabilities.
    """
    _check_reduction(reduction, "kl_div", ("batchmean", *REDUCTIONS))
    comm = _comm(context)
    out, target = _select(out, target, mask, "kl_div")
    if reduction == "none":
        return F.kl_div(out, target, reduction="none", log_target=log_target)
    local, dtype = _local_sum(F.kl_div, out, target, log_target=log_target)
    if reduction == "batchmean":
        count = out.shape[0] if out.dim() > 0 else 1
        return _reduce(local, count, "mean", comm, "kl_div", dtype)
    count = math.prod(torch.broadcast_shapes(out.shape, target.shape))
    return _reduce(local, count, reduction, comm, "kl_div", dtype)


def accuracy(out: Tensor, target: Tensor, mask: Optional[Tensor] = None, *,
             context: Any = None) -> float:
    r"""Fraction of correctly classified selected nodes over ALL ranks:
    :math:`\frac{\sum_r |\{i \in S_r : \hat y_i = y_i\}|}{\sum_r |S_r|}` (``nan`` when no node
    is selected anywhere).

    Args:
        out: logits or probabilities ``[N, C]`` (the prediction is their ``argmax``) or
            predicted classes ``[N]``.
        target: true classes ``[N]``.
        mask: bool mask or row indices (``None``: every row, or inputs masked already).
        context: the ranks to count over (see the module docstring).
    """
    comm = _comm(context)
    out, target = _select(out, target, mask, "accuracy")
    pred = out.argmax(dim=-1) if out.dim() == target.dim() + 1 else out
    if pred.shape != target.shape:
        raise ValueError(f"accuracy: expected logits [N, C] or predictions [N] for a target "
                         f"of shape {tuple(target.shape)} (got shape {tuple(out.shape)})")
    correct = (pred == target).sum().to(torch.float64)
    stats = sum_over_ranks(torch.stack([correct, torch.tensor(
        float(target.numel()), dtype=torch.float64, device=correct.device)]), comm)
    return float(stats[0] / stats[1]) if float(stats[1]) > 0 else float("nan")


def f1_score(out: Tensor, target: Tensor, mask: Optional[Tensor] = None, *,
             average: str = "macro", num_classes: Optional[int] = None,
             context: Any = None) -> float:
    r"""F1 score of the selected nodes over ALL ranks, as scikit-learn's ``f1_score`` on every
    rank's rows together (single-label classification).

    Per class :math:`c`, the true positives, false positives and false negatives are counted
    on each rank and summed over ranks (one all-reduce of ``3 C`` counts), then
    :math:`F_1^c = \frac{2 TP_c}{2 TP_c + FP_c + FN_c}`. ``"macro"`` averages it over the
    classes that occur in the targets or the predictions of some rank (scikit-learn's labels;
    a class with no positive anywhere scores 0, scikit-learn's ``zero_division=0``);
    ``"micro"`` pools the counts (for single-label data it equals the accuracy). F1 on one
    rank's rows alone is not the global F1 (a per-rank macro average weights each rank's
    classes differently).

    Args:
        out: logits ``[N, C]`` (prediction: their ``argmax``) or predicted classes ``[N]``.
        target: true classes ``[N]``.
        mask: bool mask or row indices (``None``: every row, or inputs masked already).
        average: ``"macro"`` or ``"micro"``.
        num_classes: the number of classes (default: the logits' width, else one more than
            the largest class of any rank).
        context: the ranks to count over (see the module docstring).

    Example::

        f1 = SF.f1_score(model(data.x, data.edge_index), data.y, data.test_mask)
    """
    if average not in ("macro", "micro"):
        raise ValueError(f"f1_score: average must be 'macro' or 'micro' (got {average!r})")
    comm = _comm(context)
    out, target = _select(out, target, mask, "f1_score")
    pred = out.argmax(dim=-1) if out.dim() == target.dim() + 1 else out
    if pred.shape != target.shape:
        raise ValueError(f"f1_score: expected logits [N, C] or predictions [N] for a target "
                         f"of shape {tuple(target.shape)} (got shape {tuple(out.shape)})")
    pred, target = pred.reshape(-1).long(), target.reshape(-1).long()
    if num_classes is None:
        local_max = max(int(target.max()) if target.numel() else -1,
                        int(pred.max()) if pred.numel() else -1)
        width = out.shape[-1] if out.dim() == target.dim() + 1 else 0
        biggest = torch.tensor([local_max + 1], dtype=torch.int64, device=target.device)
        if comm is not None and comm.world_size > 1:
            comm.all_reduce(biggest, op="max")
        num_classes = max(int(biggest), int(width))
    for what, t in (("target", target), ("prediction", pred)):
        if t.numel() and (int(t.min()) < 0 or int(t.max()) >= num_classes):
            bad = int(t.min()) if int(t.min()) < 0 else int(t.max())
            raise ValueError(f"f1_score: {what} holds class {bad}, outside [0, {num_classes})")
    ones = torch.ones_like(target, dtype=torch.float64)
    hit = (pred == target).to(torch.float64)
    zeros = torch.zeros(num_classes, dtype=torch.float64, device=target.device)
    tp = zeros.index_add(0, target, hit)
    true = zeros.index_add(0, target, ones)
    predicted = zeros.index_add(0, pred, ones)
    counts = sum_over_ranks(torch.cat([tp, true, predicted]), comm)
    tp, true, predicted = counts.split(num_classes)
    fp, fn = predicted - tp, true - tp
    if average == "micro":
        denominator = float(2 * tp.sum() + fp.sum() + fn.sum())
        return float(2 * tp.sum()) / denominator if denominator > 0 else float("nan")
    present = (true + predicted) > 0
    if not bool(present.any()):
        return float("nan")
    per_class = 2 * tp / (2 * tp + fp + fn).clamp(min=1)
    return float(per_class[present].mean())


# Link-prediction losses and ranking metrics live in pyg_sar.link.metrics (which imports this
# module); re-exported here lazily, on first use, to keep the import order one-way.
_LINK_METRICS = ("roc_auc", "average_precision", "mrr", "hits_at_k", "bpr_loss", "recall_at_k",
                 "precision_at_k", "ndcg_at_k")


def __getattr__(name: str) -> Any:
    if name in _LINK_METRICS:
        from pyg_sar.link import metrics
        return getattr(metrics, name)
    raise AttributeError(f"module 'pyg_sar.nn.functional' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *_LINK_METRICS])
