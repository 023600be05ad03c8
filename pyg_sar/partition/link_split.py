r"""Partitions of a link-prediction split: message-passing edges apart from supervision pairs.

Input: the triple ``(train_data, val_data, test_data)`` that PyG's ``RandomLinkSplit``
returns for a homogeneous ``Data``, in any of its forms (``split_labels``,
``add_negative_train_samples``, ``neg_sampling_ratio``, ``disjoint_train_ratio``,
``is_undirected``). Each holds the same nodes, its own message-passing ``edge_index``
(train's within val's within test's: ``RandomLinkSplit`` gives val the train edges and test
the train and validation edges; with ``disjoint_train_ratio`` train's graph also lacks its
supervision edges) and its supervision pairs, as one or more *pair sets*:

* ``edge_label_index`` with ``edge_label`` (``split_labels=False``: positives and negatives
  together, negatives labelled 0);
* ``pos_edge_label_index`` with ``pos_edge_label`` and ``neg_edge_label_index`` with
  ``neg_edge_label`` (``split_labels=True``; a split without negatives, e.g. train with
  ``add_negative_train_samples=False``, has no ``neg_`` set).

A triple of ``HeteroData`` (``RandomLinkSplit(edge_types=..., rev_edge_types=...)``) is
partitioned by :mod:`pyg_sar.partition.link_split` with the helpers of this module: the
same layout, one heterogeneous partition as ``graph/`` and pair sets per supervised edge type
(``link.json`` version 3).

On disk (one folder)::

    graph/        a homogeneous partition (pyg_sar.partition format) of test's message-passing
                  edges, with the edge tensor "link_mp_level": 0 = in train's graph,
                  1 = added by val's, 2 = added by test's
    link/         per split, pair set and rank: {set}_index (NEW global ids), {set},
                  {set}_ids (position of each pair in the input split's {set}_index), where
                  {set} is edge_label, pos_edge_label or neg_edge_label
    link.json     written last: the splits, pair counts, SHA-256 of every link file

Nodes are assigned once, on test's graph (every message-passing edge of any split), so the
three splits share one numbering and one set of node tensors. A supervision pair belongs to
the rank owning its source node. :func:`load_link_split` rebuilds each split's graph with
:meth:`~pyg_sar.graph.DistGraph.masked` (no communication): train and val share one graph
object when their edges are the same, as in ``RandomLinkSplit`` without
``disjoint_train_ratio``.

Leakage is refused: a validation or test positive that is an edge of that split's
message-passing graph (in either direction when the graph is undirected) raises a
``ValueError`` naming the pair.

**Heterogeneous graphs** (``HeteroData``).
Partitions of a heterogeneous link-prediction split: PyG's ``RandomLinkSplit(edge_types=...,
rev_edge_types=...)`` of a ``HeteroData``, as PyG's ``examples/hetero/hetero_link_pred.py``
makes it.

The layout and the checks are those of the homogeneous split (:mod:`pyg_sar.partition.
link_split`, whose helpers this module uses), per edge type:

* ``graph/`` is ONE heterogeneous partition (all node types together, every edge type a block
  layout of its own; :mod:`pyg_sar.partition.writer`) of test's message-passing
  edges, every edge type with the edge tensor ``link_mp_level`` (0 = in train's graph, 1 =
  added by val's, 2 = added by test's). The reverse edge types (``rev_edge_types``) differ by
  split too, and are levelled in the same way; edge types the split leaves alone are level 0.
* ``link/{split}/etype{j}/part{r}/`` holds, for every supervised edge type ``j`` (its
  position in ``graph/meta.json``) and pair set (``edge_label``, ``pos_edge_label``,
  ``neg_edge_label``), the pairs whose SOURCE node rank ``r`` owns, in the partition's new
  ids of the edge type's source type (row 0) and destination type (row 1), their labels and
  their positions in the input split's ``{set}_index`` (``{set}_ids``).
* ``link.json`` (``version`` 3, written last) describes the splits per edge type, with the
  SHA-256 of every pair file.

Leakage is refused as for a homogeneous split: a validation or test positive ``(s, d)`` of an
edge type that is an edge of that split's message-passing edges of the type, or whose reverse
``(d, s)`` is an edge of a reverse edge type (one whose test edges are exactly the type's test
edges reversed, as ``rev_edge_types`` makes them) or, for an edge type within one node type
whose edges are stored in both directions, of the type itself.

:func:`load_hetero_link_split` returns ``(train, val, test)`` as three
:class:`~pyg_sar.partition.HeteroPartition` sharing node tensors; train's and val's graphs are
test's restricted with :meth:`~pyg_sar.partition.HeteroPartition.masked_edges` (no
communication), sharing test's (or val's) graph object where an edge type's edges are the
same. The pairs are ``part[edge_type].edge_label_index`` (``part.pair_data_dict``).
"""
from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any, Optional

import numpy as np
import torch
from torch import Tensor

from pyg_sar.partition import storage
from pyg_sar.partition.link_pairs import (  # noqa: F401 (this module's names before issue 37)
    _PAIR_ATTRS,
    _SUPPORTED,
    GRAPH_DIR,
    HETERO_LINK_VERSION,
    LEVEL_KEY,
    LINK_FORMAT,
    LINK_META,
    LINK_VERSION,
    PAIR_SETS,
    READS_VERSIONS,
    SPLITS,
    Nodes,
    PairSets,
    _check_same_nodes,
    _codes,
    _dims,
    _edges,
    _is_undirected,
    _max_multiplicity,
    _nodes_text,
    _occurrence_keys,
    _pair_keys,
    _pairs,
    _positive,
    _same_tensor,
    check_link_split,
    check_no_leakage,
    checked_pair_sets,
    hetero_link_file,
    is_link_folder,
    is_link_split,
    link_file,
    mp_levels,
    pair_sets_of,
    random_link_split,
    read_pairs,
    split_masks,
    write_pair_sets,
)
from pyg_sar.partition.loader import PartitionData, load_node_map, load_partition, read_meta


def write_link_split(triple: tuple, num_parts: int, out_dir: str | Path,
                     method: str = "metis", seed: int = 0, overwrite: bool = False,
                     on_nonfinite: str = "warn") -> Path:
    """Write the partitioned link split ``triple`` to ``out_dir`` (see the module docstring);
    called by :func:`~pyg_sar.partition.partition_graph` for such a triple (a triple of
    ``HeteroData`` goes to
    :func:`~pyg_sar.partition.link_split.write_hetero_link_split`)."""
    from torch_geometric.data import HeteroData

    from pyg_sar.partition.writer import write_partition
    if all(isinstance(d, HeteroData) for d in triple):
        return write_hetero_link_split(triple, num_parts, out_dir, method, seed, overwrite,
                                       on_nonfinite)
    out_dir = Path(out_dir)
    check_link_split(triple)
    num_nodes = _check_same_nodes(triple)
    mp = [_edges(d.edge_index, num_nodes, f"the {s} split's edge_index")
          for s, d in zip(SPLITS, triple)]
    level = mp_levels(*mp, num_nodes)
    undirected = _is_undirected(mp[2], num_nodes)
    pairs = checked_pair_sets(triple, num_nodes, mp, undirected)

    graph = copy.copy(triple[2])
    for key in _PAIR_ATTRS:
        if key in graph:
            del graph[key]
    graph[LEVEL_KEY] = torch.from_numpy(level)

    storage.check_out_dir(out_dir, overwrite)
    with storage.staged_dir(out_dir, overwrite) as tmp:
        write_partition(graph, num_parts, tmp / GRAPH_DIR, method, seed, False, on_nonfinite)
        meta, _ = read_meta(tmp / GRAPH_DIR)
        offsets = np.asarray(meta["node_offsets"], dtype=np.int64)
        new_id = load_node_map(tmp / GRAPH_DIR).numpy()
        link_meta = {"format": LINK_FORMAT, "version": LINK_VERSION,
                     "num_parts": int(meta["num_parts"]), "num_nodes": num_nodes,
                     "undirected": undirected,
                     "same_graph": {"train_val": bool((level != 1).all()),
                                    "val_test": bool((level != 2).all())},
                     "files": {}, "splits": {}}
        sets = write_pair_sets(tmp, link_meta["files"], pairs, new_id, new_id, offsets,
                               link_file)
        for split in SPLITS:
            link_meta["splits"][split] = {"pair_sets": sets.get(split, {})}
        storage.write_file_atomic(tmp / LINK_META,
                                  json.dumps(link_meta, indent=1).encode())
    return out_dir


# --- loading ------------------------------------------------------------------------------

def read_link_meta(root: Path) -> dict:
    """The parsed, checked ``link.json`` of the folder ``root``."""
    path = root / LINK_META
    try:
        meta = json.loads(path.read_text())
    except FileNotFoundError:
        raise FileNotFoundError(f"no link split at '{root}' ({LINK_META} missing)") from None
    except ValueError as err:
        raise ValueError(f"'{path}' is not valid JSON: {err}") from None
    if not isinstance(meta, dict) or meta.get("format") != LINK_FORMAT:
        raise ValueError(f"'{path}' is not a pyg_sar link split (format "
                         f"{meta.get('format') if isinstance(meta, dict) else None!r})")
    if meta.get("version") not in READS_VERSIONS:
        raise ValueError(f"'{path}' has link split version {meta.get('version')!r}; this "
                         f"pyg_sar reads versions {list(READS_VERSIONS)}")
    if set(meta.get("splits", {})) != set(SPLITS):
        raise ValueError(f"'{path}' must describe the splits {SPLITS} "
                         f"(got {sorted(meta.get('splits', {}))})")
    if meta["version"] == 1:  # one pair set, described on the split itself
        meta["splits"] = {s: {"pair_sets": {"edge_label": info}}
                          for s, info in meta["splits"].items()}
    hetero = meta["version"] == HETERO_LINK_VERSION
    for split, info in meta["splits"].items():
        groups = info.get("edge_types") if hetero and isinstance(info, dict) else [info]
        if not isinstance(groups, list):
            raise ValueError(f"'{path}' describes the edge types of the {split} split as "
                             f"{groups!r}; expected a list")
        for group in groups:
            sets = group.get("pair_sets") if isinstance(group, dict) else None
            if not isinstance(sets, dict) or not set(sets) <= set(PAIR_SETS):
                raise ValueError(f"'{path}' describes the pair sets of the {split} split as "
                                 f"{sets!r}; expected a dict keyed by some of {PAIR_SETS}")
    return meta


def _split_part(base: PartitionData, mask: Optional[Tensor], graph: Any) -> PartitionData:
    """``base`` (sharing its tensors) with ``graph`` as its edges and its edge tensors
    restricted to the stored edges ``mask`` keeps."""
    part = copy.copy(base)
    part.edge_index = graph
    if mask is not None:
        for key in ("edge_attr", "edge_weight", "edge_ids", *base.edge_data):
            if key in base and isinstance(base[key], Tensor):
                part[key] = base[key][mask]
    return part


def load_link_split(path: str | Path, rank: int, world_size: Optional[int] = None,
                    context: Any = None) -> tuple[PartitionData, PartitionData, PartitionData]:
    """Load rank ``rank``'s part of a partitioned link split, as PyG's ``RandomLinkSplit``
    triple: ``(train, val, test)``.

    Each is a :class:`~pyg_sar.partition.PartitionData` whose ``edge_index`` is that split's
    message-passing graph (train and val share one object when their edges are the same;
    test's holds the validation positives too, as ``RandomLinkSplit`` gives it), with

    * ``edge_label_index``: ``int64 [2, n_r]``, the supervision pairs this rank is responsible
      for (those whose source it owns), in NEW global ids (rank ``r`` owns
      ``[node_offsets[r], node_offsets[r + 1])``; ``part.node_ids`` maps local rows to original
      ids, :func:`pyg_sar.gather` fetches rows of any rank);
    * ``edge_label``: their labels; ``edge_label_ids``: ``int64 [n_r]``, each pair's position
      in the input split's ``edge_label_index`` (keys for
      :func:`pyg_sar.link.negative_sampling`).

    A split made with ``RandomLinkSplit(split_labels=True)`` has, instead of these three,
    ``pos_edge_label_index`` / ``pos_edge_label`` / ``pos_edge_label_ids`` and (when the split
    has negatives) ``neg_edge_label_index`` / ``neg_edge_label`` / ``neg_edge_label_ids``, in
    the same way: new global ids, the pairs whose source this rank owns, positions in the input
    split's ``pos_edge_label_index`` / ``neg_edge_label_index``.

    Node tensors (``x``, ``y``, ...) are shared by the three. Arguments and errors as for
    :func:`~pyg_sar.partition.load_partition`.

    A heterogeneous split (``RandomLinkSplit(edge_types=...)`` of a ``HeteroData``) loads as
    three :class:`~pyg_sar.partition.HeteroPartition` (see
    :func:`~pyg_sar.partition.link_split.load_hetero_link_split`): the pairs of each
    supervised edge type are ``part[edge_type].edge_label_index`` etc., their ends in the new
    ids of the edge type's source and destination node types.
    """
    root = Path(path)
    meta = read_link_meta(root)
    if meta["version"] == HETERO_LINK_VERSION:
        return load_hetero_link_split(root, meta, rank, world_size, context)
    base = load_partition(root / GRAPH_DIR, rank, world_size=world_size, context=context)
    if base.num_parts != meta["num_parts"]:
        raise ValueError(f"'{root / LINK_META}' describes {meta['num_parts']} parts, its graph "
                         f"{base.num_parts}")
    rank = base.rank
    level = base.edge_data.get(LEVEL_KEY)
    if level is None:
        raise ValueError(f"the graph of the link split at '{root}' has no edge tensor "
                         f"{LEVEL_KEY!r}")
    base.edge_data = {k: v for k, v in base.edge_data.items() if k != LEVEL_KEY}
    keep = split_masks(level, meta["same_graph"])
    test_graph = base.edge_index
    val_graph = test_graph if keep["val"] is None else test_graph.masked(keep["val"])
    train_graph = val_graph if keep["train"] is None else test_graph.masked(keep["train"])
    graphs = {"train": train_graph, "val": val_graph, "test": test_graph}
    masks = {"train": keep["val"] if keep["train"] is None else keep["train"],
             "val": keep["val"], "test": None}
    out = []
    for split in SPLITS:
        part = _split_part(base, masks[split], graphs[split])
        for label_key in PAIR_SETS:
            if label_key in meta["splits"][split]["pair_sets"]:
                info = meta["splits"][split]["pair_sets"][label_key]
                for name, value in read_pairs(
                        root, meta["files"], info, label_key, rank,
                        lambda name, split=split: link_file(split, rank, name),
                        meta["num_nodes"]).items():
                    part[name] = value
        out.append(part)
    return tuple(out)


# ------------------------------------------------------------ heterogeneous graphs (HeteroData)
EdgeType = tuple[str, str, str]


def _check_same_hetero(triple: tuple) -> tuple[dict[str, int], list[EdgeType]]:
    """``(num_nodes per node type, edge types)`` shared by the three splits; a ``ValueError``
    names a node type, node tensor or edge type on which they differ."""
    train = triple[0]
    num_nodes = {t: int(train[t].num_nodes) for t in train.node_types}
    edge_types = [tuple(et) for et in train.edge_types]
    for name, d in zip(SPLITS[1:], triple[1:]):
        if sorted(d.node_types) != sorted(num_nodes) or \
                sorted(tuple(et) for et in d.edge_types) != sorted(edge_types):
            raise ValueError(f"partition_graph: the {name} split has node types "
                             f"{list(d.node_types)} and edge types {list(d.edge_types)}, the "
                             f"train split {list(num_nodes)} and {edge_types}; a link split's "
                             f"three parts share their types")
        for t, n in num_nodes.items():
            if int(d[t].num_nodes) != n:
                raise ValueError(f"partition_graph: node type {t!r} has {d[t].num_nodes} "
                                 f"nodes in the {name} split, {n} in the train split; a link "
                                 f"split's three parts share their nodes")
            for key, value in train[t].items():
                if not isinstance(value, Tensor):
                    continue
                other = d[t][key] if key in d[t] else None
                if not _same_tensor(other, value):
                    raise ValueError(f"partition_graph: node tensor {key!r} of node type "
                                     f"{t!r} differs between the {name} and the train split; "
                                     f"a link split's three parts hold the same node tensors")
    return num_nodes, edge_types


def _reverse_types(et: EdgeType, edge_types: list[EdgeType], test_mp: dict,
                   num_nodes: dict[str, int]) -> list[EdgeType]:
    """The edge types whose test edges are exactly ``et``'s reversed (as multisets): the
    ``rev_edge_types`` of ``RandomLinkSplit``."""
    src, _, dst = et
    if src == dst:
        return []
    mine = np.sort(_codes(test_mp[et][0], test_mp[et][1], num_nodes[dst]))
    out = []
    for rt in edge_types:
        if rt[0] == dst and rt[2] == src and test_mp[rt].shape == test_mp[et].shape:
            theirs = np.sort(_codes(test_mp[rt][1], test_mp[rt][0], num_nodes[dst]))
            if np.array_equal(mine, theirs):
                out.append(rt)
    return out


def write_hetero_link_split(triple: tuple, num_parts: int, out_dir: str | Path,
                            method: str = "metis", seed: int = 0, overwrite: bool = False,
                            on_nonfinite: str = "warn") -> Path:
    """Write the partitioned heterogeneous link split ``triple`` to ``out_dir`` (see the
    module docstring); called by :func:`~pyg_sar.partition.partition_graph` (through
    :func:`~pyg_sar.partition.link_split.write_link_split`) for a triple of ``HeteroData``."""
    from pyg_sar.partition.loader import load_node_map, read_meta
    from pyg_sar.partition.writer import write_hetero_partition
    out_dir = Path(out_dir)
    num_nodes, edge_types = _check_same_hetero(triple)
    sizes = {et: (num_nodes[et[0]], num_nodes[et[2]]) for et in edge_types}
    mp, level, undirected = {}, {}, {}
    for et in edge_types:
        if "edge_index" not in triple[2][et]:
            raise ValueError(f"partition_graph: edge type {et} of the test split has no "
                             f"edge_index")
        mp[et] = [_edges(d[et].edge_index, sizes[et],
                         f"the {s} split's edge_index of edge type {et}")
                  for s, d in zip(SPLITS, triple)]
        level[et] = mp_levels(*mp[et], sizes[et], of=f"{et} ")
        undirected[et] = et[0] == et[2] and _is_undirected(mp[et][2], num_nodes[et[0]])
    supervised = [et for et in edge_types if any(pair_sets_of(d[et]) for d in triple)]
    for split, d in zip(SPLITS, triple):
        if not any(pair_sets_of(d[et]) for et in edge_types):
            raise ValueError(f"partition_graph: the {split} split has no supervision pairs "
                             f"(no edge type has any of "
                             f"{[f'{s}_index' for s in PAIR_SETS]}); supported is "
                             f"{_SUPPORTED}")
    test_mp = {et: mp[et][2] for et in edge_types}
    reverse = {et: _reverse_types(et, edge_types, test_mp, num_nodes) for et in supervised}
    pairs = {}
    for et in supervised:
        rev = None
        if reverse[et]:
            rev = [np.concatenate([mp[rt][i] for rt in reverse[et]], axis=1)
                   for i in range(len(SPLITS))]
        pairs[et] = checked_pair_sets([d[et] for d in triple], sizes[et], mp[et],
                                      undirected[et], rev, of=f"{et} ")

    graph = copy.copy(triple[2])
    for et in edge_types:
        store = graph[et]
        if et in pairs:
            for key in _PAIR_ATTRS:
                if key in store:
                    del store[key]
        store[LEVEL_KEY] = torch.from_numpy(level[et])

    storage.check_out_dir(out_dir, overwrite)
    with storage.staged_dir(out_dir, overwrite) as tmp:
        write_hetero_partition(graph, num_parts, tmp / GRAPH_DIR, method, seed, False,
                               on_nonfinite)
        meta, _ = read_meta(tmp / GRAPH_DIR)
        h = meta["hetero"]
        offsets = {n["name"]: np.asarray(n["node_offsets"], dtype=np.int64)
                   for n in h["node_types"]}
        new_of = {t: load_node_map(tmp / GRAPH_DIR, t).numpy() for t in num_nodes}
        graph_types = [(e["src"], e["rel"], e["dst"]) for e in h["edge_types"]]
        link_meta = {
            "format": LINK_FORMAT, "version": HETERO_LINK_VERSION,
            "num_parts": int(meta["num_parts"]), "num_nodes": num_nodes,
            "edge_types": [{"edge_type": list(et), "undirected": bool(undirected[et]),
                            "reverse_edge_types": [list(rt) for rt in reverse.get(et, [])],
                            "same_graph": {"train_val": bool((level[et] != 1).all()),
                                           "val_test": bool((level[et] != 2).all())}}
                           for et in graph_types],
            "files": {}, "splits": {split: {"edge_types": []} for split in SPLITS}}
        for et in supervised:
            j = graph_types.index(et)
            sets = write_pair_sets(
                tmp, link_meta["files"], pairs[et], new_of[et[0]], new_of[et[2]],
                offsets[et[0]], lambda split, r, name, j=j: hetero_link_file(split, j, r, name))
            for split in SPLITS:
                if sets.get(split):
                    link_meta["splits"][split]["edge_types"].append(
                        {"edge_type": list(et), "index": j, "pair_sets": sets[split]})
        storage.write_file_atomic(tmp / LINK_META, json.dumps(link_meta, indent=1).encode())
    return out_dir


def load_hetero_link_split(root: Path, meta: dict, rank: int,
                           world_size: Optional[int] = None, context: Any = None) -> tuple:
    """Rank ``rank``'s part of the heterogeneous link split at ``root`` (``meta``: its checked
    ``link.json``), as ``(train, val, test)``: three
    :class:`~pyg_sar.partition.HeteroPartition`.

    Each holds its split's message-passing graph per edge type (``edge_index_dict``; test's
    holds the validation positives too, as ``RandomLinkSplit`` gives it) and, per supervised
    edge type ``et``, ``part[et].edge_label_index`` (``int64 [2, n_r]``: the pairs whose
    source this rank owns, row 0 in the new ids of the source type, row 1 of the destination
    type), ``part[et].edge_label`` and ``part[et].edge_label_ids`` (positions in the input
    split's ``edge_label_index``: keys for :func:`pyg_sar.link.negative_sampling`), or the
    ``pos_`` / ``neg_`` sets of ``split_labels=True``; all of them in
    ``part.pair_data_dict[et]``. Node type ``t``'s rows of any rank:
    ``pyg_sar.gather(z_dict[t], index, ids="new", node_offsets=part.node_offsets_dict[t])``.
    Called by :func:`~pyg_sar.partition.link_split.load_link_split`.
    """
    from pyg_sar.partition.hetero import HeteroPartition
    from pyg_sar.partition.loader import load_partition
    base = load_partition(root / GRAPH_DIR, rank, world_size=world_size, context=context)
    if not isinstance(base, HeteroPartition):
        raise ValueError(f"the graph of the heterogeneous link split at '{root}' is not a "
                         f"heterogeneous partition")
    if base.num_parts != meta["num_parts"]:
        raise ValueError(f"'{root / LINK_META}' describes {meta['num_parts']} parts, its graph "
                         f"{base.num_parts}")
    rank = base.rank
    info = {tuple(e["edge_type"]): e for e in meta.get("edge_types", [])}
    keep: dict[EdgeType, dict] = {}
    for et in base.edge_types:
        level = base.edge_data_dict[et].get(LEVEL_KEY)
        if level is None or et not in info:
            raise ValueError(f"the graph of the link split at '{root}' has no edge tensor "
                             f"{LEVEL_KEY!r} for edge type {et} (or link.json does not "
                             f"describe it)")
        base.edge_data_dict[et] = {k: v for k, v in base.edge_data_dict[et].items()
                                   if k != LEVEL_KEY}
        keep[et] = split_masks(level, info[et]["same_graph"])
    test = base.masked_edges({})
    val = base.masked_edges({et: m["val"] for et, m in keep.items()})
    # train's masks over val's stored edges (train's edges lie within val's)
    train = val.masked_edges({et: None if m["train"] is None else
                              (m["train"] if m["val"] is None else m["train"][m["val"]])
                              for et, m in keep.items()})
    parts = {"train": train, "val": val, "test": test}
    for split in SPLITS:
        part = parts[split]
        for group in meta["splits"][split]["edge_types"]:
            et, j = tuple(group["edge_type"]), int(group["index"])
            if et not in base.edge_types:
                raise ValueError(f"'{root / LINK_META}' names the edge type {et}, which its "
                                 f"graph lacks (edge types: {base.edge_types})")
            size = (meta["num_nodes"][et[0]], meta["num_nodes"][et[2]])
            for label_key, set_info in group["pair_sets"].items():
                part.pair_data_dict.setdefault(et, {}).update(read_pairs(
                    root, meta["files"], set_info, label_key, rank,
                    lambda name, split=split, j=j: hetero_link_file(split, j, rank, name),
                    size))
    return train, val, test
