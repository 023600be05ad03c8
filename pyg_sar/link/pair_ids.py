"""Pairs that index like PyG's: ``z[edge_label_index[0]]`` fetches the rows from every rank.

A link split from :func:`pyg_sar.distribute` / :func:`~pyg_sar.load_link_split` and the
negatives of :func:`pyg_sar.link.negative_sampling` hold node pairs in the partition's NEW
global ids, whose ends may live on other ranks. They come as :class:`PairIds`, an int64
tensor that remembers its partition, so that a PyG decoder runs unchanged::

    def decode(self, z, edge_label_index):   # PyG's link_pred.py, not one line changed
        return (z[edge_label_index[0]] * z[edge_label_index[1]]).sum(dim=-1)

* ``z[pairs]`` (``z`` this rank's node rows, e.g. ``model.encode``'s output) is
  :func:`pyg_sar.gather`: the rows of those global ids, from their owners, differentiable;
  ``z[pairs, 1]`` takes the rows, then the column. Pairs elsewhere in an index
  (``z[:, pairs]``) are refused.
  It is collective: every rank indexes (with its own pairs, possibly none), as every rank
  runs the same training loop. A tensor whose row count is not the rank's number of nodes
  is refused with the reason (on every rank), never indexed as if the ids were local.
* Selecting, reshaping, concatenating and moving pairs (``pairs[0]``, ``pairs[:, mask]``,
  ``torch.cat([pos, neg], dim=-1)``, ``.flatten()``, ``.to(device)``) keeps them pairs, as do
  the values of ``unique`` and ``sort`` (not their inverse, counts or positions); arithmetic
  on them gives a plain tensor.
* The rows fetched are :class:`PairRows`: this rank's share of a tensor whose whole is the
  concatenation over the ranks. The losses of ``torch.nn.functional`` (and their
  ``torch.nn`` modules: ``BCEWithLogitsLoss``, ``BCELoss``, ``MSELoss``, ``L1Loss``) with
  ``reduction="mean"`` or ``"sum"`` reduce over every rank, as
  :mod:`pyg_sar.nn.functional`'s do; so do ``.sum()`` and ``.mean()`` over all elements.
  These are collective, like the indexing: every rank computes them (never under an
  ``if rank == 0``).
  Anything else computed from them is this rank's share (``out.sigmoid()``,
  ``out.view(-1)``), and leaving torch (``.numpy()``, ``.tolist()``) gives this rank's
  values: metrics over all ranks are :func:`pyg_sar.link.roc_auc_score` and friends.

``pairs.as_subclass(torch.Tensor)`` is the plain tensor of new ids.
"""
from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any, Optional

import torch
import torch.nn.functional as F
from torch import Tensor

__all__ = ["PairIds", "PairRows", "TypeOwner", "as_pair_ids", "as_typed_pair_ids"]


def as_pair_ids(ids: Tensor, graph: Any) -> PairIds:
    """``ids`` (new global ids of the partition of ``graph``, a DistGraph) as :class:`PairIds`."""
    out = ids.as_subclass(PairIds)
    out._sar_graph = graph
    return out


class TypeOwner:
    """Who owns the nodes of one node type of a heterogeneous partition: the ``P + 1``
    boundaries of the ranks' new-id ranges, and the communication context (what
    :func:`pyg_sar.gather` needs)."""

    def __init__(self, node_type: str, node_offsets: list[int], context: Any) -> None:
        self.node_type, self.node_offsets, self.context = node_type, list(node_offsets), context

    def __eq__(self, other: object) -> bool:
        return isinstance(other, TypeOwner) and other.node_type == self.node_type \
            and other.node_offsets == self.node_offsets and other.context is self.context

    def __hash__(self) -> int:
        return hash((self.node_type, tuple(self.node_offsets)))


def as_typed_pair_ids(ids: Tensor, src: TypeOwner, dst: TypeOwner) -> PairIds:
    """``[2, n]`` pairs of one edge type, row 0 in the new ids of ``src``'s node type and row
    1 in those of ``dst``'s, as :class:`PairIds`: ``pairs[0]`` indexes the source type's rows,
    ``pairs[1]`` the destination type's."""
    out = ids.as_subclass(PairIds)
    out._sar_graph = None
    out._sar_rows = (src, dst)
    return out


def _plain(x: Any) -> Any:
    if isinstance(x, (PairIds, PairRows)):
        return x.as_subclass(Tensor)
    if isinstance(x, (list, tuple)):
        return type(x)(_plain(v) for v in x)
    return x


def _first(args: Any, cls: type) -> Optional[Tensor]:
    """The first ``cls`` among ``args`` (lists and tuples searched too)."""
    return next((a for a in _flatten(args) if isinstance(a, cls)), None)


def _wrap(out: Any, make: Callable[[Tensor], Tensor]) -> Any:
    if isinstance(out, Tensor):
        return make(out)
    if isinstance(out, (list, tuple)) and all(isinstance(o, Tensor) for o in out):
        return type(out)(make(o) for o in out)
    return out


def _call_plain(func: Callable, args: tuple, kwargs: dict) -> Any:
    with torch._C.DisableTorchFunctionSubclass():
        return func(*_plain(args), **_plain(kwargs))


# ---- PairIds -------------------------------------------------------------------------------
# What keeps a tensor of pairs a tensor of pairs: selection, shape and movement, not arithmetic.
_PAIR_KEEPING = {
    Tensor.__getitem__, Tensor.flatten, Tensor.view, Tensor.reshape, Tensor.t, Tensor.chunk,
    Tensor.split, Tensor.unbind, Tensor.clone, Tensor.to, Tensor.cpu, Tensor.cuda,
    Tensor.contiguous, Tensor.flip, Tensor.detach, Tensor.squeeze, Tensor.unsqueeze,
    Tensor.narrow, Tensor.index_select, Tensor.repeat, Tensor.repeat_interleave,
    Tensor.masked_select, Tensor.T.__get__, torch.cat, torch.concat, torch.stack,
    torch.flatten, torch.reshape,
    torch.t, torch.chunk, torch.split, torch.unbind, torch.flip, torch.squeeze,
    torch.unsqueeze, torch.narrow, torch.index_select, torch.repeat_interleave,
    torch.masked_select,
}


# Functions whose first output holds ids (kept pairs) and whose others positions or counts.
_FIRST_OUTPUT_KEEPS = {torch.unique, Tensor.unique, torch.unique_consecutive,
                       Tensor.unique_consecutive, torch.sort, Tensor.sort}


class PairIds(Tensor):
    """An int64 tensor of node pairs in a partition's NEW global ids (see the module's text):
    indexing this rank's node rows with it gathers the rows from their owners."""

    _sar_graph: Any = None
    _sar_rows: Optional[tuple] = None  # typed pairs: the owners of row 0 and row 1

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        typed = _first((*args, *kwargs.values()), PairIds)
        if typed is not None and typed._sar_rows is not None:
            return _typed(func, args, kwargs, typed)
        if func is Tensor.__getitem__ and len(args) == 2 and not isinstance(args[0], PairIds):
            index = args[1]
            if isinstance(index, PairIds):
                return _rows(args[0], index)
            if isinstance(index, tuple) and _first(index, PairIds) is not None:
                return _rows_then(args[0], index)
        if func in (Tensor.index_select, torch.index_select) and len(args) >= 3 \
                and isinstance(args[2], PairIds) and not isinstance(args[0], PairIds):
            dim = args[1]
            if dim not in (0, -args[0].dim()):
                raise ValueError(f"pyg_sar: pairs of new global ids select node rows (dim 0); "
                                 f"got index_select along dim {dim}")
            return _rows(args[0], args[2])
        source = _first((*args, *kwargs.values()), PairIds)
        out = _call_plain(func, args, kwargs)
        if func in _FIRST_OUTPUT_KEEPS and _all_pairs(args, kwargs, source):
            keep = lambda t: as_pair_ids(t, source._sar_graph)  # noqa: E731
            if isinstance(out, Tensor):
                return keep(out)
            return type(out)((keep(out[0]), *out[1:])) if isinstance(out, tuple) else out
        if func not in _PAIR_KEEPING or not _all_pairs(args, kwargs, source):
            return out
        return _wrap(out, lambda t: as_pair_ids(t, source._sar_graph)
                     if not t.is_floating_point() else t)

    def __reduce_ex__(self, protocol):
        # Pickled (or saved) as the plain tensor of ids: a file never refers to this class.
        return self.as_subclass(Tensor).__reduce_ex__(protocol)

    def __repr__(self, *, tensor_contents=None) -> str:
        return "PairIds(" + repr(self.as_subclass(Tensor)) + ")"


_TYPED_KEEPING = {Tensor.clone, Tensor.to, Tensor.cpu, Tensor.cuda, Tensor.contiguous,
                  Tensor.detach, torch.cat, torch.concat}


def _typed(func: Callable, args: tuple, kwargs: dict, source: PairIds) -> Any:
    """Typed pairs (two node types): a row selected (``pairs[0]``, unpacking) is the pairs of
    that row's type; columns selected, moved or concatenated keep both rows' types; indexing
    node rows with both rows at once is refused (which type's rows?)."""
    src, dst = source._sar_rows
    if func is Tensor.__getitem__ and not isinstance(args[0], PairIds):
        raise ValueError(f"pyg_sar: these pairs join node types {src.node_type!r} (row 0) and "
                         f"{dst.node_type!r} (row 1): index each type's rows with its row, "
                         f"z_dict[{src.node_type!r}][pairs[0]], z_dict[{dst.node_type!r}]"
                         f"[pairs[1]]")
    out = _call_plain(func, args, kwargs)
    if func is Tensor.__iter__:
        out = tuple(out)
    rows = None
    if func is Tensor.__getitem__ and args[0] is source:
        index = args[1]
        first = index[0] if isinstance(index, tuple) and index else index
        if isinstance(first, int) and not isinstance(first, bool):
            rows = [(src, dst)[first]]
        elif isinstance(first, slice) and first == slice(None):
            rows = "keep"
    elif func in (Tensor.unbind, torch.unbind, Tensor.__iter__) and \
            kwargs.get("dim", args[1] if len(args) > 1 else 0) == 0:
        rows = [src, dst]
    elif func in _TYPED_KEEPING and _all_typed(args, kwargs, source):
        rows = "keep"
    if rows is None:
        return out
    if rows == "keep":
        return _wrap(out, lambda t: t if t.is_floating_point() else
                     as_typed_pair_ids(t, src, dst))
    if isinstance(out, Tensor):
        return as_pair_ids(out, rows[0])
    wrapped = tuple(as_pair_ids(t, owner) for t, owner in zip(out, rows))
    return iter(wrapped) if func is Tensor.__iter__ else wrapped


def _all_typed(args: tuple, kwargs: dict, source: PairIds) -> bool:
    return all(isinstance(t, PairIds) and t._sar_rows == source._sar_rows
               for t in _tensors(args, kwargs))


def _tensors(args: tuple, kwargs: dict) -> list[Tensor]:
    return [a for a in _flatten((*args, *kwargs.values())) if isinstance(a, Tensor)]


def _all_pairs(args: tuple, kwargs: dict, source: Optional[PairIds]) -> bool:
    """Whether every tensor input is a PairIds of ``source``'s partition (``torch.cat`` of
    pairs with a plain tensor gives a plain tensor)."""
    if source is None:
        return False
    graph = source._sar_graph
    return all(isinstance(t, PairIds) and t._sar_rows is None
               and (t._sar_graph is graph or t._sar_graph == graph)
               for t in _tensors(args, kwargs))


def _flatten(items: Any) -> list:
    out = []
    for a in items:
        if isinstance(a, (list, tuple)):
            out.extend(_flatten(a))
        else:
            out.append(a)
    return out


def _rows(data: Tensor, pairs: PairIds) -> PairRows:
    """``data_global[pairs]`` for ``data`` this rank's node rows: :func:`pyg_sar.gather`."""
    from pyg_sar.link.gather import gather
    graph = pairs._sar_graph
    data = _plain(data)
    ids = pairs.as_subclass(Tensor)
    try:  # gather checks every rank's input and raises on every rank
        if isinstance(graph, TypeOwner):
            rows = gather(data, ids.reshape(-1), ids="new", node_offsets=graph.node_offsets,
                          context=graph.context, name="z[pairs]")
        else:
            rows = gather(data, ids.reshape(-1), ids="new", graph=graph, name="z[pairs]")
    except ValueError as e:
        raise ValueError(f"{e}. Indexing with pairs (PairIds) fetches rows of the rank's nodes "
                         f"from their owners; to index a tensor of another length (e.g. one "
                         f"row per node of the whole graph, in new ids) use the plain ids, "
                         f"pairs.as_subclass(torch.Tensor)") from None
    return as_pair_rows(rows.reshape(*ids.shape, *data.shape[1:]), graph)


def _rows_then(data: Tensor, index: tuple) -> PairRows:
    """``data[pairs, rest...]``: the rows of ``pairs``, then ``rest`` on their trailing
    dimensions; pairs anywhere else, or tensors in ``rest``, are refused (a plain index would
    read the rank's own rows as if the ids were local)."""
    head, rest = index[0], index[1:]
    if not isinstance(head, PairIds) or any(isinstance(r, Tensor) for r in rest):
        raise ValueError(f"pyg_sar: pairs of new global ids select node rows: index the rows "
                         f"first, data[pairs], then the rest (got an index of "
                         f"{[type(i).__name__ for i in index]})")
    rows = _rows(data, head)
    return rows[(slice(None),) * head.dim() + tuple(rest)]


# ---- PairRows ------------------------------------------------------------------------------
def as_pair_rows(rows: Tensor, graph: Any) -> PairRows:
    out = rows.as_subclass(PairRows)
    out._sar_graph = graph
    return out


# torch's losses that PairRows reduce over every rank ("mean" / "sum"); their nn modules call
# them, so BCEWithLogitsLoss() and friends are covered too.
_GLOBAL_LOSSES = (F.binary_cross_entropy_with_logits, F.binary_cross_entropy, F.mse_loss,
                  F.l1_loss, F.smooth_l1_loss, F.huber_loss, F.soft_margin_loss)


_FULL_REDUCTIONS = {Tensor.sum: "sum", torch.sum: "sum", Tensor.mean: "mean",
                    torch.mean: "mean"}


class PairRows(Tensor):
    """Rows fetched by pairs (see the module's text): this rank's share of a tensor whose
    whole is the concatenation over the ranks; torch's losses and full ``sum`` / ``mean`` of
    it reduce over every rank."""

    _sar_graph: Any = None

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        source = _first((*args, *kwargs.values()), PairRows)
        if func in _GLOBAL_LOSSES:
            return _global_loss(func, source, args, kwargs)
        if func in _FULL_REDUCTIONS and _is_full(args, kwargs):
            return _global_reduction(_FULL_REDUCTIONS[func], source, args[0])
        if func is Tensor.__getitem__ and len(args) == 2 and isinstance(args[1], PairIds):
            return PairIds.__torch_function__(func, types, args, kwargs)
        out = _call_plain(func, args, kwargs)
        return _wrap(out, lambda t: as_pair_rows(t, source._sar_graph))

    def __reduce_ex__(self, protocol):
        return self.as_subclass(Tensor).__reduce_ex__(protocol)

    def __repr__(self, *, tensor_contents=None) -> str:
        return "PairRows(" + repr(self.as_subclass(Tensor)) + ")"


def _is_full(args: tuple, kwargs: dict) -> bool:
    """``x.sum()`` / ``x.mean()`` (optionally with ``dtype=``): over every element."""
    if len(args) > 1 and not isinstance(args[1], torch.dtype):
        return False
    return kwargs.get("dim", None) is None and "axis" not in kwargs


def _comm(source: PairRows) -> Any:
    from pyg_sar.distributed.context import communicator_of
    return communicator_of(getattr(source._sar_graph, "context", None))


def _reduce(per_element: Tensor, reduction: str, source: PairRows, name: str) -> Tensor:
    """The global ``"mean"`` / ``"sum"`` of this rank's per-element values."""
    from pyg_sar.core.loss_reduction import reduce_elements
    return reduce_elements(per_element, reduction, _comm(source), name)


def _global_reduction(kind: str, source: PairRows, values: Tensor) -> Tensor:
    return _reduce(_plain(values), kind, source, f"PairRows.{kind}")


def _global_loss(func: Callable, source: PairRows, args: tuple, kwargs: dict) -> Tensor:
    """``func`` (a loss of torch.nn.functional) over the concatenation of every rank's rows."""
    bound = inspect.signature(func).bind(*args, **kwargs)
    given = {k: _plain(v) for k, v in bound.arguments.items()}
    name = func.__name__
    for legacy in ("size_average", "reduce"):
        if given.pop(legacy, None) is not None:
            raise ValueError(f"pyg_sar: {name} on rows fetched by pairs: the deprecated "
                             f"{legacy}= is not supported; use reduction=")
    reduction = given.pop("reduction", "mean")
    if reduction not in ("mean", "sum", "none"):
        raise ValueError(f"pyg_sar: {name}: reduction must be 'mean', 'sum' or 'none' (got "
                         f"{reduction!r})")
    with torch._C.DisableTorchFunctionSubclass():
        per_element = func(**given, reduction="none")
    if reduction == "none":
        return as_pair_rows(per_element, source._sar_graph)
    return _reduce(per_element, reduction, source, name)


# ---- the public entry points that hand out pairs --------------------------------------------
def with_pair_ids(result: Any) -> Any:
    """The parts of a homogeneous link split (``distribute`` / ``load_link_split``) with their
    ``*edge_label_index`` pairs as :class:`PairIds`; anything else unchanged."""
    from pyg_sar.partition.hetero import HeteroPartition
    from pyg_sar.partition.loader import PartitionData
    parts = result if isinstance(result, tuple) else (result,)
    for part in parts:
        if isinstance(part, HeteroPartition):
            _typed_pairs_of(part)
            continue
        graph = getattr(part, "edge_index", None) if isinstance(part, PartitionData) else None
        if graph is None or not hasattr(graph, "node_offsets"):
            continue
        for key in list(part.keys()):
            value = part[key]
            if key.endswith("edge_label_index") and isinstance(value, Tensor) \
                    and not isinstance(value, PairIds):
                part[key] = as_pair_ids(value, graph)
    return result


def type_owner(part: Any, node_type: str) -> TypeOwner:
    """The :class:`TypeOwner` of ``node_type`` in the heterogeneous partition ``part``."""
    return TypeOwner(node_type, part.node_offsets_dict[node_type], part._context)


def _typed_pairs_of(part: Any) -> None:
    """A heterogeneous split's pairs (``part[edge_type].edge_label_index`` ...) as typed
    :class:`PairIds`."""
    for et, data in part.pair_data_dict.items():
        for key, value in list(data.items()):
            if key.endswith("edge_label_index") and isinstance(value, Tensor) \
                    and not isinstance(value, PairIds):
                data[key] = as_typed_pair_ids(value, type_owner(part, et[0]),
                                              type_owner(part, et[-1]))
