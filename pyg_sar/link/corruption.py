r"""Negatives by corrupting one end of each positive pair, the same at every number of ranks.

PyG's ``rgcn_link_pred.py`` draws its negatives by replacing the head or the tail of each
training triple (a fair coin per triple) by a node drawn uniformly from the whole graph.
Written with ``torch.rand`` over the rank's triples, each rank would draw from its own stream,
and the union of the negatives would depend on the number of ranks. :func:`corrupt_pairs`
draws them keyed instead: the coin and the node of a pair are a pure function of ``(seed,
epoch, original id of its head, original id of its tail)`` through the counter-based generator
of :mod:`pyg_sar.ops.sampling_rng`, and the node is drawn in ORIGINAL ids, so a partition into
any number of parts (and :func:`reference_corrupt_pairs` on the whole graph) corrupts every
pair alike. Pairs with equal ends (the same two nodes under two relations) are corrupted alike.

It is the script's ``negative_sampling(edge_index, num_nodes)`` with PyG's argument order, so
one line binds the script's name to it::

    negative_sampling = pyg_sar.link.corrupt_pairs   # after the script's own def
"""
from __future__ import annotations

from typing import Any, Optional

import torch
from torch import Tensor

from pyg_sar.ops.sampling_rng import combine_tensor, dart_tensor, make_key

__all__ = ["corrupt_pairs", "reference_corrupt_pairs"]

_TAG = 0x434F5252  # "CORR": separates these draws from other users of (seed, epoch)
DRAWS = "_sar_corruption_draws"  # the per-graph count of calls without epoch=


def _corrupt(head: Tensor, tail: Tensor, *, seed: int, epoch: int,
             num_nodes: int) -> tuple[Tensor, Tensor]:
    """For pairs ``(head, tail)`` of ORIGINAL ids: which end is replaced (``True``: the head)
    and the original id that replaces it."""
    base = torch.tensor(make_key(_TAG, seed, epoch), dtype=torch.long, device=head.device)
    keys = combine_tensor(combine_tensor(base, head.long()), tail.long())
    coin = dart_tensor(keys, torch.zeros_like(keys)) < 0.5
    u = dart_tensor(keys, torch.ones_like(keys))
    node = (u * num_nodes).floor().long().clamp_(max=max(num_nodes - 1, 0))
    return coin, node


def _check(name: str, seed: Any, epoch: Any) -> None:
    for what, v in (("seed", seed), ("epoch", epoch)):
        if isinstance(v, bool) or not isinstance(v, int) or v < 0:
            raise ValueError(f"{name}: {what} must be a non-negative integer (got {v!r})")


def reference_corrupt_pairs(edge_index: Tensor, num_nodes: int, *, seed: int = 0,
                            epoch: int = 0) -> Tensor:
    """:func:`corrupt_pairs` in one process on the whole graph: ``edge_index`` ``[2, n]`` in
    original ids, the result in original ids (what a single-process reference run uses)."""
    name = "reference_corrupt_pairs"
    _check(name, seed, epoch)
    if not isinstance(edge_index, Tensor) or edge_index.dim() != 2 or edge_index.shape[0] != 2:
        raise ValueError(f"{name}: edge_index must be a [2, n] tensor of node ids (got "
                         f"{getattr(edge_index, 'shape', type(edge_index).__name__)})")
    pairs = edge_index.as_subclass(Tensor).long()
    coin, node = _corrupt(pairs[0], pairs[1], seed=seed, epoch=epoch, num_nodes=int(num_nodes))
    out = pairs.clone()
    out[0, coin] = node[coin]
    out[1, ~coin] = node[~coin]
    return out


def corrupt_pairs(edge_index: Tensor, num_nodes: Optional[int] = None, *, seed: int = 0,
                  epoch: Optional[int] = None) -> Tensor:
    """Each pair with its head or its tail (a keyed fair coin) replaced by a node drawn
    uniformly from the whole graph: PyG's ``rgcn_link_pred.py`` negatives, the same pairs at
    every number of ranks (module docstring).

    Collective: every rank calls it (with its own pairs, possibly none) with the same ``seed``
    and ``epoch``. Two exchanges: the pairs' original ids from their owners, and the drawn
    nodes' new ids from the directory of :func:`~pyg_sar.link.negative_sampling`.

    Args:
        edge_index: ``[2, n]`` :class:`~pyg_sar.link.PairIds` (pairs of a distributed split
            or pair set, e.g. ``data.train_edge_index`` of :func:`pyg_sar.distribute`).
        num_nodes: accepted so that PyG's call ``negative_sampling(edge_index, num_nodes)``
            runs unchanged; the graph knows its nodes. ``None``, the rank's node count
            (``data.num_nodes`` of a partition) or the whole graph's; anything else is
            refused.
        seed: a non-negative integer.
        epoch: a non-negative integer; ``None`` counts the calls on this graph (a new set of
            negatives per call, the same sequence every run; the count starts again in a
            resumed run: pass ``epoch=`` to continue an interrupted one's sequence).

    Returns:
        ``[2, n]`` :class:`~pyg_sar.link.PairIds` of NEW global ids, column ``i`` the
        corruption of pair ``i``.

    Raises:
        ValueError: ``edge_index`` not pairs of a partition, typed (heterogeneous) pairs, a
            ``num_nodes`` that is neither count, a bad ``seed`` / ``epoch``.
    """
    from pyg_sar.link.negatives_comm import DirectoryComm
    from pyg_sar.link.pair_ids import PairIds, as_pair_ids
    name = "corrupt_pairs"
    graph = getattr(edge_index, "_sar_graph", None) if isinstance(edge_index, PairIds) else None
    if graph is None:
        what = ("typed pairs of a heterogeneous split" if isinstance(edge_index, PairIds)
                else type(edge_index).__name__)
        raise ValueError(f"{name}: edge_index must be pairs of a homogeneous partition "
                         f"(PairIds, e.g. data.train_edge_index of pyg_sar.distribute; got "
                         f"{what}); on one process without a partition use "
                         f"reference_corrupt_pairs")
    if edge_index.dim() != 2 or edge_index.shape[0] != 2:
        raise ValueError(f"{name}: edge_index must be [2, n] pairs (got shape "
                         f"{tuple(edge_index.shape)})")
    total = int(graph.node_offsets[-1])
    if num_nodes is not None and int(num_nodes) not in (total, graph.num_nodes):
        raise ValueError(f"{name}: num_nodes={num_nodes!r} is neither this rank's node count "
                         f"({graph.num_nodes}) nor the graph's ({total}): nodes are drawn "
                         f"from the whole graph")
    if epoch is None:
        epoch = int(graph.__dict__.get(DRAWS, 0))
        graph.__dict__[DRAWS] = epoch + 1
    _check(name, seed, epoch)
    dc = DirectoryComm.of(graph)
    pairs = edge_index.as_subclass(Tensor).long().to(dc.device)
    # original ids of both ends, answered by their owners
    ends = pairs.reshape(-1)
    upper = torch.tensor(dc.offsets[1:], dtype=torch.long, device=dc.device)
    asked, reply = dc.send(torch.searchsorted(upper, ends, right=True), ends)
    node_ids = (torch.arange(graph.num_nodes, dtype=torch.long, device=dc.device)
                + dc.offsets[dc.rank]) if graph.node_ids is None else graph.node_ids
    original = reply(node_ids.to(dc.device).long()[asked - dc.offsets[dc.rank]]).view(2, -1)
    coin, node = _corrupt(original[0], original[1], seed=seed, epoch=epoch, num_nodes=total)
    new_node = dc.lookup(node, "id")
    out = pairs.clone()
    out[0, coin] = new_node[coin]
    out[1, ~coin] = new_node[~coin]
    return as_pair_ids(out, graph)
