"""Node-to-part assignment: ``"metis"``, ``"random"`` (balanced) and ``"contiguous"``."""
from __future__ import annotations

import numpy as np

METHODS = ("metis", "random", "contiguous")


def assign_parts(edge_index: np.ndarray, num_nodes: int, num_parts: int, method: str,
                 seed: int = 0) -> np.ndarray:
    """Part id of every node as ``int64 [num_nodes]``.

    ``"random"`` and ``"contiguous"`` give every part ``floor`` or ``ceil`` of
    ``num_nodes / num_parts`` nodes; ``"metis"`` minimises the edge cut of the symmetrised graph
    (parts are balanced by node count, and may be empty on degenerate inputs).
    """
    if method not in METHODS:
        raise ValueError(f"unknown partition method {method!r} (expected one of {METHODS})")
    if method == "metis":
        from pyg_sar.partition.metis import metis_parts
        return metis_parts(edge_index, num_nodes, num_parts, seed)
    balanced = np.arange(num_nodes, dtype=np.int64) * num_parts // num_nodes
    if method == "contiguous":
        return balanced
    parts = np.empty(num_nodes, dtype=np.int64)
    parts[np.random.default_rng(seed).permutation(num_nodes)] = balanced
    return parts
