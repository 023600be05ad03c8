"""METIS partitioning on the symmetrised, loop-free graph.

``balance="nodes"`` calls ``pymetis.part_graph`` (one constraint: node count), as always.
``balance="edges"`` needs two constraints, node count and in-degree, which ``pymetis`` cannot
pass (it reads one weight per node and silently ignores the rest); its extension module
exports the METIS C API though, so :func:`_part_graph_c` calls ``METIS_PartGraphRecursive`` /
``METIS_PartGraphKway`` in that same library through ``ctypes`` (``idx_t`` is ``int64`` and
``real_t`` ``float32`` in the ``pymetis`` wheels; checked on load). No extra dependency.
"""
from __future__ import annotations

import ctypes
import math
import warnings
from collections.abc import Sequence
from functools import cache
from typing import Any

import numpy as np

from pyg_sar._extras import require

_METIS_OK = 1
_METIS_NOPTIONS = 40
_METIS_ERRORS = {-2: "METIS_ERROR_INPUT", -3: "METIS_ERROR_MEMORY", -4: "METIS_ERROR"}
# The tolerance used to judge an edge-balanced partition when no ubvec is given: METIS's own
# default k-way imbalance (ufactor 30); its recursive bisection default is tighter.
DEFAULT_TOLERANCE = 1.03
# How far above the tolerance the achieved max/mean may lie before a warning.
TOLERANCE_SLACK = 0.02


def sort_unique(keys: np.ndarray) -> np.ndarray:
    """``np.unique(keys)`` that sorts ``keys`` in place and needs one boolean mask of extra
    memory (``np.unique`` holds a sorted copy plus its mask)."""
    keys.sort()
    if keys.size:
        distinct = np.empty(keys.size, dtype=bool)
        distinct[0] = True
        np.not_equal(keys[1:], keys[:-1], out=distinct[1:])
        keys = keys[distinct]
    return keys


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
    keys = sort_unique(keys)
    rows = keys // num_nodes
    xadj = np.zeros(num_nodes + 1, dtype=np.int64)
    np.cumsum(np.bincount(rows, minlength=num_nodes), out=xadj[1:])
    del rows
    adjncy = np.remainder(keys, num_nodes, out=keys)
    return xadj, adjncy


def is_recursive(num_parts: int) -> bool:
    """Whether METIS uses recursive bisection (``pymetis``'s choice: ``P <= 8``) or k-way."""
    return num_parts <= 8


def partitioner_name(num_parts: int) -> str:
    """``"metis-recursive"`` or ``"metis-kway"``: the METIS routine used for ``num_parts``."""
    return "metis-recursive" if is_recursive(num_parts) else "metis-kway"


def check_ubvec(ubvec: Any) -> tuple[float, float] | None:
    """``ubvec`` as a pair of floats ``> 1`` (allowed max/mean of nodes and of in-edges), or
    ``None``; anything else is a ValueError naming it."""
    if ubvec is None:
        return None
    try:
        values = tuple(float(v) for v in ubvec)
    except (TypeError, ValueError):
        values = ()
    if len(values) != 2 or not all(math.isfinite(v) and v > 1.0 for v in values):
        raise ValueError(f"ubvec must be two finite numbers > 1 (allowed max/mean of nodes "
                         f"and of in-edges per part; got {ubvec!r})")
    return values


def pymetis_module() -> Any:
    """``pymetis``, or an ImportError naming the extra that installs it (``pyg_sar[metis]``)."""
    return require("pymetis", "method='metis'", "use method='random'")


@cache
def _metis_lib() -> ctypes.CDLL:
    """The METIS library inside ``pymetis``'s extension module, argument types set once."""
    internal = require("pymetis._internal", "method='metis'", "use method='random'")
    if internal._idx_type_width() != 64:  # pragma: no cover - every pymetis wheel has 64
        raise RuntimeError(f"pymetis was built with {internal._idx_type_width()}-bit METIS "
                           f"indices; pyg_sar's balance='edges' needs the 64-bit build")
    lib = ctypes.CDLL(internal.__file__)
    idx = ctypes.POINTER(ctypes.c_int64)
    real = ctypes.POINTER(ctypes.c_float)
    for fn in (lib.METIS_PartGraphKway, lib.METIS_PartGraphRecursive):
        fn.restype = ctypes.c_int
        # nvtxs, ncon, xadj, adjncy, vwgt, vsize, adjwgt, nparts, tpwgts, ubvec, options,
        # objval, part
        fn.argtypes = [idx, idx, idx, idx, idx, idx, idx, idx, real, real, idx, idx, idx]
    lib.METIS_SetDefaultOptions.restype = ctypes.c_int
    lib.METIS_SetDefaultOptions.argtypes = [idx]
    return lib


def _ptr(array: np.ndarray | None, ctype: Any) -> Any:
    return None if array is None else array.ctypes.data_as(ctypes.POINTER(ctype))


def _part_graph_c(xadj: np.ndarray, adjncy: np.ndarray, vwgt: np.ndarray | None, ncon: int,
                  nparts: int, recursive: bool, seed: int,
                  ubvec: Sequence[float] | None) -> np.ndarray:
    """``METIS_PartGraphRecursive`` / ``Kway`` with ``ncon`` constraints; part of every node.

    ``vwgt`` is ``int64 [N * ncon]`` (node-major) or ``None`` (unit weights, ``ncon == 1``);
    ``ubvec`` is passed to METIS as given (``None``: METIS's default tolerance). With
    ``ncon == 1`` and no weights this is exactly what ``pymetis.part_graph`` computes.
    """
    lib = _metis_lib()
    from pymetis._internal import options_indices
    num_nodes = int(xadj.shape[0]) - 1
    xadj = np.ascontiguousarray(xadj, dtype=np.int64)
    adjncy = np.ascontiguousarray(adjncy, dtype=np.int64)
    if vwgt is not None:
        vwgt = np.ascontiguousarray(vwgt, dtype=np.int64)
        if vwgt.shape != (num_nodes * ncon,):
            raise ValueError(f"vwgt must hold {num_nodes * ncon} weights (got {vwgt.shape})")
    options = np.empty(_METIS_NOPTIONS, dtype=np.int64)
    lib.METIS_SetDefaultOptions(_ptr(options, ctypes.c_int64))
    options[options_indices.SEED] = seed
    options[options_indices.NUMBERING] = 0
    ub = None if ubvec is None else np.ascontiguousarray(ubvec, dtype=np.float32)
    scalars = np.array([num_nodes, ncon, nparts], dtype=np.int64)
    objval = np.zeros(1, dtype=np.int64)
    part = np.zeros(num_nodes, dtype=np.int64)
    fn = lib.METIS_PartGraphRecursive if recursive else lib.METIS_PartGraphKway
    i64 = ctypes.c_int64
    ret = fn(_ptr(scalars[0:1], i64), _ptr(scalars[1:2], i64), _ptr(xadj, i64),
             _ptr(adjncy, i64), _ptr(vwgt, i64), None, None, _ptr(scalars[2:3], i64), None,
             _ptr(ub, ctypes.c_float), _ptr(options, i64), _ptr(objval, i64), _ptr(part, i64))
    if ret != _METIS_OK:
        raise RuntimeError(f"METIS failed with {_METIS_ERRORS.get(ret, ret)} (nparts={nparts}, "
                           f"ncon={ncon}, {num_nodes} nodes)")
    return part


def _per_level(ubvec: tuple[float, float], num_parts: int) -> tuple[float, float]:
    """The tolerance of each bisection that gives ``ubvec`` on the final partition: recursive
    bisection compounds the imbalance over its ``ceil(log2 P)`` levels."""
    levels = max(1, math.ceil(math.log2(num_parts)))
    return tuple(u ** (1.0 / levels) for u in ubvec)  # type: ignore[return-value]


def check_balance(parts: np.ndarray, in_degree: np.ndarray, num_parts: int, tolerance: float,
                  what: str) -> None:
    """Warn when the in-edges per part exceed ``tolerance + 0.02`` times their mean, naming the
    lower bound ``max_in_degree * P / E`` when one node's in-edges alone make it impossible."""
    num_edges = int(in_degree.sum())
    if num_edges == 0 or num_parts == 1:
        return
    per_part = np.bincount(parts, weights=in_degree, minlength=num_parts)
    ratio = float(per_part.max()) * num_parts / num_edges
    if ratio <= tolerance + TOLERANCE_SLACK:
        return
    bound = float(in_degree.max()) * num_parts / num_edges
    msg = (f"{what}: in-edges per part max/mean = {ratio:.3f}, above the tolerance "
           f"{tolerance:.3f} + {TOLERANCE_SLACK}")
    if bound > tolerance:
        hub = int(np.argmax(in_degree))
        msg += (f"; node {hub} alone has {int(in_degree[hub])} of the {num_edges} in-edges, so "
                f"max/mean >= max_in_degree * P / E = {bound:.3f}: no node partition can do "
                f"better (use fewer parts)")
    warnings.warn(msg, stacklevel=3)


def metis_parts(edge_index: np.ndarray, num_nodes: int, num_parts: int, seed: int,
                balance: str = "nodes", ubvec: Sequence[float] | None = None) -> np.ndarray:
    """Part of every node (``int64 [num_nodes]``) from METIS recursive bisection (``P <= 8``)
    or k-way.

    ``balance="nodes"``: one constraint, node count (``pymetis.part_graph``, METIS's default
    tolerance). ``balance="edges"``: two constraints, node count and in-degree (the edges a
    node's owner stores, self-loops and duplicates included), so that parts hold about as many
    nodes and as many in-edges as each other; ``ubvec`` is the allowed max/mean of the two on
    the final partition (default: METIS's tolerance), and a warning names the achieved
    max/mean when it lies more than 0.02 above it.
    """
    if balance not in ("nodes", "edges"):
        raise ValueError(f"unknown balance {balance!r} (expected 'nodes' or 'edges')")
    ubvec = check_ubvec(ubvec)
    if num_parts == 1:
        return np.zeros(num_nodes, dtype=np.int64)
    recursive = is_recursive(num_parts)
    in_degree = np.bincount(edge_index[1], minlength=num_nodes).astype(np.int64, copy=False) \
        if balance == "edges" else None
    xadj, adjncy = symmetric_csr(edge_index, num_nodes)
    if balance == "nodes" and ubvec is None:
        pymetis = pymetis_module()
        options = pymetis.Options(seed=int(seed))
        result = pymetis.part_graph(num_parts, adjacency=pymetis.CSRAdjacency(xadj, adjncy),
                                    options=options, recursive=recursive)
        parts = np.asarray(result.vertex_part, dtype=np.int64)
    else:
        target = None if ubvec is None else (_per_level(ubvec, num_parts) if recursive
                                             else ubvec)
        if balance == "edges" and edge_index.shape[1] > 0:
            vwgt = np.empty((num_nodes, 2), dtype=np.int64)
            vwgt[:, 0] = 1
            vwgt[:, 1] = in_degree
            parts = _part_graph_c(xadj, adjncy, vwgt.reshape(-1), 2, num_parts, recursive,
                                  int(seed), target)
        else:  # no edges: the in-edge constraint is void (and its total weight 0)
            parts = _part_graph_c(xadj, adjncy, None, 1, num_parts, recursive, int(seed),
                                  None if target is None else target[:1])
    del xadj, adjncy
    if parts.shape != (num_nodes,) or (parts.size and (parts.min() < 0 or
                                                       parts.max() >= num_parts)):
        raise RuntimeError(f"METIS returned an invalid partition (shape {parts.shape}, "
                           f"expected {num_nodes} part ids in [0, {num_parts}))")
    if in_degree is not None:
        tolerance = DEFAULT_TOLERANCE if ubvec is None else ubvec[1]
        check_balance(parts, in_degree, num_parts, tolerance,
                      f"METIS ({partitioner_name(num_parts)}, balance='edges')")
    return parts
