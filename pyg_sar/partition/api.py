"""The entry of offline partitioning, :func:`partition_graph`: it hands a link-prediction split
to :mod:`pyg_sar.partition.link_split` and a graph (``Data`` or ``HeteroData``) to
:func:`~pyg_sar.partition.writer.write_partition`. It sits above both (the link split's writer
writes its graph with :func:`~pyg_sar.partition.writer.write_partition`)."""
from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pyg_sar.partition.assign import Balance, resolve_balance
from pyg_sar.partition.link_split import is_link_split, write_link_split
from pyg_sar.partition.write_common import checked_arguments
from pyg_sar.partition.writer import write_partition


def partition_graph(data: Any, num_parts: int, out_dir: str | Path, method: str = "metis",
                    seed: int = 0, overwrite: bool = False, on_nonfinite: str = "warn", *,
                    balance: Balance | None = None,
                    ubvec: Sequence[float] | None = None) -> Path:
    r"""Partition ``data`` into ``num_parts`` parts and write them to ``out_dir``.

    Nodes are assigned to parts by ``method`` (``"metis"`` on the symmetrised loop-free graph,
    ``"random"`` balanced, or ``"contiguous"`` id ranges), renumbered so that rank ``r`` owns a
    contiguous id range, and every edge is stored on the rank owning its destination, in the
    block layout of :class:`pyg_sar.graph.DistGraph`. ``balance`` decides what the parts hold
    equal shares of: ``"nodes"``, or ``"edges"``: nodes *and* in-edges (the edges a rank
    stores and aggregates over; on power-law graphs node balance can leave most edges on one
    rank, which then sets the step time, at the price of a larger edge cut: see
    docs/partitioning.md). Node tensors (``x``, ``y``, masks, any
    tensor with ``num_nodes`` rows) and edge tensors (``edge_attr``, ``edge_weight``, any tensor
    with ``num_edges`` rows) are stored with them. The folder is written under a temporary name
    and renamed into place, so an interrupted write never leaves a loadable partition.

    A graph given as a sparse ``adj_t`` (``T.ToSparseTensor()``: a torch_sparse
    ``SparseTensor`` or a torch sparse COO/CSR/CSC tensor, ``adj_t[i, j]`` being the edge
    ``j -> i``) is stored as its edges; its values (one per edge, e.g. from ``T.GCNNorm()``)
    become the edge tensor ``edge_weight``, and the loaded part has an ``adj_t``: the graph
    carrying them (:meth:`pyg_sar.graph.DistGraph.with_values`). Values that are all 1 mean
    the graph without values.

    Preprocessing (feature transforms such as ``T.NormalizeFeatures()``, ``T.GCNNorm()``,
    splits) must happen before partitioning, exactly as the single-process script does it:
    the parts hold the tensors as given.

    A ``HeteroData`` is partitioned with all its node types together (METIS on the
    homogeneous view, rebalanced so that every part holds ``floor`` or ``ceil`` of
    ``N_t / P`` nodes of every type ``t``; ``"random"`` and ``"contiguous"`` per type) and
    written in the heterogeneous format; :func:`load_partition` then returns a
    :class:`~pyg_sar.partition.hetero.HeteroPartition` (docs/how_sar_works.md,
    "Heterogeneous graphs"). That per-type rebalance balances nodes only:
    ``balance="edges"`` is refused for a ``HeteroData``.

    A link-prediction split, the triple ``(train_data, val_data, test_data)`` of PyG's
    ``RandomLinkSplit``, is partitioned once (nodes assigned on test's message-passing graph)
    with each split's message-passing edges and supervision pairs kept apart;
    :func:`~pyg_sar.partition.link_split.load_link_split` loads it as such a triple
    (:mod:`pyg_sar.partition.link_split`). A validation or test positive that is an edge of
    its split's graph raises a ``ValueError`` (leakage). It uses the default balance. The
    triple of a ``HeteroData`` (``RandomLinkSplit(edge_types=..., rev_edge_types=...)``) is
    written as one heterogeneous partition with pairs per supervised edge type
    (:mod:`pyg_sar.partition.link_split`).

    Args:
        data: a ``torch_geometric.data.Data`` with ``edge_index`` (``[2, E]``, integer) or a
            sparse ``adj_t``; or a ``torch_geometric.data.HeteroData`` (an ``edge_index`` per
            edge type); or a ``RandomLinkSplit`` triple (of ``Data`` or of ``HeteroData``).
        num_parts: number of parts ``P`` (``1 <= P <= num_nodes``).
        out_dir: target folder; may exist if empty.
        method: ``"metis"``, ``"random"`` or ``"contiguous"``.
        seed: seed of METIS / the random assignment.
        overwrite: replace a non-empty ``out_dir``.
        on_nonfinite: what to do with NaN / Inf in floating-point node or edge tensors:
            ``"warn"`` (report them, naming tensor and first row), ``"raise"`` (refuse the
            input with a ``ValueError``) or ``"ignore"``.
        balance: ``"nodes"`` or ``"edges"`` (see
            :func:`~pyg_sar.partition.assign.assign_parts`); ``None``: the default of
            :func:`~pyg_sar.partition.assign.default_balance`, for METIS ``"edges"`` when
            ``num_parts >= 4`` and ``"nodes"`` below, ``"nodes"`` for random and contiguous
            (a ``HeteroData`` always ``"nodes"``). ``meta.json``'s ``"balance"`` block
            records what was used and the max / mean of nodes, in-edges, halo rows and sent
            rows per part.
        ubvec: METIS only: the allowed max/mean of nodes and of in-edges per part, two
            numbers ``> 1`` (default: METIS's own tolerance); a warning names the achieved
            max/mean when it lies more than 0.02 above it.

    Returns:
        ``out_dir`` as a :class:`~pathlib.Path`.

    Raises:
        ValueError: bad ``num_parts``, ``method``, ``balance``, ``ubvec``, ``edge_index`` or
            node/edge tensor sizes, or a non-empty ``out_dir`` without ``overwrite``, or
            non-finite values with ``on_nonfinite="raise"``.
    """
    if is_link_split(data):
        checked_arguments(num_parts, method, seed, on_nonfinite, balance, ubvec)
        default = resolve_balance(method, None, num_parts)
        if resolve_balance(method, balance, num_parts) != default or ubvec is not None:
            raise ValueError(f"a link-prediction split is partitioned with the default "
                             f"balance ({default!r} for method {method!r} and "
                             f"num_parts={num_parts}); balance={balance!r}, ubvec={ubvec!r} "
                             f"are not supported for it")
        return write_link_split(tuple(data), num_parts, out_dir, method, seed, overwrite,
                                on_nonfinite)
    return write_partition(data, num_parts, out_dir, method, seed, overwrite,
                           on_nonfinite, balance=balance, ubvec=ubvec).path
