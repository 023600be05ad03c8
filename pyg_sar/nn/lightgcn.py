r"""PyG's ``LightGCN`` over a partitioned graph (set up by :func:`pyg_sar.convert`).

``LightGCN`` propagates its embedding table (a row per node of the whole graph) with
``LGConv``. :func:`pyg_sar.convert` marks the table rank-local and gives the model a
converted class whose methods, when handed a :class:`~pyg_sar.DistGraph`:

* shard the table on first use (:func:`pyg_sar.shard_embedding` with the graph's
  ``node_ids``, the original ids of the rank's nodes), so the user's script does not change:
  ``model(part.edge_index, part.edge_label_index)``. The table must be created identically on
  every rank (same seed), as no broadcast covers it. Calling
  ``pyg_sar.shard_embedding(model.embedding, part)`` beforehand does the same explicitly
  (needed before :func:`pyg_sar.load_checkpoint`);
* ``get_embedding`` returns the rank's rows (in local order) of PyG's embedding;
* ``forward`` / ``predict_link`` take ``edge_label_index`` of NEW global ids (a pair's ends
  may live on any rank) and fetch the two ends with :func:`pyg_sar.gather`;
* ``recommendation_loss`` is global: the BPR mean over every rank's pairs
  (:func:`pyg_sar.link.metrics.bpr_loss`) plus the L2 regulariser over the embedding rows of
  ``node_id`` (new global ids, fetched with :func:`pyg_sar.gather`) divided by the global
  number of positives, as PyG's ``BPRLoss``;
* ``link_pred_loss`` is the global BCE over every rank's pairs;
* ``recommend`` ranks candidates of every rank (:func:`pyg_sar.link.topk.topk_items`) and
  returns new global ids.

A plain Tensor ``edge_index`` runs PyG's own methods on an unsharded table.
"""
from __future__ import annotations

from types import SimpleNamespace
from typing import Any, Optional

import torch
from torch import Tensor

from pyg_sar.graph import DistGraph
from pyg_sar.nn.embedding import mark_rank_local, shard_embedding, shard_ids

_CLASSES: dict[type, type] = {}


def _gather(z: Tensor, index: Tensor, graph: Any) -> Tensor:
    from pyg_sar.link.gather import gather
    return gather(z, index, ids="new", node_offsets=graph.node_offsets,
                  context=graph.context, name="lightgcn")


def _check_graph(self, edge_index: DistGraph) -> None:
    """Shard the table for this graph's nodes (first call), or check it fits."""
    if getattr(edge_index, "bipartite", False):
        raise ValueError("pyg_sar: LightGCN propagates one node set; got a bipartite "
                         "DistGraph (use the homogeneous user-item graph)")
    n_local = edge_index.num_nodes_of(edge_index.rank)
    if shard_ids(self.embedding) is None:
        if edge_index.node_ids is None:
            raise ValueError(
                "pyg_sar: LightGCN over a DistGraph without node_ids cannot tell which rows "
                "of its embedding table are this rank's; call "
                "pyg_sar.shard_embedding(model.embedding, part) with the rank's partition "
                "before the first forward")
        if self.embedding.num_embeddings != self.num_nodes:
            raise ValueError(f"pyg_sar: LightGCN's table has {self.embedding.num_embeddings} "
                             f"rows, not num_nodes={self.num_nodes}")
        shard_embedding(self.embedding, edge_index.node_ids)
    rows = self.embedding.num_embeddings
    if rows != n_local:
        raise ValueError(f"pyg_sar: LightGCN's embedding table holds {rows} rows but this "
                         f"rank has {n_local} nodes: it was sharded for another partition")
    self._sar_context = edge_index.context
    # what recommendation_loss's gather needs, without keeping the graph itself
    self._sar_gather_on = SimpleNamespace(node_offsets=list(edge_index.node_offsets),
                                          context=edge_index.context)


def get_embedding(self, edge_index, edge_weight: Optional[Tensor] = None) -> Tensor:
    """PyG's ``get_embedding``; over a DistGraph the rank's rows, in local order."""
    if isinstance(edge_index, DistGraph):
        _check_graph(self, edge_index)
    return self._sar_base.get_embedding(self, edge_index, edge_weight)


def forward(self, edge_index, edge_label_index: Optional[Tensor] = None,
            edge_weight: Optional[Tensor] = None) -> Tensor:
    """PyG's ``forward``; over a DistGraph ``edge_label_index`` holds new global ids, and the
    pair's ends are fetched from their owners (one exchange for both)."""
    if not isinstance(edge_index, DistGraph):
        return self._sar_base.forward(self, edge_index, edge_label_index, edge_weight)
    if edge_label_index is None:
        raise ValueError("pyg_sar: LightGCN over a DistGraph needs edge_label_index (the "
                         "pairs to score, [2, n] new global ids, e.g. part.edge_label_index)")
    if edge_label_index.dim() != 2 or edge_label_index.shape[0] != 2:
        raise ValueError(f"pyg_sar: LightGCN: edge_label_index must be [2, n] (got shape "
                         f"{tuple(edge_label_index.shape)})")
    out = self.get_embedding(edge_index, edge_weight)
    n = edge_label_index.shape[1]
    ends = _gather(out, edge_label_index.reshape(-1), edge_index)
    return (ends[:n] * ends[n:]).sum(dim=-1)


def recommendation_loss(self, pos_edge_rank: Tensor, neg_edge_rank: Tensor,
                        node_id: Optional[Tensor] = None, lambda_reg: float = 1e-4,
                        **kwargs: Any) -> Tensor:
    """PyG's ``recommendation_loss``; on a sharded table a global loss (see the module
    docstring): ``node_id`` holds new global ids (``None``: every row of every rank)."""
    if shard_ids(self.embedding) is None:
        return self._sar_base.recommendation_loss(self, pos_edge_rank, neg_edge_rank, node_id,
                                                  lambda_reg, **kwargs)
    if kwargs:
        raise ValueError(f"pyg_sar: LightGCN.recommendation_loss over a partition takes no "
                         f"BPRLoss options (got {sorted(kwargs)})")
    from pyg_sar.core.collectives import sum_over_ranks
    from pyg_sar.distributed.context import communicator_of as _comm
    from pyg_sar.link.metrics import bpr_loss
    from pyg_sar.nn.functional import global_loss
    ctx = getattr(self, "_sar_context", None)
    loss = bpr_loss(pos_edge_rank, neg_edge_rank, context=ctx)
    if lambda_reg == 0:
        return loss
    emb = self.embedding.weight
    if node_id is not None:
        if getattr(self, "_sar_gather_on", None) is None:
            raise RuntimeError("pyg_sar: LightGCN.recommendation_loss(node_id=...) on a "
                               "sharded table gathers rows by global id: call the model over "
                               "the DistGraph first")
        emb = _gather(emb, node_id, self._sar_gather_on)
    count = torch.tensor([float(pos_edge_rank.shape[0])], dtype=torch.float64,
                         device=emb.device)
    comm = _comm(ctx)
    total = float(sum_over_ranks(count, comm)[0]) if comm is not None else float(count[0])
    share = lambda_reg * emb.pow(2).sum() / total
    return loss + global_loss(share, context=ctx)


def link_pred_loss(self, pred: Tensor, edge_label: Tensor, **kwargs: Any) -> Tensor:
    """PyG's ``link_pred_loss`` (BCE with logits); on a sharded table the mean over the pairs
    of all ranks (:func:`pyg_sar.nn.functional.binary_cross_entropy_with_logits`; its
    ``weight``, ``pos_weight`` and ``reduction`` options)."""
    if shard_ids(self.embedding) is None:
        return self._sar_base.link_pred_loss(self, pred, edge_label, **kwargs)
    from pyg_sar.nn.functional import binary_cross_entropy_with_logits
    return binary_cross_entropy_with_logits(pred, edge_label.to(pred.dtype),
                                            context=getattr(self, "_sar_context", None),
                                            **kwargs)


def recommend(self, edge_index, edge_weight: Optional[Tensor] = None,
              src_index: Optional[Tensor] = None, dst_index: Optional[Tensor] = None,
              k: int = 1, sorted: bool = True) -> Tensor:
    """PyG's ``recommend``; over a DistGraph ``src_index`` (the users this rank asks for,
    default: its own nodes) and ``dst_index`` (the candidates, the same on every rank,
    default: every node) are new global ids, and so is the result ``[n_src, k]``. The
    candidates of every rank are ranked (:func:`pyg_sar.link.topk.topk_items`, ties by lower
    id); the lists always come sorted, best first."""
    if not isinstance(edge_index, DistGraph):
        return self._sar_base.recommend(self, edge_index, edge_weight, src_index, dst_index,
                                        k, sorted)
    from pyg_sar.link.topk import topk_items
    out = self.get_embedding(edge_index, edge_weight)
    offsets = edge_index.node_offsets
    lo, hi = offsets[edge_index.rank], offsets[edge_index.rank + 1]
    users = out if src_index is None else _gather(out, src_index, edge_index)
    if dst_index is None:
        items, order = out, None
    else:
        owned = (dst_index >= lo) & (dst_index < hi)
        items = out[dst_index[owned] - lo]
        # topk_items numbers items rank by rank: the candidates grouped by owner, in order
        owner = torch.bucketize(dst_index, torch.tensor(offsets[1:], device=dst_index.device),
                                right=True)
        order = dst_index[torch.sort(owner, stable=True).indices]
    _, ids = topk_items(users, items, k, context=edge_index.context)
    if order is not None:
        ids = torch.where(ids >= 0, order[ids.clamp(min=0)], ids)
    return ids


_RUNTIME = ("_sar_context", "_sar_gather_on")  # the ranks of the last graph: not copied


def _reduce_ex(self, protocol: int) -> tuple:
    # The generated class cannot be found by name: pickle (and deepcopy) the PyG class and the
    # state without the communicator; the next call over a DistGraph sets it again.
    return _new_converted, (type(self)._sar_base,), _getstate(self)


def _getstate(self) -> dict:
    state = dict(self.__dict__)
    for key in _RUNTIME:
        state.pop(key, None)
    return state


def _setstate(self, state: dict) -> None:
    torch.nn.Module.__setstate__(self, state)
    mark_rank_local(self.embedding.weight)  # a deep-copied Parameter loses its attributes


def _new_converted(base: type) -> Any:
    """An empty converted ``LightGCN`` (unpickling; its state is set next)."""
    cls = _converted_class(base)
    return cls.__new__(cls)


def _converted_class(base: type) -> type:
    cls = _CLASSES.get(base)
    if cls is None:
        cls = type(base.__name__, (base,), {
            "__module__": __name__, "__qualname__": base.__qualname__,
            "__doc__": f"{base.__name__} converted by pyg_sar.convert (see {__name__}).",
            "_sar_base": base, "_sar_embedding_model": True,
            "get_embedding": get_embedding,
            "forward": forward, "recommendation_loss": recommendation_loss,
            "link_pred_loss": link_pred_loss, "recommend": recommend,
            "__reduce_ex__": _reduce_ex, "__getstate__": _getstate,
            "__setstate__": _setstate})
        _CLASSES[base] = cls
    return cls


def convert_lightgcn(model: torch.nn.Module) -> None:
    """Give every ``LightGCN`` in ``model`` the converted class (methods above) and mark its
    table rank-local; a second call changes nothing."""
    from torch_geometric.nn.models import LightGCN
    for module in model.modules():
        if not isinstance(module, LightGCN):
            continue
        base = getattr(type(module), "_sar_base", type(module))
        cls = _converted_class(base)
        module.__class__ = cls
        mark_rank_local(module.embedding.weight)
