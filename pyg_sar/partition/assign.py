"""Node-to-part assignment: ``"metis"``, ``"random"`` and ``"contiguous"``, balancing nodes or
in-edges (``balance``).

**Heterogeneous graphs** (``HeteroData``).
Node-to-part assignment of a heterogeneous graph, all node types together.

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

from collections.abc import Sequence
from typing import Any, Literal

import numpy as np

METHODS = ("metis", "random", "contiguous")
BALANCES = ("nodes", "edges")
Balance = Literal["nodes", "edges"]
#: From this number of parts on, ``balance=None`` means ``"edges"`` for METIS (and KaMinPar);
#: below it ``"nodes"`` (see :func:`default_balance`).
EDGE_BALANCE_MIN_PARTS = 4


def check_balance_arg(balance: Any) -> None:
    """ValueError naming ``balance`` unless it is ``None``, ``"nodes"`` or ``"edges"``."""
    if balance is not None and (not isinstance(balance, str) or balance not in BALANCES):
        raise ValueError(f"unknown balance {balance!r} (expected one of {BALANCES}, or None "
                         f"for the default)")


def default_balance(method: str, num_parts: int) -> Balance:
    """What ``balance=None`` means: ``"nodes"`` for ``"random"`` and ``"contiguous"``; for the
    cut-minimising partitioners (``"metis"``, and ``"kaminpar"`` on the streaming path)
    ``"edges"`` when ``num_parts >= 4`` (:data:`EDGE_BALANCE_MIN_PARTS`), ``"nodes"`` below.

    Why the split (``benchmarks/results/partition_balance.md``, R-MAT with 262k nodes): at
    P = 4 and 8 edge balance lowers the slowest rank's step time by 14-25% and the largest
    rank's halo rows (68k -> 46k, 90k -> 40k) although the total cut grows 2.56x / 1.72x; at
    P = 2 it triples the halo rows and multiplies the cut by 20.
    """
    if method in ("random", "contiguous"):
        return "nodes"
    return "edges" if num_parts >= EDGE_BALANCE_MIN_PARTS else "nodes"


def resolve_balance(method: str, balance: str | None, num_parts: int) -> Balance:
    """The balance to use: ``balance`` checked and returned, or for ``None`` the
    :func:`default_balance` of ``method`` and ``num_parts``. The one place every writer, both
    CLIs and :func:`~pyg_sar.partition.distribute` resolve the default."""
    check_balance_arg(balance)
    if balance is not None:
        return balance  # type: ignore[return-value]
    return default_balance(method, num_parts)


def partitioner_of(method: str, num_parts: int) -> str:
    """The routine behind ``method`` (``"metis-recursive"``, ``"metis-kway"``, ``"random"``,
    ``"contiguous"``; ``"none"`` for one part), as ``meta.json``'s ``balance.partitioner``
    records it."""
    if num_parts == 1:
        return "none"
    if method == "metis":
        from pyg_sar.partition.metis import partitioner_name
        return partitioner_name(num_parts)
    return method


def _cut_order(order: np.ndarray | None, weight: np.ndarray, num_parts: int) -> np.ndarray:
    """Parts that cut the nodes, taken in ``order`` (``None``: natural order), into ``P``
    consecutive runs of about equal total ``weight``: a node goes to the part its weight's
    midpoint falls in, except that no part is left empty (a heavy node may span several
    parts' shares: the cuts are then moved just enough to give every part a node)."""
    w = weight if order is None else weight[order]
    cum = np.cumsum(w)
    mid = cum - 0.5 * w
    runs = np.minimum((mid * num_parts / cum[-1]).astype(np.int64), num_parts - 1)
    # Start of part k (k = 1..P-1) in the order: strictly rising, within [k, N - P + k].
    k = np.arange(1, num_parts)
    starts = np.maximum.accumulate(np.maximum(np.searchsorted(runs, k) - k, 0)) + k
    starts = np.minimum(starts, runs.size - num_parts + k)
    runs = np.searchsorted(starts, np.arange(runs.size), side="right")
    if order is None:
        return runs
    parts = np.empty_like(runs)
    parts[order] = runs
    return parts


def assign_parts(edge_index: np.ndarray, num_nodes: int, num_parts: int, method: str,
                 seed: int = 0, balance: Balance | None = None,
                 ubvec: Sequence[float] | None = None) -> np.ndarray:
    """Part id of every node as ``int64 [num_nodes]``.

    ``balance="nodes"``: ``"random"`` and ``"contiguous"`` give every part ``floor`` or
    ``ceil`` of ``num_nodes / num_parts`` nodes; ``"metis"`` minimises the edge cut of the
    symmetrised graph with parts balanced by node count (and may leave parts empty on
    degenerate inputs).

    ``balance="edges"``: parts also hold about equal numbers of in-edges (the edges stored on a
    node's owner, self-loops and duplicates included), the aggregation work of a rank. METIS
    balances both with two constraints (``ubvec``: allowed max/mean of nodes and in-edges,
    default METIS's tolerance; see :func:`~pyg_sar.partition.metis.metis_parts`); random and
    contiguous cut the random / natural node order into runs of equal total
    ``1 + in_degree * N / E`` (nodes and edges weigh alike, so neither is balanced exactly:
    these are baselines), no part left empty. A node's in-edges cannot be split, so one with
    more than ``E / P`` of them keeps its part above the mean; after METIS a warning names the
    achieved max/mean and that bound.

    ``balance=None``: :func:`default_balance` (METIS: ``"edges"`` from 4 parts on, ``"nodes"``
    below; random and contiguous: ``"nodes"``).
    """
    if method not in METHODS:
        raise ValueError(f"unknown partition method {method!r} (expected one of {METHODS})")
    balance = resolve_balance(method, balance, num_parts)
    if method == "metis":
        from pyg_sar.partition.metis import metis_parts
        return metis_parts(edge_index, num_nodes, num_parts, seed, balance, ubvec)
    if ubvec is not None:
        raise ValueError(f"ubvec applies to method='metis' only (got ubvec={ubvec!r} with "
                         f"method={method!r})")
    num_edges = edge_index.shape[1]
    in_degree = (np.bincount(edge_index[1], minlength=num_nodes)
                 if balance == "edges" and num_edges > 0 and num_parts > 1 else None)
    return simple_parts(method, num_nodes, num_parts, seed, balance, in_degree, num_edges)


def simple_parts(method: str, num_nodes: int, num_parts: int, seed: int, balance: str,
                 in_degree: np.ndarray | None, num_edges: int) -> np.ndarray:
    """Parts of ``"random"`` (a seeded permutation) or ``"contiguous"`` (the natural order),
    cut at equal node counts, or with ``balance="edges"`` at equal cumulative
    ``1 + in_degree * N / E``. Takes the in-degrees rather than the edges, so the streaming
    writer can call it after counting them."""
    order = None if method == "contiguous" else np.random.default_rng(seed).permutation(num_nodes)
    if balance == "edges" and num_edges > 0 and num_parts > 1:
        return _cut_order(order, 1.0 + in_degree * (num_nodes / num_edges), num_parts)
    balanced = np.arange(num_nodes, dtype=np.int64) * num_parts // num_nodes
    if order is None:
        return balanced
    parts = np.empty(num_nodes, dtype=np.int64)
    parts[order] = balanced
    return parts


# ------------------------------------------------------------ heterogeneous graphs (HeteroData)
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
