"""Rules that fold per-block partial aggregates into the exact global aggregate.

A rule sees one block of messages at a time (``msgs[e]`` goes to local destination ``row[e]``) and
must give the same result, and the same gradients, as PyG's single-process ``scatter`` over all
edges at once:

* ``sum`` / ``mean`` add block partials; mean divides by the node's in-degree in the whole graph
  (known locally: every in-edge of a node is stored on its owner).
* ``max`` / ``min`` keep the running extreme and the number of messages that attain it, so the
  backward pass splits each gradient evenly between all tied messages across blocks, exactly as
  ``torch.scatter_reduce(..., "amax", include_self=False)`` does in single-process PyG. Rows with
  no messages are 0.

Precision: messages in bfloat16 / float16 are folded into float32 accumulators (sums, a mean's
degree scaling, sums of squares, tie counts, the online softmax's ``m``, ``l`` and accumulator;
:func:`pyg_sar.core.precision.accumulate_dtype`); extremes are kept in the messages' dtype (a
max is exact in any dtype). ``finalize`` casts the result to the dtype PyG's propagate would
return: the messages' dtype (for attention, that of ``scores * values``). The backward formulas
run in float32 too and hand each message its gradient in the message's dtype. A rule instance
serves one propagate call: ``init`` records the messages' dtype.
"""
from __future__ import annotations

from typing import Any, Optional, Protocol

import torch
from torch import Tensor

from pyg_sar.core.precision import accumulate_dtype, to_accumulate


class CombineRule(Protocol):
    """What the block walk asks of a rule (:class:`SumRule`, :class:`ExtremeRule`,
    :class:`StatsRule`, :class:`SoftmaxRule`). The accumulator is
    the rule's own (a tensor, or a tuple / dict of them); ``state`` is what its backward keeps
    of the forward."""

    def init(self, num_nodes: int, msgs: Any) -> Any:
        """An empty accumulator for ``num_nodes`` destinations, shaped like ``msgs``'s rows."""

    def fold(self, acc: Any, msgs: Any, row: Tensor) -> Any:
        """``acc`` with one block's messages folded in (``msgs[e]`` to destination
        ``row[e]``)."""

    def finalize(self, acc: Any) -> Tensor:
        """The aggregate of every block, in the dtype PyG's propagate returns."""

    def state(self, out: Tensor, acc: Any) -> list[Tensor]:
        """The tensors the backward pass needs (saved by the autograd Function)."""

    def message_grad(self, grad_out: Tensor, msgs: Any, row: Tensor, state: Any) -> Any:
        """The gradient of one block's messages, given the output's gradient."""


def _expand(index: Tensor, like: Tensor) -> Tensor:
    return index.view(-1, *([1] * (like.dim() - 1))).expand_as(like)


def _cast(t: Tensor, dtype: Optional[torch.dtype]) -> Tensor:
    return t if dtype is None or t.dtype == dtype else t.to(dtype)


class SumRule:
    """Sum (``mean=False``) or mean (``mean=True``) of all messages of a node."""

    name = "sum"

    def __init__(self, mean: bool, in_degree: Tensor) -> None:
        self.mean = mean
        self.in_degree = in_degree
        self.dtype: Optional[torch.dtype] = None  # the messages' (the output's) dtype

    def init(self, num_nodes: int, msgs: Tensor) -> Tensor:
        self.dtype = msgs.dtype
        return msgs.new_zeros((num_nodes, *msgs.shape[1:]), dtype=accumulate_dtype(msgs.dtype))

    def adopt(self, partial: Tensor, dtype: torch.dtype) -> Tensor:
        """Start from a block's already-aggregated partial (fused kernel path, accumulated in
        ``accumulate_dtype(dtype)``) of messages of ``dtype``."""
        self.dtype = dtype
        return to_accumulate(partial)

    def fold(self, acc: Tensor, msgs: Tensor, row: Tensor) -> Tensor:
        return acc.index_add_(0, row, _cast(msgs, acc.dtype))

    def fold_partial(self, acc: Tensor, partial: Tensor) -> Tensor:
        """Add a block's already-aggregated partial (fused kernel path)."""
        return acc.add_(partial)

    def _scale(self, like: Tensor) -> Tensor:
        deg = self.in_degree.clamp(min=1).to(like.dtype)
        return deg.view(-1, *([1] * (like.dim() - 1)))

    def finalize(self, acc: Tensor) -> Tensor:
        # acc is the propagate's own accumulator (a sum keeps no state for backward)
        return _cast(acc.div_(self._scale(acc)) if self.mean else acc, self.dtype)

    def node_grad(self, grad_out: Tensor) -> Tensor:
        """Gradient with respect to each block's partial sum (a mean's scaling computed in the
        accumulation dtype, returned in ``grad_out``'s)."""
        if not self.mean:
            return grad_out
        g = to_accumulate(grad_out)
        return _cast(g / self._scale(g), grad_out.dtype)

    def message_grad(self, grad_out: Tensor, msgs: Tensor, row: Tensor, state) -> Tensor:
        return _cast(self.node_grad(grad_out).index_select(0, row), msgs.dtype)

    def state(self, out: Tensor, acc) -> list[Tensor]:
        """Local tensors the backward pass needs (none for a sum)."""
        return []


class ExtremeRule:
    """Element-wise max or min over a node's messages, with exact tie handling."""

    def __init__(self, largest: bool) -> None:
        self.largest = largest
        self.name = "max" if largest else "min"
        self._reduce = "amax" if largest else "amin"

    def init(self, num_nodes: int, msgs: Tensor):
        fill = float("-inf") if self.largest else float("inf")
        value = msgs.new_full((num_nodes, *msgs.shape[1:]), fill)
        # tie counts in the accumulation dtype: bfloat16 counts only up to 256 exactly
        count = msgs.new_zeros((num_nodes, *msgs.shape[1:]), dtype=accumulate_dtype(msgs.dtype))
        return value, count

    def fold(self, acc, msgs: Tensor, row: Tensor):
        value, count = acc
        if msgs.numel() == 0:
            return acc
        fill = float("-inf") if self.largest else float("inf")
        block = msgs.new_full(value.shape, fill).scatter_reduce_(
            0, _expand(row, msgs), msgs, reduce=self._reduce, include_self=True)
        ties = (msgs == block.index_select(0, row)).to(count.dtype)
        block_count = torch.zeros_like(count).index_add_(0, row, ties)
        better = block > value if self.largest else block < value
        equal = block == value
        count = torch.where(better, block_count, torch.where(equal, count + block_count, count))
        value = torch.where(better, block, value)
        return value, count

    def finalize(self, acc) -> Tensor:
        value, count = acc
        return torch.where(count > 0, value, torch.zeros_like(value))

    def state(self, out: Tensor, acc) -> list[Tensor]:
        return [out, acc[1]]

    def message_grad(self, grad_out: Tensor, msgs: Tensor, row: Tensor, state) -> Tensor:
        out, count = state
        winner = (msgs == out.index_select(0, row)) & (count.index_select(0, row) > 0)
        share = _cast(to_accumulate(grad_out) / count.clamp(min=1), msgs.dtype)
        return torch.where(winner, share.index_select(0, row), torch.zeros_like(msgs))


class StatsRule:
    """Per-node statistics of the messages, and a function of them as the output.

    ``stats`` names what is kept across blocks: ``"sum"`` (of the messages), ``"sumsq"`` (of
    their squares), ``"max"`` / ``"min"`` (with tie counts, as :class:`ExtremeRule`; 0 for a
    node without messages). ``finish`` maps the dict of statistics to the output, e.g. a mean
    ``sum / degree`` or a variance ``sumsq / degree - (sum / degree) ** 2``; it must be
    differentiable. Backward differentiates ``finish`` by autograd for each statistic's
    gradient ``g`` and hands it to the messages: ``g`` (sum), ``2 m g`` (sumsq), ``g`` split
    between the tied extremes (max, min).
    """

    name = "stats"
    KINDS = ("sum", "sumsq", "max", "min")

    def __init__(self, stats, finish) -> None:
        unknown = sorted(set(stats) - set(self.KINDS))
        if unknown or not stats:
            raise ValueError(f"StatsRule: statistics must be among {self.KINDS} (got "
                             f"{tuple(stats)})")
        self.stats = tuple(dict.fromkeys(stats))
        self.finish = finish
        self._extreme = {"max": ExtremeRule(True), "min": ExtremeRule(False)}
        self.dtype: Optional[torch.dtype] = None  # the messages' (the output's) dtype

    def init(self, num_nodes: int, msgs: Tensor) -> dict:
        self.dtype = msgs.dtype
        wide = accumulate_dtype(msgs.dtype)
        return {s: self._extreme[s].init(num_nodes, msgs) if s in self._extreme
                else msgs.new_zeros((num_nodes, *msgs.shape[1:]), dtype=wide)
                for s in self.stats}

    def fold(self, acc: dict, msgs: Tensor, row: Tensor) -> dict:
        wide = None
        for s in self.stats:
            if s in ("sum", "sumsq"):
                wide = _cast(msgs, acc[s].dtype) if wide is None else wide
                acc[s] = acc[s].index_add_(0, row, wide if s == "sum" else wide * wide)
            else:
                acc[s] = self._extreme[s].fold(acc[s], msgs, row)
        return acc

    def _values(self, acc: dict) -> dict:
        # finish sees every statistic in the accumulation dtype (extremes are exact in it)
        return {s: to_accumulate(self._extreme[s].finalize(acc[s])) if s in self._extreme
                else acc[s] for s in self.stats}

    def finalize(self, acc: dict) -> Tensor:
        values = self._values(acc)
        out = self.finish(values)
        # a statistic returned as it is would be saved for backward and be the output
        out = out.clone() if any(out is v for v in values.values()) else out
        return _cast(out, self.dtype)

    def state(self, out: Tensor, acc: dict) -> list[Tensor]:
        values, state = self._values(acc), []
        for s in self.stats:
            state.append(values[s])
            if s in self._extreme:
                state.append(acc[s][1])
        return state

    def message_grad(self, grad_out: Tensor, msgs: Tensor, row: Tensor, state) -> Tensor:
        it = iter(state)
        values, counts = {}, {}
        for s in self.stats:
            values[s] = next(it)
            if s in self._extreme:
                counts[s] = next(it)
        leaves = {s: to_accumulate(v).detach().requires_grad_() for s, v in values.items()}
        with torch.enable_grad():
            out = self.finish(leaves)
        grads = torch.autograd.grad(out, list(leaves.values()), _cast(grad_out, out.dtype),
                                    allow_unused=True)
        wide = to_accumulate(msgs)
        total = torch.zeros_like(wide)
        for s, g in zip(leaves, grads):
            if g is None:
                continue
            if s == "sum":
                total = total + g.index_select(0, row)
            elif s == "sumsq":
                total = total + 2 * wide * g.index_select(0, row)
            else:
                value = _cast(values[s], msgs.dtype)  # the extreme, exact in msgs' dtype
                total = total + self._extreme[s].message_grad(g, msgs, row,
                                                              [value, counts[s]])
        return _cast(total, msgs.dtype)


class SoftmaxRule:
    r"""Attention: ``out_i = sum_e drop_e * softmax_i(s)_e * v_e`` with an online softmax.

    Messages are ``(scores [E, H], values [E, H, C], drop [E, H] or None)``, where ``drop`` is
    the dropout multiplier of each attention coefficient (0 or 1 / (1 - p)), applied after the
    normalisation as PyG does. Across blocks the rule keeps the running max ``m``, denominator
    ``l`` and accumulator (rescaled whenever ``m`` grows), so the result is exact and no
    per-edge tensor outlives its block. Backward uses the saved ``(out, m, l)``:
    ``a_e = exp(s_e - m_i) / l_i``, ``dv_e = drop_e a_e g_i`` and
    ``ds_e = a_e (drop_e <g_i, v_e> - <g_i, out_i>)``.
    """

    name = "softmax"

    def __init__(self, semi_grad: bool = False) -> None:
        self.semi_grad = semi_grad  # treat the attention weights as constants in backward
        self.dtype: Optional[torch.dtype] = None  # the output's: that of scores * values

    def init(self, num_nodes: int, msgs):
        scores, values = msgs[0], msgs[1]
        self.dtype = torch.promote_types(scores.dtype, values.dtype)
        wide = accumulate_dtype(self.dtype)
        heads = scores.shape[1:]
        m = scores.new_full((num_nodes, *heads), float("-inf"), dtype=wide)
        return m, scores.new_zeros((num_nodes, *heads), dtype=wide), values.new_zeros(
            (num_nodes, *values.shape[1:]), dtype=wide)

    def fold(self, acc, msgs, row: Tensor):
        m, l, total = acc
        scores, values, drop = msgs
        if scores.numel() == 0:
            return acc
        scores, values = _cast(scores, m.dtype), _cast(values, m.dtype)
        drop = None if drop is None else _cast(drop, m.dtype)
        block_max = scores.new_full(m.shape, float("-inf")).scatter_reduce_(
            0, _expand(row, scores), scores, reduce="amax", include_self=True)
        m_new = torch.maximum(m, block_max)
        # exp(-inf - -inf) is NaN: rows without any score yet keep a zero scale.
        scale = torch.where(torch.isinf(m_new), torch.zeros_like(m), torch.exp(m - m_new))
        p = torch.exp(scores - m_new.index_select(0, row))
        l = l * scale + torch.zeros_like(l).index_add_(0, row, p)
        weight = p if drop is None else p * drop
        total = total * scale.unsqueeze(-1) + torch.zeros_like(total).index_add_(
            0, row, weight.unsqueeze(-1) * values)
        return m_new, l, total

    def _wide(self, acc) -> Tensor:
        """The output in the accumulation dtype."""
        _, l, total = acc
        safe = torch.where(l > 0, l, torch.ones_like(l))
        return total / safe.unsqueeze(-1)

    def finalize(self, acc) -> Tensor:
        return _cast(self._wide(acc), self.dtype)

    def state(self, out: Tensor, acc) -> list[Tensor]:
        # the output as accumulated (not rounded to a low-precision dtype) for the backward
        return [out if out.dtype == acc[0].dtype else self._wide(acc), acc[0], acc[1]]

    def message_grad(self, grad_out: Tensor, msgs, row: Tensor, state):
        out, m, l = state
        scores, values, drop = msgs
        wide = m.dtype
        grad_out = _cast(grad_out, wide)
        g = grad_out.index_select(0, row)
        safe = torch.where(l > 0, l, torch.ones_like(l))
        a = torch.exp(_cast(scores, wide) - m.index_select(0, row)) / safe.index_select(0, row)
        drop = None if drop is None else _cast(drop, wide)
        ad = a if drop is None else a * drop
        grad_values = _cast(ad.unsqueeze(-1) * g, values.dtype)
        dot = (g * _cast(values, wide)).sum(-1)
        if drop is not None:
            dot = dot * drop
        if self.semi_grad:
            return None, grad_values, None
        big_d = (grad_out * out).sum(-1).index_select(0, row)
        grad_scores = _cast(a * (dot - big_d), scores.dtype)
        return grad_scores, grad_values, None


def make_rule(aggr: str, in_degree: Optional[Tensor]):
    """The combine rule for a PyG aggregation name (``sum``/``add``/``mean``/``max``/``min``)."""
    if aggr in ("sum", "add"):
        return SumRule(False, in_degree)
    if aggr == "mean":
        return SumRule(True, in_degree)
    if aggr == "max":
        return ExtremeRule(True)
    if aggr == "min":
        return ExtremeRule(False)
    if aggr == "softmax":
        return SoftmaxRule()
    raise ValueError(f"make_rule: aggregation {aggr!r} cannot be combined across blocks exactly "
                     f"(supported: sum, add, mean, max, min)")
