"""The heterogeneous partition format (``format_version`` 2): file names and ``meta.json``'s
``"hetero"`` section.

Node type ``i`` and edge type ``j`` are named by their position in ``meta["hetero"]``'s lists
(type names may hold any character, file names do not)::

    meta.json
    node_map_{i}.npy                     int64 [N_i]: new id (within type i) of every original id
    part{r}/ntype{i}/node_ids.npy        int64 [n_ri]: original ids of the local type-i nodes
    part{r}/ntype{i}/node/{key}.npy      node tensors of type i (x, y, masks, ...), local order
    part{r}/etype{j}/in_degree.npy       int64 [n_r dst]: in-degree within edge type j
    part{r}/etype{j}/rowptr.npy          int64 [P, n_r dst + 1]: CSR row pointer of block (r, s)
    part{r}/etype{j}/col.npy             int64 [E_rj]: columns, blocks concatenated
    part{r}/etype{j}/edge_ids.npy        int64 [E_rj]: input position within edge type j
    part{r}/etype{j}/recv_node_ids.npy   int64 [sum recv]: original ids (source type) received
    part{r}/etype{j}/recv_in_degree.npy  int64 [sum recv]: their in-degree within edge type j
    part{r}/etype{j}/recv_total_in_degree.npy  int64 [sum recv]: their in-degree over all types
    part{r}/etype{j}/send_idx.npy        int64 [sum send]: local ids (source type) sent, by rank
    part{r}/etype{j}/edge/{key}.npy      edge tensors of type j (edge_attr, ...), stored order

``meta["hetero"]``::

    {"node_types": [{"name", "num_nodes", "node_offsets": [P + 1], "node_keys": {...},
                     "num_features", "num_classes"}, ...],
     "edge_types": [{"src", "rel", "dst", "num_edges", "part_num_edges": [P], "edge_cut",
                     "edge_keys": {...},
                     "parts": [{"block_num_edges", "recv_counts", "send_counts"}] * P}, ...]}

A homogeneous partition is still written with ``format_version`` 1 and read as before; an older
pyg_sar refuses a heterogeneous folder as "newer than the supported version".
"""
from __future__ import annotations

from itertools import pairwise
from typing import Any

from pyg_sar.partition.meta_fields import fail as _fail
from pyg_sar.partition.meta_fields import int_field as _int
from pyg_sar.partition.meta_fields import int_list as _int_list
from pyg_sar.partition.meta_fields import tensor_keys as _keys

HETERO_FORMAT_VERSION = 2
ETYPE_STRUCTURE_FILES = ("in_degree", "rowptr", "col", "edge_ids", "recv_node_ids",
                         "recv_in_degree", "recv_total_in_degree", "send_idx")


def node_map_file(i: int) -> str:
    return f"node_map_{i}.npy"


def ntype_file(rank: int, i: int, name: str) -> str:
    return f"part{rank}/ntype{i}/{name}.npy"


def ntype_data_file(rank: int, i: int, key: str) -> str:
    return f"part{rank}/ntype{i}/node/{key}.npy"


def etype_file(rank: int, j: int, name: str) -> str:
    return f"part{rank}/etype{j}/{name}.npy"


def etype_data_file(rank: int, j: int, key: str) -> str:
    return f"part{rank}/etype{j}/edge/{key}.npy"


def _name(value: Any, what: str, path: Any) -> str:
    if not isinstance(value, str) or not value:
        raise _fail(path, f"'{what}' must be a non-empty string (got {value!r:.200})")
    return value


def validate_hetero_meta(meta: dict, path: Any) -> dict:
    """Check ``meta``'s ``"hetero"`` section (``format_version`` and ``files`` are checked by
    :func:`pyg_sar.partition.format.validate_meta`, which calls this).

    Raises:
        MetaError: naming the field at fault.
    """
    if meta["format_version"] < HETERO_FORMAT_VERSION:
        raise _fail(path, f"a 'hetero' section needs format_version >= "
                          f"{HETERO_FORMAT_VERSION} (got {meta['format_version']})")
    num_parts = _int(meta, "num_parts", path, minimum=1)
    hetero = meta["hetero"]
    if not isinstance(hetero, dict) or not isinstance(hetero.get("node_types"), list) or \
            not isinstance(hetero.get("edge_types"), list):
        raise _fail(path, "'hetero' must be an object with lists 'node_types' and 'edge_types'")
    offsets_of: dict[str, list[int]] = {}
    for i, info in enumerate(hetero["node_types"]):
        where = f"hetero.node_types[{i}]"
        if not isinstance(info, dict):
            raise _fail(path, f"'{where}' must be an object")
        name = _name(info.get("name"), f"{where}.name", path)
        if name in offsets_of:
            raise _fail(path, f"node type {name!r} is listed twice")
        n = _int(info, "num_nodes", path)
        offsets = _int_list(info.get("node_offsets"), num_parts + 1,
                            f"{where}.node_offsets", path)
        if offsets[0] != 0 or offsets[-1] != n or any(a > b for a, b in pairwise(offsets)):
            raise _fail(path, f"'{where}.node_offsets' must rise from 0 to num_nodes={n} "
                              f"(got {offsets!r:.200})")
        _keys(info, "node_keys", n, path)
        offsets_of[name] = offsets
    seen = set()
    for j, info in enumerate(hetero["edge_types"]):
        where = f"hetero.edge_types[{j}]"
        if not isinstance(info, dict):
            raise _fail(path, f"'{where}' must be an object")
        triple = tuple(_name(info.get(k), f"{where}.{k}", path) for k in ("src", "rel", "dst"))
        if triple in seen:
            raise _fail(path, f"edge type {triple} is listed twice")
        seen.add(triple)
        for t in (triple[0], triple[2]):
            if t not in offsets_of:
                raise _fail(path, f"edge type {triple} names node type {t!r}, which is not "
                                  f"among the node types {list(offsets_of)}")
        num_edges = _int(info, "num_edges", path)
        part_edges = _int_list(info.get("part_num_edges"), num_parts,
                               f"{where}.part_num_edges", path)
        if sum(part_edges) != num_edges:
            raise _fail(path, f"'{where}.part_num_edges' sums to {sum(part_edges)}, not "
                              f"num_edges={num_edges}")
        _int(info, "edge_cut", path)
        _keys(info, "edge_keys", num_edges, path)
        parts = info.get("parts")
        if not isinstance(parts, list) or len(parts) != num_parts or \
                not all(isinstance(p, dict) for p in parts):
            raise _fail(path, f"'{where}.parts' must be a list of {num_parts} objects")
        for r, part in enumerate(parts):
            blocks = _int_list(part.get("block_num_edges"), num_parts,
                               f"{where}.parts[{r}].block_num_edges", path)
            if sum(blocks) != part_edges[r]:
                raise _fail(path, f"'{where}.parts[{r}].block_num_edges' sums to "
                                  f"{sum(blocks)}, not part_num_edges[{r}]={part_edges[r]}")
            for name in ("recv_counts", "send_counts"):
                counts = _int_list(part.get(name), num_parts, f"{where}.parts[{r}].{name}",
                                   path)
                if counts[r] != 0:
                    raise _fail(path, f"'{where}.parts[{r}].{name}[{r}]' must be 0")
        for r in range(num_parts):
            for q in range(num_parts):
                if parts[r]["send_counts"][q] != parts[q]["recv_counts"][r]:
                    raise _fail(path, f"edge type {triple}: rank {r} sends "
                                      f"{parts[r]['send_counts'][q]} rows to rank {q}, which "
                                      f"expects {parts[q]['recv_counts'][r]}")
    if not isinstance(meta.get("method"), str):
        raise _fail(path, f"'method' must be a string (got {meta.get('method')!r})")
    return meta
