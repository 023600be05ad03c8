"""The on-disk partition format: file names and ``meta.json`` validation.

Layout of a partition folder (all tensors ``.npy``, listed with their SHA-256 in ``meta.json``)::

    meta.json
    node_map.npy                 int64 [N]: new id of every original node
    part{r}/node_ids.npy         int64 [n_r]: original ids of the local nodes, local order
    part{r}/in_degree.npy        int64 [n_r]: global in-degree of the local nodes
    part{r}/rowptr.npy           int64 [P, n_r + 1]: CSR row pointer of block (r, s) in row s
    part{r}/col.npy              int64 [E_r]: column of every stored edge, blocks concatenated
    part{r}/edge_ids.npy         int64 [E_r]: input position of every stored edge
    part{r}/recv_node_ids.npy    int64 [sum recv]: original ids of received rows, by source rank
    part{r}/recv_in_degree.npy   int64 [sum recv]: their global in-degree
    part{r}/send_idx.npy         int64 [sum send]: local ids sent to every rank, by target rank
    part{r}/node/{key}.npy       node tensors (x, y, masks, ...), rows in local order
    part{r}/edge/{key}.npy       edge tensors (edge_attr, edge_weight, ...), stored edge order

``meta.json`` may hold ``"adj_t": {"values": KEY or null}``: the input graph was a sparse
``adj_t`` (its values, if any, are the 1-D edge tensor ``KEY``); the loader then gives the part
an ``adj_t``, the graph carrying those values.

``meta.json`` may hold ``"balance"`` (written by every homogeneous writer since it exists;
optional for older folders): ``{"by": "nodes" | "edges", "partitioner": str, "ubvec": [u_nodes,
u_edges] or null, "lower_bound_in_edges": float, "nodes": S, "in_edges": S, "halo_rows": S,
"send_rows": S}`` with ``S = {"max": int, "mean": float, "max_over_mean": float}`` over the
parts (nodes owned, edges stored, rows received, rows sent); when present it must agree with
the per-part lists.

**Heterogeneous graphs** (``HeteroData``).
The heterogeneous partition format (``format_version`` 2): file names and ``meta.json``'s
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

import math
import re
from itertools import pairwise
from typing import Any

from pyg_sar.partition.meta_fields import KEY_PATTERN, MetaError  # noqa: F401 (format.KEY_PATTERN)
from pyg_sar.partition.meta_fields import fail as _fail
from pyg_sar.partition.meta_fields import int_field as _int
from pyg_sar.partition.meta_fields import int_list as _int_list
from pyg_sar.partition.meta_fields import tensor_keys as _keys

FORMAT_VERSION = 2  # the newest version read; 2 = heterogeneous (validate_hetero_meta)
HOMOGENEOUS_FORMAT_VERSION = 1  # what a homogeneous partition is written as
META_FILE = "meta.json"
NODE_MAP_FILE = "node_map.npy"
STRUCTURE_FILES = ("node_ids", "in_degree", "rowptr", "col", "edge_ids", "recv_node_ids",
                   "recv_in_degree", "send_idx")
_SHA256 = re.compile(r"[0-9a-f]{64}")
BALANCE_BY = ("nodes", "edges")
_BALANCE_STATS = ("nodes", "in_edges", "halo_rows", "send_rows")


def part_dir(rank: int) -> str:
    return f"part{rank}"


def structure_file(rank: int, name: str) -> str:
    return f"{part_dir(rank)}/{name}.npy"


def node_file(rank: int, key: str) -> str:
    return f"{part_dir(rank)}/node/{key}.npy"


def edge_file(rank: int, key: str) -> str:
    return f"{part_dir(rank)}/edge/{key}.npy"


def validate_meta(meta: Any, path: Any) -> dict:
    """Check the structure and internal consistency of a parsed ``meta.json``.

    Raises:
        MetaError: naming the field at fault (a newer ``format_version`` gets its own message).
    """
    if not isinstance(meta, dict):
        raise _fail(path, f"expected a JSON object (got {type(meta).__name__})")
    version = meta.get("format_version")
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise _fail(path, f"'format_version' must be a positive integer (got {version!r})")
    if version > FORMAT_VERSION:
        raise MetaError(f"partition '{path}' has format_version {version}, newer than the "
                        f"supported version {FORMAT_VERSION}: upgrade pyg_sar to load it")
    files = meta.get("files")
    if not isinstance(files, dict) or not all(
            isinstance(k, str) and isinstance(v, str) and _SHA256.fullmatch(v)
            for k, v in files.items()):
        raise _fail(path, "'files' must map file names to SHA-256 hex digests")
    if "hetero" in meta:
        return validate_hetero_meta(meta, path)
    num_parts = _int(meta, "num_parts", path, minimum=1)
    num_nodes = _int(meta, "num_nodes", path)
    num_edges = _int(meta, "num_edges", path)
    offsets = _int_list(meta.get("node_offsets"), num_parts + 1, "node_offsets", path)
    if offsets[0] != 0 or offsets[-1] != num_nodes or any(
            a > b for a, b in pairwise(offsets)):
        raise _fail(path, f"'node_offsets' must rise from 0 to num_nodes={num_nodes} "
                          f"(got {offsets!r:.200})")
    part_nodes = _int_list(meta.get("part_num_nodes"), num_parts, "part_num_nodes", path)
    if part_nodes != [b - a for a, b in pairwise(offsets)]:
        raise _fail(path, "'part_num_nodes' disagrees with 'node_offsets'")
    part_edges = _int_list(meta.get("part_num_edges"), num_parts, "part_num_edges", path)
    if sum(part_edges) != num_edges:
        raise _fail(path, f"'part_num_edges' sums to {sum(part_edges)}, not "
                          f"num_edges={num_edges}")
    parts = meta.get("parts")
    if not isinstance(parts, list) or len(parts) != num_parts:
        raise _fail(path, f"'parts' must be a list of {num_parts} objects")
    _check_parts(parts, part_edges, "parts", path)
    _keys(meta, "node_keys", num_nodes, path)
    _keys(meta, "edge_keys", num_edges, path)
    adj_t = meta.get("adj_t")
    if adj_t is not None:
        values = adj_t.get("values") if isinstance(adj_t, dict) else None
        if not isinstance(adj_t, dict) or values is not None and (
                values not in meta["edge_keys"] or len(meta["edge_keys"][values]["shape"]) != 1):
            raise _fail(path, f"'adj_t' must be an object whose 'values' names a 1-D edge "
                              f"tensor or is null (got {adj_t!r:.200})")
    if not isinstance(meta.get("method"), str):
        raise _fail(path, f"'method' must be a string (got {meta.get('method')!r})")
    if "balance" in meta:
        per_part = {"nodes": part_nodes, "in_edges": part_edges,
                    "halo_rows": [sum(p["recv_counts"]) for p in parts],
                    "send_rows": [sum(p["send_counts"]) for p in parts]}
        _validate_balance(meta["balance"], per_part, path)
    return meta


def _check_parts(parts: list[dict], part_edges: list[int], name: str, path: Any,
                 context: str = "") -> None:
    """The per-rank objects ``parts`` of a homogeneous partition or of one edge type (``name``
    is their place in ``meta.json``, ``context`` prefixes the exchange error): each is an
    object, its ``block_num_edges`` sum to its ``part_num_edges``, it receives and sends nothing to
    itself, and what rank ``r`` sends to ``q`` is what ``q`` expects from ``r``."""
    num_parts = len(part_edges)
    for r, info in enumerate(parts):
        if not isinstance(info, dict):
            raise _fail(path, f"'{name}[{r}]' must be an object")
        blocks = _int_list(info.get("block_num_edges"), num_parts,
                           f"{name}[{r}].block_num_edges", path)
        if sum(blocks) != part_edges[r]:
            raise _fail(path, f"'{name}[{r}].block_num_edges' sums to {sum(blocks)}, not "
                              f"part_num_edges[{r}]={part_edges[r]}")
        for key in ("recv_counts", "send_counts"):
            counts = _int_list(info.get(key), num_parts, f"{name}[{r}].{key}", path)
            if counts[r] != 0:
                raise _fail(path, f"'{name}[{r}].{key}[{r}]' must be 0")
    for r in range(num_parts):
        for q in range(num_parts):
            if parts[r]["send_counts"][q] != parts[q]["recv_counts"][r]:
                raise _fail(path, f"{context}rank {r} sends {parts[r]['send_counts'][q]} rows "
                                  f"to rank {q}, which expects {parts[q]['recv_counts'][r]}")


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and \
        (isinstance(value, int) or math.isfinite(value)) and value >= 0


def _close(a: float, b: float) -> bool:
    try:
        return abs(a - b) <= 1e-9 * max(1.0, abs(b))
    except OverflowError:  # an integer beyond float range: certainly not close
        return False


def _validate_balance(block: Any, per_part: dict[str, list[int]], path: Any) -> None:
    """The optional ``balance`` block: well-formed and in agreement with the per-part lists."""
    if not isinstance(block, dict):
        raise _fail(path, f"'balance' must be an object (got {block!r:.200})")
    if block.get("by") not in BALANCE_BY:
        raise _fail(path, f"'balance.by' must be one of {BALANCE_BY} (got "
                          f"{block.get('by')!r:.200})")
    if not isinstance(block.get("partitioner"), str) or not block["partitioner"]:
        raise _fail(path, f"'balance.partitioner' must be a non-empty string (got "
                          f"{block.get('partitioner')!r:.200})")
    ubvec = block.get("ubvec")
    if ubvec is not None and not (isinstance(ubvec, list) and len(ubvec) == 2 and
                                  all(_number(u) and u > 1 for u in ubvec)):
        raise _fail(path, f"'balance.ubvec' must be null or two numbers > 1 (got "
                          f"{ubvec!r:.200})")
    if not _number(block.get("lower_bound_in_edges")):
        raise _fail(path, f"'balance.lower_bound_in_edges' must be a number >= 0 (got "
                          f"{block.get('lower_bound_in_edges')!r:.200})")
    for name in _BALANCE_STATS:
        stats, values = block.get(name), per_part[name]
        top = max(values)
        mean = sum(values) / len(values)
        expected = {"max": top, "mean": mean, "max_over_mean": top / mean if mean else 1.0}
        if not isinstance(stats, dict) or not isinstance(stats.get("max"), int) or \
                not all(_number(stats.get(k)) for k in expected) or \
                stats["max"] != top or not all(_close(stats[k], v) for k, v in expected.items()):
            raise _fail(path, f"'balance.{name}' must be {expected} (from the per-part "
                              f"counts; got {stats!r:.200})")


# ------------------------------------------------------------ heterogeneous graphs (HeteroData)
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
        _check_parts(parts, part_edges, f"{where}.parts", path, f"edge type {triple}: ")
    if not isinstance(meta.get("method"), str):
        raise _fail(path, f"'method' must be a string (got {meta.get('method')!r})")
    return meta
