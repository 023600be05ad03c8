"""``write_partition_streaming``: partition a graph read from disk, never holding all its edges.

The graph comes from an on-disk source (:mod:`pyg_sar.partition.sources`) and is read in
chunks, several times:

0. *validate and count*: dtypes, shapes, ids in ``[0, N)``, hashes, node tensor rows, degrees.
   Every refusal happens here, before any output or scratch file exists.
1. *partitioner input*: both directions of every non-loop edge go to scratch buckets by source
   range; each bucket is sorted and deduplicated and appended to a ParHIP file
   (:mod:`pyg_sar.partition.parhip`): the CSR of :func:`pyg_sar.partition.metis.symmetric_csr`.
2. *partition*: KaMinPar on that file, or METIS on it memory-mapped (then the same partition as
   :func:`~pyg_sar.partition.write_partition`), or random / contiguous (no file needed).
3. *route*: every edge ``(new src, new dst, input position)`` is appended to its destination
   rank's scratch file.
4. *per rank*: sorted and laid out by the code of :mod:`pyg_sar.partition.layout`, written with
   the node tensors gathered from the memory-mapped source.
5. *send lists* from the recv lists kept in scratch, ``meta.json``, atomic commit.

Memory: the partitioner's graph plus ``O(N + chunk + E / P)``; the output equals
``write_partition``'s file for file for methods metis, random and contiguous.
"""
from __future__ import annotations

import math
import os
import shutil
import tempfile
import time
import warnings
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import torch

from pyg_sar._extras import require
from pyg_sar.partition import format as fmt
from pyg_sar.partition.assign import (
    check_balance_arg,
    default_balance,
    partitioner_of,
    simple_parts,
)
from pyg_sar.partition.finite import act_on_reports, check_policy, format_report
from pyg_sar.partition.layout import block_recv, block_structure, stored_order
from pyg_sar.partition.metis import sort_unique
from pyg_sar.partition.parhip import ParhipWriter, check_parhip, read_csr
from pyg_sar.partition.sources import EdgeSource, open_source
from pyg_sar.partition.storage import (
    check_out_dir,
    dtype_name,
    save_npy,
    staged_dir,
    storage_dtype_name,
    to_storage,
)
from pyg_sar.partition.write_common import num_classes as _num_classes
from pyg_sar.partition.writer import (
    PartitionReport,
    build_meta,
    report_from_meta,
    write_meta,
)

STREAM_METHODS = ("kaminpar", "metis", "random", "contiguous")
#: KaMinPar's allowed imbalance (max block weight / mean - 1).
KAMINPAR_EPSILON = 0.03
_MAX_BUCKETS = 256
_RECORD = 3  # int64 fields per routed edge: new src, new dst, input position


def _parse_bytes(value: Any) -> int:
    """``12_000_000_000``, ``"12G"``, ``"512M"`` -> bytes; ValueError naming anything else."""
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool) and value > 0:
        return int(value)
    if isinstance(value, str):
        text = value.strip().upper().removesuffix("B").removesuffix("I")
        scale = {"K": 2 ** 10, "M": 2 ** 20, "G": 2 ** 30, "T": 2 ** 40}.get(text[-1:], 1)
        try:
            number = float(text[:-1] if scale > 1 else text)
        except ValueError:
            number = -1.0
        if number > 0:
            return int(number * scale)
    raise ValueError(f"memory_budget must be a positive number of bytes or a size such as "
                     f"'12G' (got {value!r})")


def _metis_bytes_per_entry(entries: int) -> float:
    """METIS's own working memory per adjacency entry (pymetis's copy of the graph, edge
    weights, the coarsened graphs), which grows with the graph: measured on R-MAT graphs of
    average degree 20 (``pymetis.part_graph``, P = 4, VmHWM increase) as 70, 82, 80, 110 bytes
    per entry at 1M, 2M, 4M, 10M edges and 125 at 20M (the streaming run's anonymous peak, 5.00
    GiB); fitted by ``70 + 13 log2(entries / 2^21)`` plus 10%, so that every measured run lies
    below it."""
    return 1.1 * (70.0 + 13.0 * max(0.0, math.log2(max(entries, 1) / 2 ** 21)))


def estimate_memory(num_nodes: int, num_edges: int, num_parts: int, method: str,
                    chunk_edges: int) -> int:
    """Rough peak bytes of :func:`write_partition_streaming` (checked against
    ``memory_budget``): per-node arrays, a chunk's working set, the largest pass-4 rank at
    twice the mean, and the partitioner's graph (2E adjacency entries, an upper bound: the
    symmetric graph without duplicates and loops).

    Measured (P = 4, R-MAT of average degree 20; anonymous peak / cgroup peak incl. page cache):
    METIS at 20M edges 5.00 / 5.20 GiB, estimate 6.51 GiB; KaMinPar at 20M 0.91 / 1.22 GiB,
    estimate 1.86 GiB; at 100M 3.66 / 4.64 GiB, estimate 5.68 GiB."""
    per_node = 8 * 8 * num_nodes  # degrees, parts, perm, new_of_old, xadj / weights
    per_chunk = 12 * 8 * min(chunk_edges, max(num_edges, 1))
    per_rank = 2 * 12 * 8 * math.ceil(num_edges / num_parts)
    entries = 2 * num_edges
    partitioner = {"kaminpar": 6 * entries + 64 * num_nodes,  # compressed graph + buffers
                   # an int64 copy of the memory-mapped adjacency, then METIS's working set
                   "metis": int((8 + _metis_bytes_per_entry(entries)) * entries)
                   + 120 * num_nodes,
                   }.get(method, 0)
    return per_node + per_chunk + max(per_rank, partitioner) + 200 * 2 ** 20


def _kaminpar() -> Any:
    return require("kaminpar", "method='kaminpar'", "use method='metis' on a graph that fits "
                   "in memory")


def _check_arguments(source: Any, num_parts: Any, method: str, balance: Any, seed: Any,
                     threads: Any, chunk_edges: Any, ubvec: Any, on_nonfinite: str
                     ) -> tuple[EdgeSource, int, str, int]:
    if method not in STREAM_METHODS:
        raise ValueError(f"unknown partition method {method!r} (expected one of "
                         f"{STREAM_METHODS})")
    check_balance_arg(balance)
    check_policy(on_nonfinite, "write_partition_streaming")
    if ubvec is not None:  # as write_partition: METIS's tolerance, for METIS only
        from pyg_sar.partition.metis import check_ubvec
        check_ubvec(ubvec)
        if method != "metis":
            raise ValueError(f"ubvec applies to method='metis' only (got ubvec={ubvec!r} with "
                             f"method={method!r}; KaMinPar's tolerance is fixed at "
                             f"max/mean {1 + KAMINPAR_EPSILON:.2f} of one weight)")
    for name, value, low in (("num_parts", num_parts, 1), ("seed", seed, -2 ** 62),
                             ("chunk_edges", chunk_edges, 1)):
        if not isinstance(value, (int, np.integer)) or isinstance(value, bool) or value < low:
            raise ValueError(f"{name} must be an integer >= {low} (got {value!r})")
    if threads is not None and (not isinstance(threads, int) or isinstance(threads, bool)
                                or threads < 1):
        raise ValueError(f"threads must be a positive integer or None (got {threads!r})")
    if method == "kaminpar":
        _kaminpar()
    elif method == "metis" and int(num_parts) > 1:  # before the passes over the source
        from pyg_sar.partition.metis import pymetis_module
        pymetis_module()
    if isinstance(source, (str, Path)):
        source = open_source(source)
    num_parts = int(num_parts)
    if not num_parts <= source.num_nodes:
        raise ValueError(f"num_parts must be in [1, num_nodes={source.num_nodes}] "
                         f"(got {num_parts})")
    by = balance if balance is not None else default_balance(method, num_parts)
    return source, num_parts, by, int(seed)


class _Counts:
    """Pass 0's result: degrees of the input graph."""

    def __init__(self, num_nodes: int) -> None:
        self.in_degree = np.zeros(num_nodes, dtype=np.int64)
        # Directed entries u -> v and v -> u per node u over non-loop edges (before dedupe):
        # the bucket sizes of pass 1.
        self.sym_degree = np.zeros(num_nodes, dtype=np.int64)
        self.num_loops = 0


def _nonfinite(name: str, array: np.ndarray, rows_per_chunk: int) -> str | None:
    """:func:`~pyg_sar.partition.finite.nonfinite_report` of a memory-mapped tensor, read
    ``rows_per_chunk`` rows at a time."""
    if not (np.issubdtype(array.dtype, np.floating) or
            np.issubdtype(array.dtype, np.complexfloating)) or array.ndim == 0:
        return None
    nan = inf = rows = 0
    first = -1
    for start in range(0, array.shape[0], rows_per_chunk):
        block = np.asarray(array[start:start + rows_per_chunk])
        bad = ~np.isfinite(block)
        if not bad.any():
            continue
        n_nan = int(np.count_nonzero(np.isnan(block)))
        nan, inf = nan + n_nan, inf + int(np.count_nonzero(bad)) - n_nan
        bad_rows = bad.reshape(block.shape[0], -1).any(axis=1)
        rows += int(np.count_nonzero(bad_rows))
        if first < 0:
            first = start + int(np.argmax(bad_rows))
    return None if first < 0 else format_report(name, nan, inf, rows, first)


def _check_finite(node_data: dict[str, np.ndarray], edge_data: dict[str, np.ndarray],
                  on_nonfinite: str, chunk_edges: int) -> None:
    """NaN / Inf in floating-point node and edge tensors, handled as ``write_partition``
    handles them (``on_nonfinite``: warn, raise or ignore), in chunks of the memory map."""
    if on_nonfinite == "ignore":
        return
    reports = []
    for name, array in {**node_data, **edge_data}.items():
        row_bytes = max(1, array.itemsize * int(np.prod(array.shape[1:], dtype=np.int64)))
        report = _nonfinite(name, array, max(1, min(chunk_edges, (64 << 20) // row_bytes)))
        if report is not None:
            reports.append(report)
    act_on_reports(reports, on_nonfinite, "write_partition_streaming", stacklevel=4)


def _validate(source: EdgeSource, chunk_edges: int) -> _Counts:
    """Pass 0: read every chunk, refuse bad ids (naming the first and its position), count."""
    verify = getattr(source, "verify_files", None)
    if verify is not None:
        verify()
    n = source.num_nodes
    counts = _Counts(n)
    seen = 0
    for start, chunk in source.chunks(chunk_edges):
        if chunk.size:
            bad = (chunk < 0) | (chunk >= n)
            if bad.any():
                col = int(np.argmax(bad.any(axis=0)))
                row = 0 if bad[0, col] else 1
                raise ValueError(f"graph source: edge {start + col} has node id "
                                 f"{int(chunk[row, col])} ({'source' if row == 0 else 'target'}"
                                 f"), outside [0, num_nodes={n})")
        counts.in_degree += np.bincount(chunk[1], minlength=n)
        keep = chunk[0] != chunk[1]
        counts.num_loops += int(chunk.shape[1] - np.count_nonzero(keep))
        counts.sym_degree += np.bincount(chunk[0][keep], minlength=n)
        counts.sym_degree += np.bincount(chunk[1][keep], minlength=n)
        seen += int(chunk.shape[1])
    if seen != source.num_edges:
        raise ValueError(f"graph source: read {seen} edges, expected {source.num_edges}")
    return counts


def _bucket_bounds(weights: np.ndarray, num_buckets: int) -> np.ndarray:
    """``num_buckets + 1`` node bounds cutting ``weights`` into runs of about equal sum."""
    cum = np.cumsum(weights)
    total = int(cum[-1]) if cum.size else 0
    if total == 0 or num_buckets == 1:
        return np.array([0, weights.shape[0]], dtype=np.int64)
    targets = total * np.arange(1, num_buckets) // num_buckets
    inner = np.searchsorted(cum, targets, side="right")
    return np.unique(np.concatenate([[0], inner, [weights.shape[0]]])).astype(np.int64)


def _append(files: list[Any], which: np.ndarray, records: np.ndarray) -> None:
    """Append ``records[..., i]`` to ``files[which[i]]``, input order kept per file."""
    if len(files) < 2 ** 15:  # small keys: numpy's stable sort is then a radix sort
        which = which.astype(np.int16)
    order = np.argsort(which, kind="stable")
    which = which[order]
    bounds = np.searchsorted(which, np.arange(len(files) + 1))
    for k in np.flatnonzero(np.diff(bounds)):
        sel = order[bounds[k]:bounds[k + 1]]
        files[k].write(np.ascontiguousarray(records[..., sel].T).tobytes())


def _write_symmetric(source: EdgeSource, counts: _Counts, path: Path, scratch: Path,
                     chunk_edges: int, node_weights: np.ndarray | None) -> int:
    """Pass 1: the symmetric loop-free CSR of the graph as a ParHIP file; returns ``m``."""
    n = source.num_nodes
    entries = int(counts.sym_degree.sum())
    num_buckets = max(1, min(_MAX_BUCKETS, math.ceil(entries / chunk_edges)))
    bounds = _bucket_bounds(counts.sym_degree, num_buckets)
    num_buckets = len(bounds) - 1
    names = [scratch / f"bucket_{b:04d}.bin" for b in range(num_buckets)]
    files = [open(p, "xb") for p in names]  # noqa: SIM115 - closed below
    try:
        for _, chunk in source.chunks(chunk_edges):
            keep = chunk[0] != chunk[1]
            u, v = chunk[0][keep], chunk[1][keep]
            keys = np.concatenate([u * n + v, v * n + u])
            rows = np.concatenate([u, v])
            _append(files, np.searchsorted(bounds, rows, side="right") - 1, keys)
    finally:
        for fp in files:
            fp.close()
    writer = ParhipWriter(path, n)
    for b, name in enumerate(names):
        keys = np.fromfile(name, dtype=np.int64)
        name.unlink()
        keys = sort_unique(keys)
        lo, hi = int(bounds[b]), int(bounds[b + 1])
        degree = np.bincount(keys // n - lo, minlength=hi - lo)
        writer.append_rows(lo, degree, np.remainder(keys, n))
        del keys
    return writer.finish(node_weights)


def _metis_on_csr(xadj: np.ndarray, adjncy: np.ndarray, in_degree: np.ndarray,
                  num_parts: int, seed: int, balance: str,
                  ubvec: tuple[float, float] | None) -> np.ndarray:
    """METIS as :func:`pyg_sar.partition.metis.metis_parts` calls it, on a given CSR."""
    from pyg_sar.partition import metis
    recursive = metis.is_recursive(num_parts)
    adjncy = np.asarray(adjncy, dtype=np.int64)
    if balance == "nodes" and ubvec is None:
        pymetis = metis.pymetis_module()
        result = pymetis.part_graph(num_parts, adjacency=pymetis.CSRAdjacency(xadj, adjncy),
                                    options=pymetis.Options(seed=int(seed)),
                                    recursive=recursive)
        parts = np.asarray(result.vertex_part, dtype=np.int64)
    else:
        target = None if ubvec is None else (metis._per_level(ubvec, num_parts) if recursive
                                             else ubvec)
        if balance == "edges" and int(in_degree.sum()) > 0:
            vwgt = np.empty((xadj.shape[0] - 1, 2), dtype=np.int64)
            vwgt[:, 0] = 1
            vwgt[:, 1] = in_degree
            parts = metis._part_graph_c(xadj, adjncy, vwgt.reshape(-1), 2, num_parts,
                                        recursive, seed, target)
        else:  # no edges: the in-edge constraint is void
            parts = metis._part_graph_c(xadj, adjncy, None, 1, num_parts, recursive, seed,
                                        None if target is None else target[:1])
    if balance == "edges":
        tolerance = metis.DEFAULT_TOLERANCE if ubvec is None else ubvec[1]
        metis.check_balance(parts, in_degree, num_parts, tolerance,
                            f"METIS ({metis.partitioner_name(num_parts)}, balance='edges')")
    return parts


def _kaminpar_parts(path: Path, num_parts: int, seed: int, threads: int,
                    weights: np.ndarray, context: str) -> tuple[np.ndarray, int]:
    """KaMinPar on the ParHIP file; ``(parts, max block weight asked for)``.

    With a node heavier than ``(1 + eps) * total / P`` KaMinPar silently returns one block, so
    the block limit is then raised to that node's weight (its block holds it, the others share
    the rest) with a warning naming the bound; the block weights are re-checked afterwards."""
    kaminpar = _kaminpar()
    total = int(weights.sum())
    heaviest = int(np.argmax(weights))
    bound = float(weights[heaviest]) * num_parts / total
    limit = math.floor((1.0 + KAMINPAR_EPSILON) * total / num_parts)
    if weights[heaviest] > limit:
        warnings.warn(f"KaMinPar: node {heaviest} weighs {int(weights[heaviest])} of {total} "
                      f"(1 + in-degree), so no {num_parts}-way split is balanced better than "
                      f"max/mean {bound:.3f}; its part holds it alone (use fewer parts or "
                      f"balance='nodes')", stacklevel=3)
        limit = int(weights[heaviest])
    graph = kaminpar.load_graph(str(path), kaminpar.GraphFileFormat.PARHIP, compress=True)
    kaminpar.reseed(int(seed))
    solver = kaminpar.KaMinPar(threads, kaminpar.context_by_name(context))
    parts = np.asarray(solver.compute_partition(graph, [limit] * num_parts), dtype=np.int64)
    del graph, solver
    if parts.shape != weights.shape or parts.min() < 0 or parts.max() >= num_parts:
        raise RuntimeError(f"KaMinPar returned an invalid partition (shape {parts.shape})")
    block = np.bincount(parts, weights=weights, minlength=num_parts)
    if block.max() > limit * (1.0 + 0.02):
        raise RuntimeError(f"KaMinPar returned a part of weight {int(block.max())}, above the "
                           f"limit {limit} (max/mean {block.max() * num_parts / total:.3f}; "
                           f"node {heaviest} alone gives max/mean >= {bound:.3f})")
    return parts, limit


def _route(source: EdgeSource, new_of_old: np.ndarray, rank_of_new: np.ndarray,
           scratch: Path, num_parts: int, chunk_edges: int) -> list[Path]:
    """Pass 3: ``(new src, new dst, input position)`` of every edge into its destination
    rank's scratch file, in input order."""
    names = [scratch / f"rank_{r:05d}.bin" for r in range(num_parts)]
    files = [open(p, "xb") for p in names]  # noqa: SIM115 - closed below
    try:
        for start, chunk in source.chunks(chunk_edges):
            records = np.empty((_RECORD, chunk.shape[1]), dtype=np.int64)
            records[0] = new_of_old[chunk[0]]
            records[1] = new_of_old[chunk[1]]
            records[2] = np.arange(start, start + chunk.shape[1])
            _append(files, rank_of_new[records[1]], records)
    finally:
        for fp in files:
            fp.close()
    return names


def write_partition_streaming(source: EdgeSource | str | Path, num_parts: int,
                              out_dir: str | Path, method: str = "kaminpar", *,
                              balance: str | None = None, seed: int = 0,
                              threads: int | None = None, scratch: str | Path | None = None,
                              memory_budget: int | str | None = None,
                              chunk_edges: int = 8_000_000, overwrite: bool = False,
                              kaminpar_context: str = "fast",
                              ubvec: tuple[float, float] | None = None,
                              on_nonfinite: str = "warn") -> PartitionReport:
    """Partition a graph on disk into ``num_parts`` parts without holding all its edges.

    Writes the same format as :func:`~pyg_sar.partition.write_partition` (and, for
    ``method`` metis / random / contiguous, the same files: same ``meta.json`` hashes), while
    holding at most the partitioner's graph plus ``O(N + chunk_edges + E / P)`` in memory.

    Args:
        source: an :class:`~pyg_sar.partition.sources.NpySource` /
            :class:`~pyg_sar.partition.sources.ChunkSource` or its folder.
        num_parts: ``P``.
        out_dir: target folder; may exist if empty.
        method: ``"kaminpar"`` (needs ``pip install 'pyg_sar[large]'``; shared-memory
            parallel, far less memory than METIS), ``"metis"`` (``pyg_sar[metis]``; on the
            symmetric graph memory-mapped from scratch), ``"random"`` or ``"contiguous"``.
        balance: ``"nodes"`` or ``"edges"`` (nodes and in-edges; for KaMinPar node weights
            ``1 + in_degree``); ``None``:
            :func:`~pyg_sar.partition.assign.default_balance` (KaMinPar as METIS: edges from
            4 parts on, nodes below; ``"nodes"`` for random, contiguous).
        seed: seed of the partitioner.
        threads: KaMinPar's threads (default: the CPUs available); recorded in ``meta.json``
            (``"kaminpar"``), since its result may depend on them.
        scratch: folder for temporary files (default: next to ``out_dir``); about
            ``40 * E`` bytes, removed afterwards.
        memory_budget: bytes (or ``"12G"``): refuse up front when the estimated peak
            (:func:`estimate_memory`) exceeds it.
        chunk_edges: edges read at a time.
        overwrite: replace a non-empty ``out_dir``.
        kaminpar_context: KaMinPar's preset (``kaminpar.context_names()``): ``"fast"``
            (default; on R-MAT 200k / 2M at P = 4 with edge balance it took 0.59x the time of
            ``"default"`` for a 0.6% larger cut), ``"default"``, ``"strong"``, ``"terapart"``
            (least memory), ...
        ubvec: METIS only, as in :func:`~pyg_sar.partition.write_partition`: the allowed
            max/mean of nodes and of in-edges per part (two numbers > 1); refused for the other
            methods (KaMinPar balances one weight with a fixed tolerance).
        on_nonfinite: NaN / Inf in floating-point node or edge tensors, as in
            :func:`~pyg_sar.partition.write_partition`: ``"warn"`` (default), ``"raise"``
            (ValueError naming the tensor, its counts and first row, before anything is
            written) or ``"ignore"``.

    Raises:
        ValueError: bad arguments or source (truncated or corrupt file, wrong hash, ids out of
            range, wrong dtype or shape, node tensor rows, NaN / Inf with
            ``on_nonfinite="raise"``), a non-empty ``out_dir``, ``ubvec`` with a method other
            than metis, or a ``memory_budget`` below the estimate: always before anything is
            written.
        RuntimeError: KaMinPar returned an invalid or unbalanced partition (it is checked:
            KaMinPar itself does not complain).
    """
    t_start = time.perf_counter()
    out_dir = Path(out_dir)
    source, num_parts, balance, seed = _check_arguments(source, num_parts, method, balance,
                                                        seed, threads, chunk_edges, ubvec,
                                                        on_nonfinite)
    if ubvec is not None:
        from pyg_sar.partition.metis import check_ubvec
        ubvec = check_ubvec(ubvec)
    if method == "kaminpar" and kaminpar_context not in _kaminpar().context_names():
        raise ValueError(f"unknown kaminpar_context {kaminpar_context!r} (expected one of "
                         f"{sorted(_kaminpar().context_names())})")
    n, num_edges = source.num_nodes, source.num_edges
    check_out_dir(out_dir, overwrite)
    if scratch is not None and Path(scratch).exists() and not Path(scratch).is_dir():
        raise ValueError(f"scratch '{scratch}' exists and is not a directory")
    if memory_budget is not None:
        budget = _parse_bytes(memory_budget)
        need = estimate_memory(n, num_edges, num_parts, method, chunk_edges)
        if need > budget:
            raise ValueError(f"memory_budget={memory_budget!r} ({budget / 2 ** 30:.2f} GiB) is "
                             f"below the estimated peak {need / 2 ** 30:.2f} GiB of method "
                             f"{method!r} for {n} nodes / {num_edges} edges at P={num_parts}")
    node_data = source.node_tensors()
    edge_data = source.edge_tensors()
    counts = _validate(source, chunk_edges)
    _check_finite(node_data, edge_data, on_nonfinite, chunk_edges)
    timings = {"validate": time.perf_counter() - t_start}
    threads = threads or len(os.sched_getaffinity(0))

    base = Path(scratch) if scratch is not None else out_dir.parent
    base.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.scratch-", dir=base))
    try:
        t = time.perf_counter()
        in_degree = counts.in_degree
        extra: dict[str, Any] = {}
        if num_parts == 1:
            parts = np.zeros(n, dtype=np.int64)
        elif method in ("random", "contiguous"):
            parts = simple_parts(method, n, num_parts, seed, balance, in_degree, num_edges)
        else:
            weights = 1 + in_degree if balance == "edges" and method == "kaminpar" else None
            graph = work / "graph.parhip"
            m = _write_symmetric(source, counts, graph, work, chunk_edges, weights)
            check_parhip(graph, n, m)
            timings["partitioner_input"] = time.perf_counter() - t
            t = time.perf_counter()
            if method == "metis":
                xadj, adjncy, _ = read_csr(graph)
                parts = _metis_on_csr(xadj, adjncy, in_degree, num_parts, seed, balance,
                                      ubvec)
                del xadj, adjncy
            else:
                parts, limit = _kaminpar_parts(graph, num_parts, seed, threads,
                                               weights if weights is not None else
                                               np.ones(n, dtype=np.int64), kaminpar_context)
                extra["kaminpar"] = {"threads": threads, "epsilon": KAMINPAR_EPSILON,
                                     "context": kaminpar_context, "max_block_weight": limit}
            graph.unlink()
        timings["partition"] = time.perf_counter() - t
        del counts

        # Renumbering exactly as Layout: stable by part.
        t = time.perf_counter()
        node_offsets = np.zeros(num_parts + 1, dtype=np.int64)
        np.cumsum(np.bincount(parts, minlength=num_parts), out=node_offsets[1:])
        perm = np.argsort(parts, kind="stable")
        del parts
        new_of_old = np.empty(n, dtype=np.int64)
        new_of_old[perm] = np.arange(n, dtype=np.int64)
        new_in_degree = in_degree[perm]
        del in_degree
        rank_of_new = np.repeat(np.arange(num_parts, dtype=np.int16 if num_parts < 2 ** 15
                                          else np.int64), np.diff(node_offsets))
        rank_files = _route(source, new_of_old, rank_of_new, work, num_parts, chunk_edges)
        timings["route"] = time.perf_counter() - t

        t = time.perf_counter()
        partitioning = {"by": balance, "partitioner": "kaminpar" if method == "kaminpar"
                        and num_parts > 1 else partitioner_of(method, num_parts),
                        "ubvec": None if ubvec is None else [float(u) for u in ubvec]}
        with staged_dir(out_dir, overwrite) as tmp:
            meta = _write_ranks(tmp, work, rank_files, node_offsets, perm, new_of_old,
                                new_in_degree, rank_of_new, node_data, edge_data, num_edges,
                                method, seed, partitioning, source, extra)
        timings["write"] = time.perf_counter() - t
    finally:
        shutil.rmtree(work, ignore_errors=True)
    timings["total"] = time.perf_counter() - t_start
    return report_from_meta(out_dir, meta, timings)


def _spec(array: np.ndarray) -> dict:
    """``meta.json``'s key spec of a memory-mapped tensor, as ``write_partition`` writes it."""
    dtype = torch.from_numpy(np.empty(0, dtype=array.dtype)).dtype
    return {"dtype": dtype_name(dtype), "storage_dtype": storage_dtype_name(dtype),
            "shape": list(array.shape)}


def _write_ranks(tmp: Path, work: Path, rank_files: list[Path], node_offsets: np.ndarray,
                 perm: np.ndarray, new_of_old: np.ndarray, in_degree: np.ndarray,
                 rank_of_new: np.ndarray, node_data: dict[str, np.ndarray],
                 edge_data: dict[str, np.ndarray], num_edges: int, method: str, seed: int,
                 partitioning: dict, source: EdgeSource, extra: dict) -> dict:
    """Passes 4 and 5: every rank's files, then the send lists and ``meta.json``."""
    num_parts = len(rank_files)
    files: dict[str, str] = {}

    def save(rel: str, array: np.ndarray) -> None:
        files[rel] = save_npy(tmp / rel, array)

    save(fmt.NODE_MAP_FILE, new_of_old)
    parts_info = []
    for r, name in enumerate(rank_files):
        lo, hi = int(node_offsets[r]), int(node_offsets[r + 1])
        records = np.fromfile(name, dtype=np.int64).reshape(-1, _RECORD)
        name.unlink()
        src, dst, pos = records[:, 0], records[:, 1], records[:, 2]
        src_rank = rank_of_new[src]
        order = stored_order(src, dst, np.full(src.shape[0], r, dtype=src_rank.dtype),
                             src_rank, int(perm.shape[0]), num_parts)
        block_counts = np.bincount(src_rank, minlength=num_parts).astype(np.int64)
        del src_rank
        src, dst, edge_perm = src[order], dst[order], pos[order]
        del records, order, pos
        offsets = np.zeros(num_parts + 1, dtype=np.int64)
        np.cumsum(block_counts, out=offsets[1:])
        recv = block_recv(src, offsets, r)
        rowptr, col = block_structure(src, dst, offsets, recv, r, lo, hi)
        del src, dst
        for s, ids in enumerate(recv):
            np.save(work / f"recv_{r}_{s}.npy", ids, allow_pickle=False)
        recv_all = np.concatenate(recv)
        (tmp / fmt.part_dir(r) / "node").mkdir(parents=True)
        (tmp / fmt.part_dir(r) / "edge").mkdir()
        node_ids = perm[lo:hi]
        structure = {"node_ids": node_ids, "in_degree": in_degree[lo:hi], "rowptr": rowptr,
                     "col": col, "edge_ids": edge_perm, "recv_node_ids": perm[recv_all],
                     "recv_in_degree": in_degree[recv_all]}
        for key, array in structure.items():
            save(fmt.structure_file(r, key), array)
        del rowptr, col, structure
        for key, value in node_data.items():  # node ids ascending: one sweep of the memmap
            save(fmt.node_file(r, key), to_storage(torch.from_numpy(np.asarray(value[node_ids]))))
        if edge_data:
            sorted_ids = np.sort(edge_perm)
            where = np.searchsorted(sorted_ids, edge_perm)
            for key, value in edge_data.items():
                rows = np.asarray(value[sorted_ids])[where]
                save(fmt.edge_file(r, key), to_storage(torch.from_numpy(rows)))
        parts_info.append({"block_num_edges": [int(c) for c in block_counts],
                           "recv_counts": [int(x.size) for x in recv]})
        del edge_perm, recv, recv_all

    for r in range(num_parts):  # pass 5: rank r sends what every q receives from it
        lo = int(node_offsets[r])
        send = [np.load(work / f"recv_{q}_{r}.npy", allow_pickle=False) - lo
                for q in range(num_parts)]
        save(fmt.structure_file(r, "send_idx"), np.concatenate(send))
        parts_info[r]["send_counts"] = [int(x.size) for x in send]

    x = node_data.get("x")
    y = node_data.get("y")
    num_classes = _num_classes(SimpleNamespace(num_classes=source.num_classes),
                               None if y is None else torch.from_numpy(np.array(y)))
    node_specs = {k: _spec(v) for k, v in node_data.items()}
    edge_specs = {k: _spec(v) for k, v in edge_data.items()}
    meta = build_meta(
        node_offsets=node_offsets, num_edges=num_edges, parts_info=parts_info, files=files,
        num_features=int(x.shape[1]) if x is not None and x.ndim == 2 else
        (1 if x is not None else 0),
        num_classes=num_classes, method=method, seed=seed, node_keys=node_specs,
        edge_keys=edge_specs, partitioning=partitioning,
        max_in_degree=int(in_degree.max()) if in_degree.size else 0)
    meta.update(extra)
    write_meta(tmp, meta)
    return meta
