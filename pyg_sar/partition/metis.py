"""METIS partitioning through ``pymetis`` on the symmetrised, loop-free graph."""
from __future__ import annotations

import numpy as np


def symmetric_csr(edge_index: np.ndarray, num_nodes: int) -> tuple[np.ndarray, np.ndarray]:
    """CSR ``(xadj, adjncy)`` of the undirected simple graph underlying ``edge_index``.

    Self-loops are dropped and each undirected edge appears once per direction, as METIS
    requires. Arrays are ``int64`` (METIS ``idx_t`` in the ``pymetis`` wheels) so ``pymetis``
    takes them without copying; temporaries are freed as soon as possible to keep the peak low.
    """
    src, dst = edge_index[0], edge_index[1]
    keep = src != dst
    num = int(np.count_nonzero(keep))
    # One int64 key u * N + v per directed pair, both directions: sort + dedupe in place.
    keys = np.empty(2 * num, dtype=np.int64)
    u = src[keep]
    v = dst[keep]
    del keep
    np.multiply(u, num_nodes, out=keys[:num])
    keys[:num] += v
    np.multiply(v, num_nodes, out=keys[num:])
    keys[num:] += u
    del u, v
    keys.sort()
    if keys.size:
        distinct = np.empty(keys.size, dtype=bool)
        distinct[0] = True
        np.not_equal(keys[1:], keys[:-1], out=distinct[1:])
        keys = keys[distinct]
        del distinct
    rows = keys // num_nodes
    xadj = np.zeros(num_nodes + 1, dtype=np.int64)
    np.cumsum(np.bincount(rows, minlength=num_nodes), out=xadj[1:])
    del rows
    adjncy = np.remainder(keys, num_nodes, out=keys)
    return xadj, adjncy


def metis_parts(edge_index: np.ndarray, num_nodes: int, num_parts: int, seed: int) -> np.ndarray:
    """Part of every node (``int64 [num_nodes]``) from METIS k-way/recursive bisection."""
    import pymetis

    if num_parts == 1:
        return np.zeros(num_nodes, dtype=np.int64)
    xadj, adjncy = symmetric_csr(edge_index, num_nodes)
    options = pymetis.Options(seed=int(seed))
    result = pymetis.part_graph(num_parts, adjacency=pymetis.CSRAdjacency(xadj, adjncy),
                                options=options)
    del xadj, adjncy
    parts = np.asarray(result.vertex_part, dtype=np.int64)
    if parts.shape != (num_nodes,) or (parts.size and (parts.min() < 0 or
                                                       parts.max() >= num_parts)):
        raise RuntimeError(f"METIS returned an invalid partition (shape {parts.shape}, "
                           f"expected {num_nodes} part ids in [0, {num_parts}))")
    return parts
