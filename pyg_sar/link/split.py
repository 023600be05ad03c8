"""Original node ids -> the partition's new global ids, for pairs a user brings along.

:func:`~pyg_sar.partition.link_split.load_link_split` already gives every supervision pair in
new ids; pairs made outside the partition (a user's own candidates, an OGB evaluation set) are
in the ORIGINAL ids of the graph before partitioning. :func:`to_new_ids` maps them. The
reverse map, new -> original, is ``pyg_sar.gather(part.node_ids, new_ids, ids="new",
node_offsets=part.edge_index)``. :func:`pyg_sar.gather` maps original ids itself with
``ids="original"`` (through :func:`to_new_ids`).
"""
from __future__ import annotations

from typing import Any

import torch
from torch import Tensor


def _graph_of(part: Any) -> Any:
    """The DistGraph of a PartitionData (or ``part`` itself when it is one)."""
    if hasattr(part, "blocks") and hasattr(part, "node_offsets"):
        return part
    for name in ("graph", "edge_index"):
        graph = getattr(part, name, None)
        if hasattr(graph, "blocks") and hasattr(graph, "node_offsets"):
            return graph
    raise ValueError(f"to_new_ids: part must be a PartitionData or a DistGraph "
                     f"(got {type(part).__name__})")


def to_new_ids(part: Any, original_ids: Tensor) -> Tensor:
    """The partition's new global ids of the nodes ``original_ids``.

    COLLECTIVE: every rank calls it (with its own ids, maybe none). Rank ``r`` owns the new
    ids ``[node_offsets[r], node_offsets[r + 1])``; ``part.node_ids`` are the original ids of
    its rows. The map is kept distributed, nothing of size ``num_nodes`` on a rank: rank ``d``
    answers for the block of original ids ``[N * d // P, N * (d + 1) // P)`` (the directory
    that :func:`pyg_sar.link.negative_sampling` uses, built once per graph and cached on it:
    three all-to-alls the first time, then two per call, counted in the traffic ledger
    under ``"negative_sampling"``). One process: the inverse of ``part.node_ids``.

    Args:
        part: a :class:`~pyg_sar.partition.PartitionData` (e.g. one split of
            :func:`~pyg_sar.load_link_split`) or its :class:`~pyg_sar.DistGraph`, with
            ``node_ids`` (absent: original ids are the new ids).
        original_ids: integer tensor of any shape, ids in ``[0, num_nodes)``, any order and
            repeats (e.g. ``[2, n]`` pairs).

    Returns:
        ``int64`` tensor of the shape of ``original_ids``, on the graph's device.

    Raises:
        ValueError: ``original_ids`` is not an integer tensor or holds an id out of range (on
            every rank; the offending rank's message names the value), or the graph's
            ``node_ids`` are not a permutation of the original ids.
    """
    from pyg_sar.link.negatives_comm import DirectoryComm
    graph = _graph_of(part)
    dc = DirectoryComm.of(graph)
    dc.agree("to_new_ids", _problem(original_ids, dc.num_nodes))
    ids = original_ids.to(dc.device, torch.long)
    return dc.lookup(ids.reshape(-1), "id").reshape(ids.shape)


def _problem(ids: Any, num_nodes: int) -> str | None:
    if not isinstance(ids, Tensor) or ids.dtype.is_floating_point or ids.dtype.is_complex \
            or ids.dtype == torch.bool:
        return (f"to_new_ids: original_ids must be an integer tensor (got "
                f"{getattr(ids, 'dtype', type(ids).__name__)})")
    if ids.numel():
        flat = ids.reshape(-1)
        bad = (flat < 0) | (flat >= num_nodes)
        if bool(bad.any()):
            value = int(flat[bad.nonzero()[0, 0]])
            return (f"to_new_ids: original id {value} is out of range for a graph of "
                    f"{num_nodes} nodes")
    return None
