"""Capacity planner: per-rank peak memory, bytes per epoch and epoch time of a SAR training run.

    python -m pyg_sar.plan --nodes 2708 --edges 10556 --features 1433 --classes 7 \\
        --model sage --hidden 256 --layers 3 --mode sar --world-sizes 1 2 4 8
    python -m pyg_sar.plan --preset papers100m     # next to the SAR paper's figures
    python -m pyg_sar.plan --parts parts/rmat-4    # every rank of a written partition

The model follows what the engine allocates (``pyg_sar/core/walk.py``, ``core/sar.py``): per
rank, the partition's tensors (features, labels, masks, the CSR blocks, send lists and
degrees), the index structures the first step builds and keeps (24 bytes per in-edge: each
block's destinations and its transpose for backward), the model's parameters with their
gradient and two Adam moments, and the working memory of a training step: per-node activations
saved for backward, plus what each mode keeps of the remote rows (``sar``: one block of rows in
flight; ``sa``: every fetched row of every layer; ``halo``: the whole halo of every layer, and
PyG's own per-edge tensors of the unmodified propagate). Bytes per epoch are exact given the
halo: every layer sends the rows its peers need (its wire width: projected rows where GraphSAGE
projects first, features plus attention scores for GAT) and returns the gradients of the rows
it received; mode ``sar`` re-fetches rows in backward where the message is not linear in them
(attention).

The few constants (how many bytes of working memory per structural byte, the runtime's
resident size, the compute rates, the METIS halo ratio) were fitted with
``benchmarks/plan_validation.py`` on runs measured on the development machine (2 cores, torch
CPU, MPICH and gloo, float32); see :data:`CONSTANTS` and
``benchmarks/results/plan_validation.md``. Memory is resident size with glibc returning freed
blocks to the kernel (``MALLOC_MMAP_THRESHOLD_=131072 MALLOC_TRIM_THRESHOLD_=131072``, as the
benchmarks run): with glibc's default thresholds freed blocks of up to 32 MiB stay in the heap
and a rank's resident size grows from epoch to epoch above the prediction (measured: 654-828 MB
against ~490-520 MB with the variables, R-MAT 100k / 1M, P = 4, 5 epochs).
Epoch time = compute (fitted rates of one thread) + bytes / link bandwidth, with no overlap of
the two (the measured runs used MPICH, where a fetch moves only inside waits). Weak spots: the
METIS halo estimate (pass a measured ``--halo-fraction`` or ``--parts``), compute time on
other hardware, and GPU memory (not modelled: the constants are CPU RSS).

:func:`predict` assumes every rank holds ``N / P`` nodes, ``E / P`` edges and the mean halo;
on a power-law graph partitioned by nodes one rank can hold most edges and halo rows.
:func:`predict_partition` predicts each rank of a written partition from its own sizes in
``meta.json`` (nodes, in-edges, rows received and sent): bytes sent per rank are then exact.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

from pyg_sar.cli_types import HelpFormatter

MODELS = ("sage", "gcn", "gat")
MODES = ("sar", "sa", "halo")
PARTITIONINGS = ("metis", "random")
MB = 2**20
GB = 10**9

# Fitted by benchmarks/plan_validation.py (results/plan_validation.json, "fit"). Working memory
# (3 graphs x P = 1, 2, 4, 8 x {sage, gat} x {sar, sa, halo}): coefficients per model family
# (gcn uses sage's: both take the linear fast path), bytes of step peak per byte of each
# structural term (see :func:`step_terms`). The runtime: the median over the ranks of fresh
# training processes (benchmarks/partition_balance.py, benchmarks/limited_hosts.py) of what
# they hold besides the predicted terms. Compute rates per family: GraphSAGE's from the
# per-rank CPU time of partition_balance.py's steps, GAT's from the validation runs.
CONSTANTS: dict = {
    "step": {
        "sage": {"act": 1.0, "grad": 1.7009, "block": 0.0,
                 "kept": 0.7549, "edge": 0.8417, "peers": 0.7893},
        "gat": {"act": 1.0, "grad": 3.87, "block": 0.3932,
                 "kept": 0.888, "edge": 1.6932, "peers": 0.0569},
    },
    "runtime_mb": 350.3,  # python + torch + PyG + MPI / gloo + allocator, besides the tensors
    "dense_flops_per_s": {"sage": 3.08e+10, "gat": 2.81e+10},  # one thread, linear layers
    "edge_rows_per_s": {"sage": 1.23e+09, "gat": 1.83e+08},
    "step_overhead_s": {"sage": 0.2755, "gat": 0.0},
    # METIS halo fraction / random-partition estimate: geometric mean over the measured
    # partitions; it ranged 0.077 - 0.963.
    "metis_halo_ratio": 0.191,
}


@dataclass(frozen=True)
class Layer:
    """One message-passing layer as the engine sees it.

    Attributes:
        fan_in / fan_out: input and output width per node (``fan_out`` over all heads).
        wire: width of one row that crosses the network (what a peer fetches per source node).
        matmul: multiply-adds per node of the layer's dense projections.
        grads_back: whether gradients of fetched rows go back to their owners (the fetched
            tensor requires grad: not the raw input features).
        refetch: whether mode ``sar`` fetches the rows again in backward (message not linear
            in the rows: attention).
        heads: attention heads (1 otherwise).
    """

    fan_in: int
    fan_out: int
    wire: int
    matmul: int
    grads_back: bool
    refetch: bool
    heads: int = 1


@dataclass(frozen=True)
class Workload:
    """What to plan for. Sizes are of the whole graph; ``halo_fraction`` is per rank.

    Attributes:
        num_nodes, num_edges: the graph (directed edges as stored: an undirected edge counts
            twice).
        num_features, num_classes, hidden, layers, heads: the model (``hidden`` over all heads,
            as PyG's ``GAT(hidden_channels=...)``; GAT's last layer averages its heads).
        model: ``"sage"``, ``"gcn"`` or ``"gat"``.
        mode: ``"sar"``, ``"sa"`` or ``"halo"``.
        world_size: ranks P.
        halo_fraction: rows a rank receives from peers / nodes outside the rank, in [0, 1]
            (measured on a partition: ``sum(graph.recv_counts) / (N - n)``, mean over ranks);
            ``None``: estimated for ``partitioning`` (:func:`estimate_halo_fraction`).
        partitioning: ``"metis"`` or ``"random"`` (used only for the estimate).
        pipeline_depth: block fetches in flight ahead of the computation (0 on MPICH, 1 on
            gloo / NCCL by default).
        dtype_bytes: 4 (float32) or 8 (float64).
        norm: batch norm between layers (as ``python -m pyg_sar.train --norm batch_norm``).
    """

    num_nodes: int
    num_edges: int
    num_features: int
    num_classes: int
    hidden: int = 256
    layers: int = 3
    heads: int = 1
    model: str = "sage"
    mode: str = "sar"
    world_size: int = 1
    halo_fraction: Optional[float] = None
    partitioning: str = "metis"
    pipeline_depth: int = 0
    dtype_bytes: int = 4
    norm: bool = True

    def __post_init__(self) -> None:
        for name in ("num_nodes", "num_edges", "num_features", "num_classes", "hidden",
                     "layers", "heads", "world_size"):
            v = getattr(self, name)
            if not isinstance(v, int) or isinstance(v, bool) or v < (0 if name == "num_edges"
                                                                      else 1):
                raise ValueError(f"Workload: {name} must be a positive integer (got {v!r})")
        if self.model not in MODELS:
            raise ValueError(f"Workload: model must be one of {MODELS} (got {self.model!r})")
        if self.mode not in MODES:
            raise ValueError(f"Workload: mode must be one of {MODES} (got {self.mode!r})")
        if self.partitioning not in PARTITIONINGS:
            raise ValueError(f"Workload: partitioning must be one of {PARTITIONINGS} "
                             f"(got {self.partitioning!r})")
        if self.world_size > self.num_nodes:
            raise ValueError(f"Workload: world_size {self.world_size} exceeds num_nodes "
                             f"{self.num_nodes} (every rank needs nodes)")
        hf = self.halo_fraction
        if hf is not None and (isinstance(hf, bool) or not isinstance(hf, (int, float))
                               or not 0.0 <= hf <= 1.0 or math.isnan(hf)):
            raise ValueError(f"Workload: halo_fraction must be in [0, 1] (got {hf!r})")
        if not isinstance(self.pipeline_depth, int) or self.pipeline_depth < 0:
            raise ValueError(f"Workload: pipeline_depth must be an integer >= 0 "
                             f"(got {self.pipeline_depth!r})")
        if self.dtype_bytes not in (4, 8):
            raise ValueError(f"Workload: dtype_bytes must be 4 or 8 (got {self.dtype_bytes!r})")
        if self.model == "gat" and self.hidden % self.heads:
            raise ValueError(f"Workload: GAT hidden {self.hidden} must be a multiple of heads "
                             f"{self.heads}")


@dataclass(frozen=True)
class Plan:
    """The planner's answer for one :class:`Workload` (bytes are per rank).

    ``memory`` breaks ``peak_bytes`` down (runtime, partition data, the engine's per-edge
    caches, model state, working memory of a step); ``traffic`` breaks ``bytes_per_epoch``
    down (forward rows, backward re-fetch, gradients, gradient all-reduce); ``epoch_s`` is
    ``None`` without a bandwidth.
    """

    workload: Workload
    halo_fraction: float
    local_nodes: float
    halo_rows: float
    peak_bytes: float
    step_bytes: float
    memory: dict = field(default_factory=dict)
    bytes_per_epoch: float = 0.0
    traffic: dict = field(default_factory=dict)
    compute_s: float = 0.0
    comm_s: Optional[float] = None
    epoch_s: Optional[float] = None


def layer_specs(w: Workload) -> list[Layer]:
    """The layers of a PyG ``GraphSAGE`` / ``GCN`` / ``GAT`` model as the engine runs them."""
    out = []
    for i in range(w.layers):
        last = i == w.layers - 1
        fi = w.num_features if i == 0 else w.hidden
        if w.model == "gat":
            per_head = w.num_classes if last else w.hidden // w.heads
            fo = per_head * w.heads  # the last layer averages its heads after the softmax
            # x_j (projected, all heads) and the source attention score per head cross.
            out.append(Layer(fi, fo, fo + w.heads, fi * fo + 2 * fo, True, True, w.heads))
            continue
        fo = w.num_classes if last else w.hidden
        if w.model == "sage":
            # SARConfig.project_first: a narrowing layer projects before it aggregates.
            projected = fi > fo
            out.append(Layer(fi, fo, fo if projected else fi, 2 * fi * fo, projected or i > 0,
                             False))
        else:  # gcn projects first, always
            out.append(Layer(fi, fo, fo, fi * fo, True, False))
    return out


def estimate_halo_fraction(num_nodes: int, num_edges: int, world_size: int,
                           partitioning: str = "metis") -> float:
    """Expected halo fraction of a rank (rows it receives / nodes outside it).

    ``"random"``: a node outside the rank is needed if one of its ``d = E / N`` out-edges
    lands in the rank, ``1 - (1 - 1/P) ** d`` (a fraction ``(P - 1) / P`` of the edges is cut;
    with skewed degrees this is an upper bound). ``"metis"``: the random figure times
    ``CONSTANTS["metis_halo_ratio"]``, the mean ratio measured on this repository's METIS
    partitions (Cora, WordNet, dense SBM at P = 2, 4, 8). It varies by graph far more than
    the other constants: pass a measured halo fraction when you have a partition.
    """
    if partitioning not in PARTITIONINGS:
        raise ValueError(f"estimate_halo_fraction: partitioning must be one of "
                         f"{PARTITIONINGS} (got {partitioning!r})")
    if world_size < 1 or num_nodes < 1 or num_edges < 0:
        raise ValueError(f"estimate_halo_fraction: need world_size >= 1, num_nodes >= 1, "
                         f"num_edges >= 0 (got {world_size}, {num_nodes}, {num_edges})")
    if world_size == 1:
        return 0.0
    rand = 1.0 - (1.0 - 1.0 / world_size) ** (num_edges / num_nodes)
    if partitioning == "random":
        return rand
    return min(1.0, CONSTANTS["metis_halo_ratio"] * rand)


def step_terms(w: Workload, layers: list[Layer], n: float, e: float, h: float) -> dict:
    """Structural bytes of a training step's working memory, one entry per fitted term.

    ``act``: per-node tensors saved for backward: each layer's rows on the wire (the input of
    its aggregation) and its output, twice between layers with batch norm (the norm's input and
    the activation's output); ``grad``: per-node gradient buffers of backward (the widest
    layer); ``block``: remote rows alive at a time in mode ``sar`` (``pipeline_depth + 1``
    blocks of ``h / (P - 1)`` rows of the widest wire, and their gradients); ``kept``: every
    fetched row of every layer (``sa`` keeps them for backward, ``halo`` holds them in the
    autograd graph); ``edge``: per-edge tensors of PyG's own propagate in mode ``halo``
    (gathered rows for GraphSAGE / GCN; messages and attention coefficients for GAT,
    self-loops included); ``peers``: one MiB per peer rank (message buffers).
    """
    b, p = w.dtype_bytes, w.world_size
    last = len(layers) - 1
    act = b * n * sum(layer.wire + (2 if w.norm and i < last else 1) * layer.fan_out
                      for i, layer in enumerate(layers))
    grad = b * n * max(max(layer.wire, layer.fan_out) for layer in layers)
    widest = max(layer.wire for layer in layers)
    block = 0.0
    if w.mode == "sar" and p > 1:
        block = b * 2 * (w.pipeline_depth + 1) * (h / (p - 1)) * widest
    kept = b * h * sum(layer.wire for layer in layers) if w.mode in ("sa", "halo") else 0.0
    edge = 0.0
    if w.mode == "halo":
        if w.model == "gat":
            edge = b * (e + n) * sum(layer.fan_out + layer.heads for layer in layers)
        else:
            edge = b * e * widest
    return {"act": act, "grad": grad, "block": block, "kept": kept, "edge": edge,
            "peers": float((p - 1) * MB)}


def step_bytes(terms: dict, coef: dict, family: str, param_bytes: float) -> float:
    """Working memory of a step beyond the resting state, from :func:`step_terms` and one
    family's coefficients. GraphSAGE / GCN's per-edge tensors in mode ``halo`` are a forward
    transient (gathered rows, freed before backward's gradient buffers exist): the larger of
    the two counts. GAT's are saved for backward: both count. The parameters' gradients are
    part of the model state (freed by ``zero_grad`` before the step), so they are taken off."""
    total = sum(coef[k] * terms[k] for k in ("act", "block", "kept", "peers"))
    if family == "gat":
        total += coef["grad"] * terms["grad"] + coef["edge"] * terms["edge"]
    else:
        total += max(coef["grad"] * terms["grad"], coef["edge"] * terms["edge"])
    return max(total - param_bytes, 0.0)


def partition_stats(parts: str | os.PathLike) -> dict:
    """Sizes and the measured halo fraction of a partition folder written by
    ``pyg_sar.partition_graph`` (reads only its ``meta.json``): ``num_nodes``, ``num_edges``,
    ``num_features``, ``num_classes``, ``world_size``, ``halo_fraction`` (mean over ranks of
    rows received / nodes outside the rank).

    A heterogeneous folder (written from a ``HeteroData``) gives its figures per type instead
    (:func:`hetero_partition_stats`): ``hetero`` (``True``), ``world_size``, ``num_nodes`` and
    ``num_edges`` (all types), ``node_types`` and ``edge_types`` dicts."""
    path = Path(parts) / "meta.json"
    if not path.is_file():
        raise ValueError(f"partition_stats: {path} not found (not a partition folder)")
    try:
        meta = json.loads(path.read_text())
        if isinstance(meta, dict) and "hetero" in meta:
            return hetero_partition_stats(meta)
        total, sizes = int(meta["num_nodes"]), [int(v) for v in meta["part_num_nodes"]]
        recv = [sum(int(c) for c in part["recv_counts"]) for part in meta["parts"]]
        stats = {"num_nodes": total, "num_edges": int(meta["num_edges"]),
                 "num_features": int(meta["num_features"]),
                 "num_classes": int(meta["num_classes"]), "world_size": int(meta["num_parts"])}
    except (KeyError, TypeError, ValueError) as exc:
        raise ValueError(f"partition_stats: {path} lacks partition sizes ({exc!r})") from None
    stats["halo_fraction"] = _halo_fraction(recv, [total - n for n in sizes])
    return stats


def _halo_fraction(recv: list[int], outside: list[int]) -> float:
    """Mean over ranks of rows received / nodes outside the rank (0 for one rank)."""
    return sum(r / o for r, o in zip(recv, outside) if o) / len(recv) if len(recv) > 1 else 0.0


def hetero_partition_stats(meta: dict) -> dict:
    """The figures of a heterogeneous partition's ``meta.json`` (see :func:`partition_stats`):
    per node type ``num_nodes``, ``num_features``, ``num_classes``, ``part_num_nodes``; per
    edge type ``(src, rel, dst)`` ``num_edges``, ``part_num_edges``, ``edge_cut`` and
    ``halo_fraction`` (mean over ranks of source-type rows received / source-type nodes
    outside the rank). The planner's model is homogeneous, so there is no overall
    ``num_features`` or ``halo_fraction``. Raises ``KeyError`` / ``TypeError`` /
    ``ValueError`` on a malformed section (:func:`partition_stats` reports them)."""
    world = int(meta["num_parts"])
    node_types = {}
    for info in meta["hetero"]["node_types"]:
        offsets = [int(o) for o in info["node_offsets"]]
        node_types[str(info["name"])] = {
            "num_nodes": int(info["num_nodes"]), "num_features": info.get("num_features"),
            "num_classes": info.get("num_classes"),
            "part_num_nodes": [b - a for a, b in zip(offsets, offsets[1:])]}
    edge_types = {}
    for info in meta["hetero"]["edge_types"]:
        src = node_types[info["src"]]
        recv = [sum(int(c) for c in part["recv_counts"]) for part in info["parts"]]
        edge_types[(info["src"], info["rel"], info["dst"])] = {
            "num_edges": int(info["num_edges"]),
            "part_num_edges": [int(e) for e in info["part_num_edges"]],
            "edge_cut": int(info["edge_cut"]),
            "halo_fraction": _halo_fraction(
                recv, [src["num_nodes"] - n for n in src["part_num_nodes"]])}
    return {"hetero": True, "world_size": world,
            "num_nodes": sum(t["num_nodes"] for t in node_types.values()),
            "num_edges": sum(e["num_edges"] for e in edge_types.values()),
            "node_types": node_types, "edge_types": edge_types}


def _data_bytes(w: Workload, n: float, e: float, h: float,
                send: Optional[float] = None) -> float:
    """The partition as loaded (``pyg_sar.load_partition``): node tensors, CSR blocks (a
    row pointer over local destinations per source rank), send lists, degrees, ids.
    ``send``: the rank's send rows (``None``: as many as it receives, true on average)."""
    node = n * (w.dtype_bytes * w.num_features + 8 + 3 + 8 + 8)  # x, y, masks, node_ids, in_deg
    edges = e * (8 + 8)  # col, edge_ids
    rowptrs = w.world_size * (n + 1) * 8
    halo = h * (8 + 8) + (h if send is None else send) * 8  # recv ids, degrees; send_idx
    return node + edges + rowptrs + halo


def _cache_bytes(w: Workload, n: float, e: float, h: float) -> float:
    """Per-edge index structures the engine builds at the first step and keeps on the graph
    (``DistGraph.cached``) for the rest of the run: every block's destination per edge
    (``ViewBlock.row``, int64) and, in modes ``sar`` / ``sa``, the block transposed for
    backward (``core.kernels.transpose_csr``: the edges' rows and permutation, int64, and a
    column pointer per source row); in mode ``halo`` the ``[2, E]`` edge index of PyG's
    propagate instead. GAT's view adds one self-loop per node. Measured: a rank holding 84% of
    the edges keeps ~24 bytes per edge more than its peers after the first step, the same on
    the R-MAT runs of the per-rank validation."""
    edges = e + (n if w.model == "gat" else 0.0)
    if w.mode == "halo":
        return edges * (8 + 16)  # ViewBlock.row + the cached halo edge index
    colptr = (n + h + w.world_size) * 8  # one column pointer per source row, per block
    return edges * (8 + 8 + 8) + colptr  # row, transposed rows, permutation


def _param_count(layers: list[Layer], w: Workload) -> int:
    norm = 4 * sum(layer.fan_out for layer in layers[:-1]) if w.norm else 0
    return int(sum(layer.matmul + layer.fan_out for layer in layers) + norm)


def structure(w: Workload) -> dict:
    """The structural quantities of ``w`` that the fitted constants scale (per rank):
    halo fraction and rows, local nodes and edges, the layers, the working-memory terms
    (:func:`step_terms`), the partition's bytes, the parameter count, the dense FLOPs and the
    gathered row-elements of one epoch."""
    p = w.world_size
    hf = (w.halo_fraction if w.halo_fraction is not None
          else estimate_halo_fraction(w.num_nodes, w.num_edges, p, w.partitioning))
    n = w.num_nodes / p
    return _structure(w, n, w.num_edges / p, hf * (w.num_nodes - n), None, hf)


def rank_structure(w: Workload, n: float, e: float, h: float, send: float) -> dict:
    """:func:`structure` of one rank of ``w``'s graph holding ``n`` nodes, ``e`` in-edges,
    ``h`` halo rows (received) and ``send`` send rows (what :func:`predict_ranks` uses)."""
    outside = w.num_nodes - n
    return _structure(w, float(n), float(e), float(h), float(send),
                      h / outside if outside else 0.0)


def _structure(w: Workload, n: float, e: float, h: float, send: Optional[float],
               hf: float) -> dict:
    """:func:`structure` of one rank holding ``n`` nodes, ``e`` in-edges, ``h`` halo rows
    (received) and ``send`` send rows."""
    layers = layer_specs(w)
    gat = w.model == "gat"
    # forward + weight gradient, + input gradient past the first layer (x needs none)
    dense = sum(2 * n * layer.matmul * (2 if i == 0 else 3) for i, layer in enumerate(layers))
    passes = 3 if (w.mode == "sar" and gat) else 2  # forward, backward (+ sar recompute)
    edge_rows = sum((e + (n if gat else 0)) * layer.wire * passes for layer in layers)
    return {"halo_fraction": hf, "n": n, "e": e, "h": h, "layers": layers,
            "terms": step_terms(w, layers, n, e, h), "data": _data_bytes(w, n, e, h, send),
            "caches": _cache_bytes(w, n, e, h),
            "params": _param_count(layers, w), "dense_flops": dense, "edge_rows": edge_rows}


def predict(w: Workload, bandwidth_bps: Optional[float] = None,
            latency_s: float = 0.0, constants: Optional[dict] = None,
            compute_speedup: float = 1.0) -> Plan:
    """Predict per-rank peak memory, bytes per epoch and (with ``bandwidth_bps``, bits per
    second of each rank's link) epoch time for ``w``.

    Args:
        w: the workload.
        bandwidth_bps: link rate of each rank in bits per second (``None``: no epoch time).
        latency_s: per-message latency added to the communication time.
        constants: fitted constants other than :data:`CONSTANTS` (same layout).
        compute_speedup: how much faster a rank computes than the one thread the rates were
            fitted on (e.g. its cores, for a rough figure).
    """
    _check_rates("predict", bandwidth_bps, latency_s, compute_speedup)
    return _predict(w, structure(w), bandwidth_bps, latency_s,
                    CONSTANTS if constants is None else constants, compute_speedup, None)


def _check_rates(where: str, bandwidth_bps: Optional[float], latency_s: float,
                 compute_speedup: float) -> None:
    if bandwidth_bps is not None and (isinstance(bandwidth_bps, bool)
                                      or not bandwidth_bps > 0 or math.isinf(bandwidth_bps)):
        raise ValueError(f"{where}: bandwidth_bps must be a positive number of bits per second "
                         f"(got {bandwidth_bps!r})")
    if not latency_s >= 0:
        raise ValueError(f"{where}: latency_s must be >= 0 (got {latency_s!r})")
    if not compute_speedup > 0 or math.isinf(compute_speedup):
        raise ValueError(f"{where}: compute_speedup must be a positive number "
                         f"(got {compute_speedup!r})")


def _rate(c: dict, key: str, family: str) -> float:
    """A compute constant: per model family (a dict) or one for all (a number)."""
    v = c[key]
    return v[family] if isinstance(v, dict) else v


def _predict(w: Workload, s: dict, bandwidth_bps: Optional[float], latency_s: float,
             c: dict, compute_speedup: float, send: Optional[float]) -> Plan:
    """:func:`predict` from a rank's :func:`structure`; ``send``: its send rows (``None``:
    as many as it receives, the mean over ranks)."""
    p, h, layers = w.world_size, s["h"], s["layers"]
    out_rows = h if send is None else send
    family = "gat" if w.model == "gat" else "sage"
    coef = c["step"][family]
    param_bytes = s["params"] * w.dtype_bytes
    step = step_bytes(s["terms"], coef, family, param_bytes)
    state = param_bytes * 4  # parameter, gradient, two Adam moments
    runtime = c["runtime_mb"] * MB
    memory = {"runtime": runtime, "data": s["data"], "caches": s["caches"],
              "model_state": state, "step": step,
              **{f"step_{k}": coef[k] * v for k, v in s["terms"].items()}}

    b = w.dtype_bytes
    # A rank sends its peers the rows they receive from it (and re-sends them where sar
    # re-fetches) and returns the gradients of the rows it received.
    rows = b * out_rows * sum(layer.wire for layer in layers)
    grads = b * h * sum(layer.wire for layer in layers if layer.grads_back)
    refetch = (b * out_rows * sum(layer.wire for layer in layers if layer.refetch)
               if w.mode == "sar" else 0.0)
    allreduce = 2 * (p - 1) / p * s["params"] * b  # ring all-reduce of the gradients
    traffic = {"rows": rows, "refetch": refetch, "grads": grads, "allreduce": allreduce}
    engine = rows + refetch + grads

    compute = (s["dense_flops"] / _rate(c, "dense_flops_per_s", family)
               + s["edge_rows"] / _rate(c, "edge_rows_per_s", family)
               + _rate(c, "step_overhead_s", family)) / compute_speedup
    comm = epoch = None
    if bandwidth_bps is not None:
        messages = 2 * len(layers) * (p - 1) * (2 if w.mode == "sar" and family == "gat" else 1)
        comm = (engine + allreduce) * 8 / bandwidth_bps + messages * latency_s
        epoch = compute + comm
    return Plan(workload=w, halo_fraction=s["halo_fraction"], local_nodes=s["n"],
                halo_rows=h, peak_bytes=runtime + s["data"] + s["caches"] + state + step,
                step_bytes=step,
                memory=memory, bytes_per_epoch=engine + allreduce, traffic=traffic,
                compute_s=compute, comm_s=comm, epoch_s=epoch)


# --------------------------------------------------------------------------- a partition
@dataclass(frozen=True)
class RankPlan:
    """The prediction for one rank of a written partition (:func:`predict_partition`):
    its sizes from ``meta.json`` and the :class:`Plan` computed from them."""

    rank: int
    num_nodes: int
    num_edges: int
    halo_rows: int
    send_rows: int
    plan: Plan


@dataclass(frozen=True)
class PartitionPlan:
    """Per-rank predictions for a partition folder; ``workload`` carries the partition's
    sizes (its ``halo_fraction`` is the mean over ranks)."""

    parts: Path
    workload: Workload
    ranks: list[RankPlan]

    @property
    def max_peak(self) -> RankPlan:
        """The rank with the largest predicted peak memory."""
        return max(self.ranks, key=lambda r: r.plan.peak_bytes)

    @property
    def max_traffic(self) -> RankPlan:
        """The rank that sends the most bytes per epoch."""
        return max(self.ranks, key=lambda r: r.plan.bytes_per_epoch)


def partition_ranks(parts: str | os.PathLike) -> list[dict]:
    """Per rank of a homogeneous partition folder (from its ``meta.json``): ``num_nodes``,
    ``num_edges`` (in-edges stored on the rank), ``halo_rows`` (rows it receives) and
    ``send_rows`` (rows it sends). Raises ``ValueError`` naming the folder when it is not a
    homogeneous partition or its per-part lists disagree with ``num_parts``."""
    path = Path(parts) / "meta.json"
    if not path.is_file():
        raise ValueError(f"partition_ranks: {path} not found (not a partition folder)")
    try:
        meta = json.loads(path.read_text())
    except ValueError as exc:
        raise ValueError(f"partition_ranks: {path} is not valid JSON ({exc})") from None
    if isinstance(meta, dict) and "hetero" in meta:
        raise ValueError(f"partition_ranks: {path} is a heterogeneous partition (per-rank "
                         "prediction models homogeneous graphs)")
    try:
        world = int(meta["num_parts"])
        nodes = [int(v) for v in meta["part_num_nodes"]]
        edges = [int(v) for v in meta["part_num_edges"]]
        recv = [sum(int(c) for c in part["recv_counts"]) for part in meta["parts"]]
        send = [sum(int(c) for c in part["send_counts"]) for part in meta["parts"]]
    except (KeyError, TypeError, ValueError) as exc:
        raise ValueError(f"partition_ranks: {path} lacks per-part sizes ({exc!r})") from None
    if not world == len(nodes) == len(edges) == len(recv) == len(send):
        raise ValueError(f"partition_ranks: {path}: num_parts {world} but per-part lists of "
                         f"{len(nodes)} / {len(edges)} / {len(recv)} / {len(send)} entries")
    return [{"num_nodes": n, "num_edges": e, "halo_rows": h, "send_rows": s}
            for n, e, h, s in zip(nodes, edges, recv, send)]


def predict_partition(parts: str | os.PathLike, workload: Optional[Workload] = None,
                      bandwidth_bps: Optional[float] = None, latency_s: float = 0.0,
                      constants: Optional[dict] = None,
                      compute_speedup: float = 1.0) -> PartitionPlan:
    """Predict every rank of a written partition from its own sizes: nodes ``n_r``, in-edges
    ``e_r``, halo rows received and send rows from ``meta.json``, instead of ``N / P``,
    ``E / P`` and a mean halo (:func:`predict`). On an unbalanced partition (METIS with
    ``balance="nodes"`` on a power-law graph) the rank holding most edges or most halo rows
    sets the peak; bytes sent per rank are exact for the engine's traffic.

    Args:
        parts: a folder written by ``pyg_sar.partition_graph`` (homogeneous).
        workload: the model and run settings (``model``, ``hidden``, ``layers``, ``heads``,
            ``mode``, ``pipeline_depth``, ``dtype_bytes``, ``norm``); its graph sizes and
            ``world_size`` are replaced by the partition's. ``None``: the defaults
            (GraphSAGE 3 x 256, mode sar, batch norm, float32).
        bandwidth_bps, latency_s, constants, compute_speedup: as :func:`predict`.
    """
    _check_rates("predict_partition", bandwidth_bps, latency_s, compute_speedup)
    st = partition_stats(parts)
    if st.get("hetero"):
        raise ValueError(f"predict_partition: {parts} is a heterogeneous partition (node "
                         f"types {list(st['node_types'])}); the planner models homogeneous "
                         "graphs")
    ranks = partition_ranks(parts)
    sizes = dict(num_nodes=st["num_nodes"], num_edges=st["num_edges"],
                 num_features=st["num_features"], num_classes=st["num_classes"],
                 world_size=st["world_size"], halo_fraction=min(1.0, st["halo_fraction"]))
    if workload is None:
        w = Workload(**sizes)
    else:
        import dataclasses
        w = dataclasses.replace(workload, **sizes)
    return PartitionPlan(Path(parts), w, predict_ranks(w, ranks, bandwidth_bps, latency_s,
                                                       constants, compute_speedup))


def predict_ranks(w: Workload, ranks: list[dict], bandwidth_bps: Optional[float] = None,
                  latency_s: float = 0.0, constants: Optional[dict] = None,
                  compute_speedup: float = 1.0) -> list[RankPlan]:
    """:func:`predict_partition` from per-rank sizes (``num_nodes``, ``num_edges``,
    ``halo_rows``, ``send_rows``, as :func:`partition_ranks` gives them) instead of a folder;
    ``w`` holds the whole graph's sizes and ``world_size == len(ranks)``."""
    _check_rates("predict_ranks", bandwidth_bps, latency_s, compute_speedup)
    if len(ranks) != w.world_size:
        raise ValueError(f"predict_ranks: {len(ranks)} ranks but world_size {w.world_size}")
    c = CONSTANTS if constants is None else constants
    out = []
    for r, info in enumerate(ranks):
        n, e, h, send = (int(info[k]) for k in ("num_nodes", "num_edges", "halo_rows",
                                                  "send_rows"))
        s = rank_structure(w, n, e, h, send)
        out.append(RankPlan(r, n, e, h, send,
                            _predict(w, s, bandwidth_bps, latency_s, c, compute_speedup,
                                     float(send))))
    return out


def _rank_table(pp: PartitionPlan, unit: float) -> list[str]:
    lines = [f"per rank ({pp.parts}: {pp.workload.model} {pp.workload.mode}, "
             f"P = {pp.workload.world_size}):",
             "rank     nodes   in-edges  halo rows  send rows   peak MB   data MB   step MB "
             "  MB sent  compute s"]
    for r in pp.ranks:
        pl = r.plan
        lines.append(f"{r.rank:4d} {r.num_nodes:9d} {r.num_edges:10d} {r.halo_rows:10d} "
                     f"{r.send_rows:10d} {pl.peak_bytes / unit:9.1f} "
                     f"{pl.memory['data'] / unit:9.1f} {pl.step_bytes / unit:9.1f} "
                     f"{pl.bytes_per_epoch / unit:9.2f} {pl.compute_s:10.3f}")
    top, busy = pp.max_peak, pp.max_traffic
    lines.append(f"max peak: rank {top.rank}, {top.plan.peak_bytes / unit:.1f} MB; most bytes "
                 f"sent: rank {busy.rank}, {busy.plan.bytes_per_epoch / unit:.2f} MB/epoch "
                 "(incl. gradient all-reduce); compute s: one thread of the fitting machine")
    return lines


# --------------------------------------------------------------------------- CLI
PAPERS100M = {"num_nodes": 111_059_956, "num_edges": 3_231_371_744, "num_features": 128,
              "num_classes": 172}
# SAR paper (Mostafa 2021, arXiv 2111.06483): memory per machine on ogbn-papers100M.
PAPER_GB = {"sage": {32: 95, 64: 47, 128: 25}, "gat": {32: 67, 64: 35, 128: 19}}


def parse_bandwidth(text: str) -> float:
    """``"100mbit"``, ``"1gbit"``, ``"10gbit"``, ``"200gbit"`` or bits per second -> bits/s."""
    t = str(text).strip().lower()
    scale = {"kbit": 1e3, "mbit": 1e6, "gbit": 1e9}
    for unit, mult in scale.items():
        if t.endswith(unit):
            t, factor = t[:-len(unit)], mult
            break
    else:
        factor = 1.0
    try:
        value = float(t) * factor
    except ValueError:
        raise ValueError(f"bandwidth {text!r}: expected e.g. 100mbit, 1gbit or bits/s") from None
    if not value > 0 or math.isinf(value):
        raise ValueError(f"bandwidth {text!r} must be positive")
    return value


def _row(plan: Plan, unit: float, paper: Optional[float] = None) -> str:
    w, m = plan.workload, plan.memory
    t = "" if plan.epoch_s is None else f" {plan.epoch_s:9.2f}"
    ref = "" if paper is None else f" {paper:9.0f}"
    return (f"{w.model:5s} {w.mode:4s} {w.world_size:4d} {plan.halo_fraction:6.3f} "
            f"{plan.peak_bytes / unit:9.2f} {m['data'] / unit:9.2f} {plan.step_bytes / unit:9.2f} "
            f"{plan.bytes_per_epoch / unit:10.3f}{t}{ref}")


def _header(unit: str, bandwidth: bool, paper: bool) -> str:
    return (f"model mode    P   halo   peak {unit}   data {unit}   step {unit} {unit}/epoch"
            + ("   epoch s" if bandwidth else "") + ("  paper GB" if paper else ""))


def main(argv: Optional[list[str]] = None) -> int:
    p = argparse.ArgumentParser(prog="python -m pyg_sar.plan",
                                description="Predict per-rank peak memory, bytes per epoch "
                                            "and epoch time of a pyg_sar training run.",
                                formatter_class=HelpFormatter, epilog="""examples:
  python -m pyg_sar.plan --parts parts --hidden 256 --layers 3 --model sage
  python -m pyg_sar.plan --nodes 2449029 --edges 123718280 --features 100 --classes 47 \\
      --world-sizes 4 8 16 --bandwidth 10gbit   ogbn-products-sized, three cluster sizes
  python -m pyg_sar.plan --preset papers100m    next to the SAR paper's figures
""")
    p.add_argument("--preset", choices=["papers100m"],
                   help="ogbn-papers100M: 3-layer GraphSAGE 256 and GAT 128 x 4 heads at "
                        "P = 32, 64, 128, next to the SAR paper's figures")
    p.add_argument("--parts", help="a partition folder: sizes, P and the measured halo "
                                    "fraction from its meta.json")
    p.add_argument("--nodes", type=int)
    p.add_argument("--edges", type=int, help="directed edges (an undirected edge counts twice)")
    p.add_argument("--features", type=int)
    p.add_argument("--classes", type=int)
    p.add_argument("--hidden", type=int, default=256, help="width of hidden layers (all heads)")
    p.add_argument("--layers", type=int, default=3)
    p.add_argument("--heads", type=int, default=1)
    p.add_argument("--model", choices=MODELS, default="sage")
    p.add_argument("--mode", choices=MODES, nargs="+", default=["sar"])
    p.add_argument("--world-sizes", type=int, nargs="+", default=[1, 2, 4, 8])
    p.add_argument("--halo-fraction", type=float, default=None,
                   help="measured: rows a rank receives / nodes outside it (default: estimate)")
    p.add_argument("--partitioning", choices=PARTITIONINGS, default="metis")
    p.add_argument("--pipeline-depth", type=int, default=0)
    p.add_argument("--bandwidth", default=None, help="link rate per rank, e.g. 1gbit")
    p.add_argument("--latency-ms", type=float, default=0.0)
    p.add_argument("--compute-speedup", type=float, default=1.0,
                   help="a rank computes this many times faster than one thread here")
    p.add_argument("--dtype", choices=["float32", "float64"], default="float32")
    p.add_argument("--norm", choices=["batch_norm", "none"], default="batch_norm",
                   help="norm between layers, as pyg_sar.train --norm (default batch_norm; "
                        "pyg_sar.train's own default is none)")
    args = p.parse_args(argv)
    bw = parse_bandwidth(args.bandwidth) if args.bandwidth is not None else None
    dtype_bytes = 4 if args.dtype == "float32" else 8
    common = dict(halo_fraction=args.halo_fraction, partitioning=args.partitioning,
                  pipeline_depth=args.pipeline_depth, dtype_bytes=dtype_bytes,
                  norm=args.norm == "batch_norm")
    if args.preset == "papers100m":
        if bw is None:
            bw = 200e9  # the paper's InfiniBand
        print("ogbn-papers100M (111,059,956 nodes, 3,231,371,744 directed edges, 128 features, "
              "172 classes), float32, per rank; link "
              f"{bw / 1e9:g} Gbit/s; halo: "
              + (f"{args.halo_fraction}" if args.halo_fraction is not None
                 else f"{args.partitioning} estimate"))
        print(_header("GB", True, True))
        for model, hidden, heads in (("sage", 256, 1), ("gat", 512, 4)):
            for mode in args.mode:
                for world in (32, 64, 128):
                    w = Workload(**PAPERS100M, hidden=hidden, layers=3, heads=heads, model=model,
                                 mode=mode, world_size=world, **common)
                    pl = predict(w, bw, args.latency_ms / 1e3, None, args.compute_speedup)
                    print(_row(pl, GB, PAPER_GB[model][world]))
        print("GAT: 4 heads of 128 channels (hidden 512). 'paper GB': SAR paper, memory per "
              "machine (whole process, DGL); 'peak GB': this planner, one rank per machine.")
        if args.halo_fraction is None:
            print(f"Halo: {args.partitioning} estimate; the METIS one is "
                  f"{CONSTANTS['metis_halo_ratio']} x the random figure, a ratio measured "
                  "here between 0.08 (Cora, WordNet) and 0.96 (dense SBM): bytes scale with "
                  "it, sar memory hardly. Epoch s: compute at one thread of the fitting "
                  "machine (--compute-speedup for more) + bytes / link rate.")
        return 0
    worlds = args.world_sizes
    if args.parts is not None:
        st = partition_stats(args.parts)
        if st.get("hetero"):
            raise ValueError(
                f"--parts '{args.parts}' is a heterogeneous partition (node types "
                f"{list(st['node_types'])}); the planner models homogeneous GraphSAGE / GAT "
                f"training. Give the homogeneous view's sizes instead (--nodes "
                f"{st['num_nodes']} --edges {st['num_edges']} --features and --classes of "
                f"your model); pyg_sar.plan.partition_stats lists the per-type figures")
        args.nodes, args.edges = st["num_nodes"], st["num_edges"]
        args.features, args.classes = st["num_features"], st["num_classes"]
        worlds = [st["world_size"]]
        if args.halo_fraction is None:
            common["halo_fraction"] = st["halo_fraction"]
    missing = [f"--{k}" for k in ("nodes", "edges", "features", "classes")
               if getattr(args, k) is None]
    if missing:
        p.error(f"missing {', '.join(missing)} (or use --parts or --preset)")
    print(_header("MB", bw is not None, False))
    for mode in args.mode:
        for world in worlds:
            w = Workload(args.nodes, args.edges, args.features, args.classes, args.hidden,
                         args.layers, args.heads, args.model, mode, world, **common)
            pl = predict(w, bw, args.latency_ms / 1e3, None, args.compute_speedup)
            print(_row(pl, MB))
    print("per rank; MB/epoch: the engine's rows, re-fetches and gradients plus the gradient "
          "all-reduce; step: working memory of a training step (in peak)")
    if args.parts is not None:
        for mode in args.mode:
            w = Workload(args.nodes, args.edges, args.features, args.classes, args.hidden,
                         args.layers, args.heads, args.model, mode, worlds[0], **common)
            pp = predict_partition(args.parts, w, bw, args.latency_ms / 1e3, None,
                                   args.compute_speedup)
            print()
            print("\n".join(_rank_table(pp, MB)))
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except ValueError as exc:
        print(f"python -m pyg_sar.plan: error: {exc}", file=sys.stderr)
        sys.exit(2)
