r"""Partitions of a heterogeneous link-prediction split: PyG's ``RandomLinkSplit(edge_types=...,
rev_edge_types=...)`` of a ``HeteroData``, as PyG's ``examples/hetero/hetero_link_pred.py``
makes it.

The layout and the checks are those of the homogeneous split (:mod:`pyg_sar.partition.
link_split`, whose helpers this module uses), per edge type:

* ``graph/`` is ONE heterogeneous partition (all node types together, every edge type a block
  layout of its own; :mod:`pyg_sar.partition.hetero_writer`) of test's message-passing
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
from pyg_sar.partition.link_pairs import (
    _PAIR_ATTRS,
    _SUPPORTED,
    GRAPH_DIR,
    HETERO_LINK_VERSION,
    LEVEL_KEY,
    LINK_FORMAT,
    LINK_META,
    PAIR_SETS,
    SPLITS,
    _codes,
    _edges,
    _is_undirected,
    _same_tensor,
    checked_pair_sets,
    hetero_link_file,
    mp_levels,
    pair_sets_of,
    read_pairs,
    split_masks,
    write_pair_sets,
)

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
    from pyg_sar.partition.hetero_writer import write_hetero_partition
    from pyg_sar.partition.loader import load_node_map, read_meta
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
