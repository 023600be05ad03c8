r"""Embedding tables partitioned by owner rank (``pyg_sar.shard_embedding``).

A model such as PyG's ``LightGCN`` holds one trainable row per node of the whole graph. Over a
partition, rank ``r`` needs only the rows of its own nodes, in local order, and only rank
``r`` ever computes a gradient for them (rows of other ranks' nodes reach it through the
engine and :func:`pyg_sar.gather`, whose backward sends the gradients back to the owner). So
the table is cut once, each rank keeps its rows, and its parameter becomes **rank-local**:

* the gradient synchronisation (:mod:`pyg_sar.nn.grad_sync`) neither sums its
  gradient over ranks (it is the owner's already), nor broadcasts rank 0's values into it, nor
  checks it for equality across ranks; :func:`pyg_sar.all_reduce_gradients`,
  :func:`pyg_sar.broadcast_parameters` and :func:`pyg_sar.distributed.sync.check_parameters_equal`
  skip it as well;
* the optimizer state of those rows stays on their rank (nothing to do: optimizers keep state
  per parameter);
* :func:`pyg_sar.save_checkpoint` writes every rank's own rows into its rank file, and
  :func:`pyg_sar.load_checkpoint` reads them back (shard the table before loading).

Because no broadcast covers a rank-local table, every rank must create the full table
identically before sharding it (the same seed, as the single-process model does), or load it.
"""
from __future__ import annotations

from typing import Any

import torch
from torch import Tensor

RANK_LOCAL = "_sar_rank_local"   # attribute set on a rank-local Parameter
SHARD_IDS = "_sar_shard_ids"     # attribute of a sharded Embedding: its rows' original ids


def mark_rank_local(param: torch.nn.Parameter) -> torch.nn.Parameter:
    """Mark ``param`` as holding this rank's own rows (see the module docstring)."""
    setattr(param, RANK_LOCAL, True)
    return param


def is_rank_local(param: Tensor) -> bool:
    """Whether ``param`` is rank-local (never summed, broadcast or compared across ranks)."""
    return bool(getattr(param, RANK_LOCAL, False))


def rank_local_names(model: torch.nn.Module) -> set[str]:
    """Names (as in ``model.state_dict()``) of the model's rank-local parameters."""
    return {name for name, p in model.named_parameters(remove_duplicate=False)
            if is_rank_local(p)}


def _node_ids(part: Any) -> Tensor:
    """Original ids of the rank's nodes: ``part`` is a partition (``.node_ids``), a
    :class:`~pyg_sar.DistGraph` or those ids themselves."""
    if isinstance(part, Tensor):
        ids = part
    else:
        ids = getattr(part, "node_ids", None)
        if ids is None:
            raise ValueError(
                f"shard_embedding: {type(part).__name__} has no node_ids (the original ids of "
                f"the rank's nodes); pass the rank's PartitionData (pyg_sar.load_partition / "
                f"pyg_sar.distribute) or the ids themselves")
    if ids.dim() != 1 or ids.dtype not in (torch.int64, torch.int32):
        raise ValueError(f"shard_embedding: node ids must be a 1-d integer tensor (got "
                         f"{ids.dtype} of shape {tuple(ids.shape)})")
    return ids.long()


def shard_embedding(embedding: torch.nn.Embedding | torch.nn.Parameter,
                    part: Any) -> torch.nn.Embedding | torch.nn.Parameter:
    r"""Keep the rows of this rank's nodes of a table indexed by original node ids.

    ``embedding`` is the single-process table (``num_embeddings`` = the whole graph's node
    count, created identically on every rank, e.g. with the same seed): a
    ``torch.nn.Embedding``, or a ``torch.nn.Parameter`` with one row per node (PyG's
    ``rgcn_link_pred.py`` keeps its node features as ``self.node_emb = Parameter(...)`` and
    passes it whole as ``x``). Afterwards it holds ``weight[part.node_ids]``, the rows of the
    rank's nodes in local order, and its weight is a rank-local parameter
    (:mod:`pyg_sar.nn.embedding`). The change is in place: the ``Parameter`` object stays the
    same, so an optimizer created before still updates it (shard before its first step).
    Sharding again with the same ids does nothing.

    Example::

        data = pyg_sar.distribute(data)
        model = pyg_sar.convert(GAE(RGCNEncoder(data.num_nodes, 500, num_relations), ...))
        pyg_sar.shard_embedding(model.encoder.node_emb, data)   # the rank's rows of the table

    Args:
        embedding: a ``torch.nn.Embedding`` or a ``Parameter`` of ``[num_nodes, *]`` rows,
            indexed by original node ids.
        part: the rank's :class:`~pyg_sar.PartitionData` (its ``node_ids``), a
            :class:`~pyg_sar.DistGraph` with ``node_ids``, or an int64 tensor of ids.

    Returns:
        ``embedding`` itself.

    Raises:
        ValueError: no node ids, an id outside the table, a table sharded already for other
            ids, or ``padding_idx`` set (it names an original id).
    """
    if isinstance(embedding, torch.nn.Embedding):
        weight, holder = embedding.weight, embedding
        if embedding.padding_idx is not None:
            raise ValueError(f"shard_embedding: padding_idx={embedding.padding_idx} names an "
                             f"original node id, which has no meaning in a sharded table")
    elif isinstance(embedding, torch.nn.Parameter) and embedding.dim() >= 1:
        weight, holder = embedding, embedding
    else:
        raise ValueError(f"shard_embedding: expected a torch.nn.Embedding or a Parameter with "
                         f"one row per node (got {type(embedding).__name__})")
    ids = _node_ids(part).to(weight.device)
    done = getattr(holder, SHARD_IDS, None)
    if done is not None:
        if done.shape == ids.shape and torch.equal(done, ids):
            return embedding
        raise ValueError(f"shard_embedding: this embedding was sharded already for "
                         f"{done.numel()} other node ids; build the table again to shard it "
                         f"for another partition")
    n = weight.shape[0]
    if ids.numel() and (int(ids.min()) < 0 or int(ids.max()) >= n):
        bad = ids[(ids < 0) | (ids >= n)][0]
        raise ValueError(f"shard_embedding: node id {int(bad)} is outside the table of "
                         f"{n} rows (is the table indexed by the original ids of the whole "
                         f"graph?)")
    with torch.no_grad():
        weight.data = weight.data[ids].clone()
    if weight.grad is not None:
        weight.grad = None  # a gradient of the full table no longer fits
    if isinstance(embedding, torch.nn.Embedding):
        embedding.num_embeddings = ids.numel()
    setattr(holder, SHARD_IDS, ids)
    mark_rank_local(weight)
    return embedding


def shard_ids(embedding: torch.nn.Module) -> Tensor | None:
    """The original node ids of a sharded embedding's rows, or ``None`` if not sharded."""
    return getattr(embedding, SHARD_IDS, None)
