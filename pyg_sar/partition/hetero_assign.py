"""Node-to-part assignment of a heterogeneous graph, all node types together.

* ``"metis"``: METIS on the homogeneous view (every node type's ids shifted into one id space,
  every edge type's edges together, symmetrised and loop-free), then **rebalanced per node
  type** so that every part holds ``floor`` or ``ceil`` of ``N_t / P`` nodes of every type
  ``t``. METIS itself can balance several vertex weights at once (multi-constraint
  partitioning), but the ``pymetis`` binding passes one constraint only (``ncon = 1``), so the
  per-type balance is restored afterwards: the surplus nodes of a type in an over-full part
  (those with the fewest neighbours in their part) move to the under-full parts where they have
  the most neighbours. Few nodes move (METIS balances the total already) and the cut stays
  close to METIS's.
* ``"random"``: every node type split independently, ``floor`` / ``ceil`` of ``N_t / P`` per
  part, seeded.
* ``"contiguous"``: every node type's ids split into ``P`` balanced ranges.
"""
from __future__ import annotations

import numpy as np

from pyg_sar.partition.assign import METHODS


def _balanced(num: int, num_parts: int) -> np.ndarray:
    return np.arange(num, dtype=np.int64) * num_parts // max(num, 1)


def assign_hetero_parts(num_nodes: list[int], edges: list[tuple[int, int, np.ndarray]],
                        num_parts: int, method: str, seed: int = 0) -> list[np.ndarray]:
    """Part id of every node of every type (``int64 [N_t]`` per node type, in type order).

    Args:
        num_nodes: ``N_t`` of every node type.
        edges: ``(src type index, dst type index, int64 [2, E])`` of every edge type.
        num_parts: ``P``.
        method: ``"metis"``, ``"random"`` or ``"contiguous"``.
        seed: seed of METIS / the random assignment.
    """
    if method not in METHODS:
        raise ValueError(f"unknown partition method {method!r} (expected one of {METHODS})")
    if method == "contiguous":
        return [_balanced(n, num_parts) for n in num_nodes]
    if method == "random":
        out = []
        for t, n in enumerate(num_nodes):
            parts = np.empty(n, dtype=np.int64)
            parts[np.random.default_rng([seed, t]).permutation(n)] = _balanced(n, num_parts)
            out.append(parts)
        return out
    offsets = np.zeros(len(num_nodes) + 1, dtype=np.int64)
    np.cumsum(num_nodes, out=offsets[1:])
    total = int(offsets[-1])
    node_type = np.repeat(np.arange(len(num_nodes)), num_nodes)
    if num_parts == 1:
        parts = np.zeros(total, dtype=np.int64)
    else:
        parts, xadj, adjncy = _metis_homogeneous(offsets, edges, total, num_parts, seed)
        parts = rebalance_per_type(parts, node_type, len(num_nodes), xadj, adjncy, num_parts)
    return [parts[offsets[t]:offsets[t + 1]] for t in range(len(num_nodes))]


def _metis_homogeneous(offsets: np.ndarray, edges: list[tuple[int, int, np.ndarray]],
                       total: int, num_parts: int, seed: int
                       ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    from pyg_sar.partition.metis import pymetis_module, symmetric_csr
    pymetis = pymetis_module()
    if edges:
        homog = np.concatenate([np.stack([e[0] + offsets[s], e[1] + offsets[d]])
                                for s, d, e in edges], axis=1)
    else:
        homog = np.zeros((2, 0), dtype=np.int64)
    xadj, adjncy = symmetric_csr(homog, total)
    del homog
    result = pymetis.part_graph(num_parts, adjacency=pymetis.CSRAdjacency(xadj, adjncy),
                                options=pymetis.Options(seed=int(seed)))
    parts = np.asarray(result.vertex_part, dtype=np.int64)
    if parts.shape != (total,) or (parts.size and (parts.min() < 0 or parts.max() >= num_parts)):
        raise RuntimeError(f"METIS returned an invalid partition (shape {parts.shape}, "
                           f"expected {total} part ids in [0, {num_parts}))")
    return parts, xadj, adjncy


def rebalance_per_type(parts: np.ndarray, node_type: np.ndarray, num_types: int,
                       xadj: np.ndarray, adjncy: np.ndarray, num_parts: int) -> np.ndarray:
    """Move as few nodes as possible so that every part holds ``floor`` or ``ceil`` of
    ``N_t / P`` nodes of every type ``t`` (see the module docstring)."""
    parts = parts.copy()
    rows = np.repeat(np.arange(parts.size, dtype=np.int64), np.diff(xadj))
    for t in range(num_types):
        members = np.flatnonzero(node_type == t)
        n = members.size
        counts = np.bincount(parts[members], minlength=num_parts)
        target = np.full(num_parts, n // num_parts, dtype=np.int64)
        # The n % P extra nodes go to the parts that hold most already (fewest moves).
        target[np.argsort(-counts, kind="stable")[:n % num_parts]] += 1
        if np.array_equal(counts, target):
            continue
        same = parts[adjncy] == parts[rows]
        internal = np.bincount(rows[same], minlength=parts.size)
        movers = []
        for p in np.flatnonzero(counts > target):
            here = members[parts[members] == p]
            movers.append(here[np.argsort(internal[here], kind="stable")[:counts[p] - target[p]]])
        movers = np.concatenate(movers)
        capacity = np.maximum(target - counts, 0)
        # score[m, q]: neighbours of mover m in part q.
        starts, lengths = xadj[movers], xadj[movers + 1] - xadj[movers]
        owner = np.repeat(np.arange(movers.size), lengths)
        first = np.cumsum(lengths) - lengths
        nbr = adjncy[np.arange(owner.size) + np.repeat(starts - first, lengths)]
        score = np.zeros((movers.size, num_parts), dtype=np.int64)
        np.add.at(score, (owner, parts[nbr]), 1)
        for m in np.argsort(-score.max(axis=1), kind="stable"):
            open_parts = np.flatnonzero(capacity > 0)
            q = open_parts[np.argmax(score[m, open_parts] * (n + 1) + capacity[open_parts])]
            parts[movers[m]] = q
            capacity[q] -= 1
    return parts
