r"""One rank's part of a partitioned ``HeteroData``: :class:`HeteroPartition`.

:func:`pyg_sar.load_partition` returns it for a folder written from a ``HeteroData``
(:mod:`pyg_sar.partition.format`). Its dicts go where PyG's ``HeteroData`` dicts go::

    part = pyg_sar.load_partition(folder, rank)
    out = model(part.x_dict, part.edge_index_dict)          # a to_hetero / HeteroConv model
    loss = pyg_sar.nn.functional.cross_entropy(out["paper"], part["paper"].y,
                                               part["paper"].train_mask)

Every edge type's graph is a bipartite :class:`~pyg_sar.graph.DistGraph` (sources of the source
type, destinations of the destination type; an edge type within one node type is an ordinary
DistGraph). :meth:`HeteroPartition.to_homogeneous` gives the typed homogeneous view PyG's
``HeteroData.to_homogeneous()`` gives (for ``RGCNConv``, ``RGATConv``, ``HEATConv``,
``FiLMConv``), built at load without communication: both ends of every exchange
order the rows they share by (node type, original id).
"""
from __future__ import annotations

import copy
import hashlib
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Optional

import numpy as np
import torch
from torch import Tensor

from pyg_sar.graph import Block, DistGraph
from pyg_sar.partition import format as fmt
from pyg_sar.partition.reader import PartitionReader as _Reader
from pyg_sar.partition.reader import check_range as _check_range
from pyg_sar.partition.storage import from_storage, parse_dtype

EdgeType = tuple[str, str, str]
MASK_KEYS = ("train_mask", "val_mask", "test_mask")


@dataclass
class EdgeTypeArrays:
    """The raw per-rank arrays of one edge type (what the DistGraph is built from).

    ``rowptr`` is ``[P, n_dst + 1]``; ``col``, ``edge_ids`` are in stored edge order;
    ``recv_*`` by source rank (``recv_counts``); ``send_idx`` one tensor per target rank.
    ``recv_in_degree`` / ``recv_total_in_degree`` are ``None`` in arrays restricted to some
    of the edges (:meth:`HeteroPartition.masked_edges`): the received sources' degrees in
    the restricted graph are known only to their owners (as in ``DistGraph.masked``).
    """

    in_degree: Tensor
    rowptr: Tensor
    col: Tensor
    edge_ids: Tensor
    recv_node_ids: Tensor
    recv_in_degree: Optional[Tensor]
    recv_total_in_degree: Optional[Tensor]
    send_idx: list[Tensor]
    block_num_edges: list[int]
    recv_counts: list[int]

    def masked(self, mask: Tensor) -> EdgeTypeArrays:
        """These arrays restricted to the stored edges where ``mask`` is true (stored order
        kept; the same nodes and exchange lists; ``in_degree`` counts the kept edges)."""
        n_dst = int(self.in_degree.numel())
        rowptrs, cols, counts, start = [], [], [], 0
        for s, count in enumerate(self.block_num_edges):
            keep = mask[start:start + count]
            ptr = self.rowptr[s]
            row = torch.repeat_interleave(torch.arange(n_dst), ptr[1:] - ptr[:-1])[keep]
            rowptr = torch.zeros(n_dst + 1, dtype=ptr.dtype)
            rowptr[1:] = torch.cumsum(torch.bincount(row, minlength=n_dst), 0)
            rowptrs.append(rowptr)
            cols.append(self.col[start:start + count][keep])
            counts.append(int(keep.sum()))
            start += count
        rowptr = torch.stack(rowptrs) if rowptrs else self.rowptr
        in_degree = (rowptr[:, 1:] - rowptr[:, :-1]).sum(0).to(self.in_degree.dtype) \
            if rowptrs else self.in_degree
        return replace(self, in_degree=in_degree, rowptr=rowptr,
                       col=torch.cat(cols) if cols else self.col, edge_ids=self.edge_ids[mask],
                       recv_in_degree=None, recv_total_in_degree=None,
                       block_num_edges=counts)


class TypeView:
    """``part[node_type]`` / ``part[edge_type]``: one type's tensors as attributes, like a
    ``HeteroData`` storage (``.x``, ``.y``, ``.train_mask``, ``.node_ids``, ``.num_nodes``;
    ``.edge_index`` (the DistGraph), ``.edge_attr``, ``.num_edges``). Standard keys the type
    lacks read as ``None``; ``keys()`` lists the present ones."""

    _STANDARD = ("x", "y", *MASK_KEYS, "edge_index", "edge_attr", "edge_weight")

    def __init__(self, key: Any, values: dict[str, Any]) -> None:
        self.__dict__["_key"] = key
        self.__dict__["_values"] = values

    def __getattr__(self, name: str) -> Any:
        values = self.__dict__["_values"]
        if name in values:
            return values[name]
        if name in self._STANDARD:
            return None
        raise AttributeError(f"{self.__dict__['_key']!r} has no attribute {name!r}")

    def __getitem__(self, name: str) -> Any:
        return self.__getattr__(name)

    def __contains__(self, name: str) -> bool:
        return name in self.__dict__["_values"]

    def keys(self) -> list[str]:
        return list(self.__dict__["_values"])

    def __repr__(self) -> str:
        return f"TypeView({self.__dict__['_key']!r}, keys={self.keys()})"


class HeteroPartition:
    r"""The part of a partitioned ``HeteroData`` that one rank holds.

    Attributes:
        rank, world_size: this part's rank and the number of parts (``num_parts`` too).
        node_types, edge_types: as the ``HeteroData``'s (edge types are ``(src, rel, dst)``);
            :meth:`metadata` returns both, as PyG's.
        x_dict, y_dict: node features / labels of the local nodes by node type (only types
            that have them); ``train_mask_dict``, ``val_mask_dict``, ``test_mask_dict``
            likewise; ``node_data_dict``: every node tensor by type and key.
        edge_index_dict: edge type -> the rank's bipartite :class:`~pyg_sar.graph.DistGraph`
            of that edge type.
        edge_attr_dict: edge type -> attributes of its stored edges (types that have them), in
            the graph's stored edge order; ``edge_data_dict``: every edge tensor.
        node_ids_dict: node type -> ``int64`` ORIGINAL ids (within the type) of the local
            nodes, local order (ascending new id).
        node_offsets_dict: node type -> the ``P + 1`` boundaries of the per-rank ranges of
            the type's new ids.
        num_nodes_dict: node type -> number of local nodes; ``num_edges_dict``: edge type ->
            number of stored edges; ``num_features_dict`` / ``num_classes_dict``: per node
            type, as recorded at partition time.
        edge_ids_dict: edge type -> input position (within the edge type) of every stored edge.
        pair_data_dict: edge type -> the supervision pairs of a link split that this rank owns
            (:func:`~pyg_sar.load_link_split` of a heterogeneous split: ``edge_label_index``,
            ``edge_label``, ``edge_label_ids`` or the ``pos_`` / ``neg_`` sets, in the new ids
            of the edge type's source and destination node types); also read as
            ``part[edge_type].edge_label_index``. Empty for a plain partition.
        meta, fingerprint, path: the parsed ``meta.json``, its SHA-256, the folder.

    Rows of node type ``t`` by new id from any rank (pair ends, e.g. ``z_dict["movie"]``'s):
    ``pyg_sar.gather(z_dict[t], index, ids="new", node_offsets=part.node_offsets_dict[t])``;
    each node type has its own new-id ranges.

    Methods: :meth:`metadata`; ``part[node_type]`` / ``part[edge_type]`` (a :class:`TypeView`);
    :meth:`to_homogeneous` (the typed homogeneous view, with :meth:`homogeneous_edge_map` and
    :meth:`homogeneous_edge_attr`); :meth:`global_edge_index` (an edge type's stored edges in
    original ids); :meth:`masked_edges` (some edge types restricted to some of their edges);
    :meth:`to` (a device).
    """

    def __init__(self, rank: int, world_size: int, node_types: list[str],
                 edge_types: list[EdgeType], node_offsets_dict: dict[str, list[int]],
                 node_ids_dict: dict[str, Tensor], node_data_dict: dict[str, dict[str, Tensor]],
                 edge_arrays: dict[EdgeType, EdgeTypeArrays],
                 edge_data_dict: dict[EdgeType, dict[str, Tensor]], meta: dict | None = None,
                 fingerprint: str = "", path: Path | None = None, context: Any = None) -> None:
        self.rank, self.world_size = int(rank), int(world_size)
        self.node_types, self.edge_types = list(node_types), [tuple(e) for e in edge_types]
        self.node_offsets_dict = {t: [int(o) for o in node_offsets_dict[t]]
                                  for t in self.node_types}
        self.node_ids_dict = node_ids_dict
        self.node_data_dict = node_data_dict
        self.edge_data_dict = edge_data_dict
        self.edge_arrays = edge_arrays
        self.meta = meta if meta is not None else {}
        self.fingerprint, self.path = fingerprint, path
        self._context = context
        self.edge_index_dict = {et: self._graph(et) for et in self.edge_types}
        self.pair_data_dict: dict[EdgeType, dict[str, Tensor]] = {}
        self._homogeneous: Optional[tuple[DistGraph, Tensor, Tensor]] = None
        self._homogeneous_edges: Optional[tuple[Tensor, Tensor]] = None

    # ------------------------------------------------------------ PyG-like views
    @property
    def num_parts(self) -> int:
        return self.world_size

    def metadata(self) -> tuple[list[str], list[EdgeType]]:
        """``(node_types, edge_types)`` as ``HeteroData.metadata()``."""
        return list(self.node_types), list(self.edge_types)

    def _node_dict(self, key: str) -> dict[str, Tensor]:
        return {t: d[key] for t, d in self.node_data_dict.items() if key in d}

    @property
    def x_dict(self) -> dict[str, Tensor]:
        return self._node_dict("x")

    @property
    def y_dict(self) -> dict[str, Tensor]:
        return self._node_dict("y")

    @property
    def train_mask_dict(self) -> dict[str, Tensor]:
        return self._node_dict("train_mask")

    @property
    def val_mask_dict(self) -> dict[str, Tensor]:
        return self._node_dict("val_mask")

    @property
    def test_mask_dict(self) -> dict[str, Tensor]:
        return self._node_dict("test_mask")

    @property
    def edge_attr_dict(self) -> dict[EdgeType, Tensor]:
        return {et: d["edge_attr"] for et, d in self.edge_data_dict.items() if "edge_attr" in d}

    @property
    def num_nodes_dict(self) -> dict[str, int]:
        return {t: int(self.node_ids_dict[t].numel()) for t in self.node_types}

    @property
    def num_features_dict(self) -> dict[str, int]:
        """Node type -> number of features of its ``x`` (0 without one), as partitioned."""
        return {info["name"]: int(info.get("num_features") or 0)
                for info in self.meta.get("hetero", {}).get("node_types", [])}

    @property
    def num_classes_dict(self) -> dict[str, int]:
        """Node type -> number of classes of its ``y`` (types with labels), as partitioned."""
        return {info["name"]: int(info["num_classes"])
                for info in self.meta.get("hetero", {}).get("node_types", [])
                if info.get("num_classes") is not None}

    @property
    def num_edges_dict(self) -> dict[EdgeType, int]:
        return {et: int(self.edge_arrays[et].col.numel()) for et in self.edge_types}

    @property
    def edge_ids_dict(self) -> dict[EdgeType, Tensor]:
        return {et: self.edge_arrays[et].edge_ids for et in self.edge_types}

    def edge_type_of(self, key: Any) -> EdgeType:
        """The edge type named by ``key``: ``(src, rel, dst)``, ``(src, dst)`` or ``rel`` when
        unique, as ``HeteroData`` resolves them."""
        if isinstance(key, tuple) and len(key) == 3 and key in self.edge_arrays:
            return key
        if isinstance(key, tuple) and len(key) == 2:
            found = [et for et in self.edge_types if (et[0], et[2]) == key]
        elif isinstance(key, str):
            found = [et for et in self.edge_types if et[1] == key]
        else:
            found = []
        if len(found) != 1:
            raise KeyError(f"{key!r} names {'no' if not found else 'more than one'} edge type "
                           f"of the partition (edge types: {self.edge_types})")
        return found[0]

    def __getitem__(self, key: Any) -> TypeView:
        """``part["paper"]`` (a node type) or ``part["paper", "cites", "paper"]`` (an edge
        type): that type's tensors as a :class:`TypeView`."""
        if isinstance(key, str) and key in self.node_ids_dict:
            return TypeView(key, {**self.node_data_dict[key],
                                  "node_ids": self.node_ids_dict[key],
                                  "num_nodes": self.num_nodes_dict[key]})
        et = self.edge_type_of(key)
        return TypeView(et, {"edge_index": self.edge_index_dict[et],
                             **self.edge_data_dict[et],
                             **self.pair_data_dict.get(et, {}),
                             "edge_ids": self.edge_arrays[et].edge_ids,
                             "num_edges": self.num_edges_dict[et]})

    def masked_edges(self, masks: dict[Any, Optional[Tensor]]) -> HeteroPartition:
        """A copy whose edge types in ``masks`` keep only the stored edges where their mask
        (``bool [num_edges_dict[et]]``) is true, as ``DistGraph.masked`` (PyG's
        ``edge_index[:, mask]``): the same nodes and exchange lists, the kept edges in stored
        order, edge tensors ``t[mask]``. Node tensors, and the graphs of the edge types not in
        ``masks`` (or with a ``None`` mask), are shared; ``pair_data_dict`` starts empty.
        No communication."""
        out = copy.copy(self)
        out.edge_arrays, out.edge_data_dict = dict(self.edge_arrays), dict(self.edge_data_dict)
        out.edge_index_dict = dict(self.edge_index_dict)
        out.pair_data_dict = {}
        out._homogeneous = out._homogeneous_edges = None
        for key, mask in masks.items():
            if mask is None:
                continue
            et = self.edge_type_of(key)
            if mask.dtype != torch.bool or tuple(mask.shape) != (self.num_edges_dict[et],):
                raise ValueError(f"masked_edges: the mask of edge type {et} must be a boolean "
                                 f"tensor of shape [{self.num_edges_dict[et]}] (got "
                                 f"{mask.dtype} {list(mask.shape)})")
            mask = mask.cpu()
            out.edge_arrays[et] = self.edge_arrays[et].masked(mask)
            out.edge_data_dict[et] = {k: v[mask.to(v.device)]
                                      for k, v in self.edge_data_dict[et].items()}
            graph = out._graph(et)
            device = self.edge_index_dict[et].device
            out.edge_index_dict[et] = graph.to(device) if device.type != "cpu" else graph
        return out

    def __repr__(self) -> str:
        return (f"HeteroPartition(rank={self.rank}, world_size={self.world_size}, "
                f"num_nodes={self.num_nodes_dict}, num_edges={self.num_edges_dict})")

    # ------------------------------------------------------------ graphs
    def _graph(self, et: EdgeType) -> DistGraph:
        src, _, dst = et
        a = self.edge_arrays[et]
        P, r = self.world_size, self.rank
        bipartite = src != dst
        n_src = self.num_nodes_dict[src]
        blocks, edge_start, recv_start = [], 0, 0
        for s in range(P):
            count = a.block_num_edges[s]
            if s == r:
                num_src = n_src
                degree = None if bipartite else a.in_degree
            else:
                num_src = a.recv_counts[s]
                degree = None if bipartite or a.recv_in_degree is None else \
                    a.recv_in_degree[recv_start:recv_start + num_src]
                recv_start += num_src
            blocks.append(Block(s, a.rowptr[s], a.col[edge_start:edge_start + count],
                                num_src, edge_start, degree))
            edge_start += count
        graph = DistGraph(r, P, self.node_offsets_dict[dst], blocks, list(a.send_idx),
                          a.in_degree, node_ids=self.node_ids_dict[dst],
                          src_node_offsets=self.node_offsets_dict[src], bipartite=bipartite)
        if self._context is not None:
            graph.bind(self._context)
        return graph

    def global_edge_index(self, edge_type: Any) -> Tensor:
        """The rank's stored edges of ``edge_type`` as ``int64 [2, E]`` ORIGINAL ids (row 0
        within the source type, row 1 within the destination type), stored edge order."""
        et = self.edge_type_of(edge_type)
        a = self.edge_arrays[et]
        src_ids, dst_ids = self.node_ids_dict[et[0]], self.node_ids_dict[et[2]]
        out, edge_start, recv_start = [], 0, 0
        for s in range(self.world_size):
            count = a.block_num_edges[s]
            ptr = a.rowptr[s]
            row = torch.repeat_interleave(torch.arange(ptr.numel() - 1), ptr[1:] - ptr[:-1])
            col = a.col[edge_start:edge_start + count]
            if s == self.rank:
                src = src_ids[col]
            else:
                src = a.recv_node_ids[recv_start + col]
                recv_start += a.recv_counts[s]
            out.append(torch.stack([src, dst_ids[row]]))
            edge_start += count
        return torch.cat(out, dim=1)

    def to_homogeneous(self) -> tuple[DistGraph, Tensor, Tensor]:
        """The typed homogeneous view: ``(graph, node_type, edge_type)``, as PyG's
        ``HeteroData.to_homogeneous()`` gives ``edge_index``, ``node_type``, ``edge_type``.

        Node type ``i`` is ``node_types[i]``, edge type ``j`` is ``edge_types[j]``. The
        homogeneous new ids are rank-major, and within a rank the node types in order, each in
        its local order: ``node_type`` (``int64 [local nodes]``) is sorted. The graph's
        ``node_ids`` are PyG's homogeneous ids (type offset + original id within the type), its
        ``in_degree`` counts in-edges of every edge type, and ``edge_type`` has one entry per
        stored edge (the graph's stored order; :meth:`homogeneous_edge_map` gives every stored
        edge's position in its edge type's stored order). Built once, without communication.
        """
        if self._homogeneous is None:
            self._homogeneous = _homogeneous_view(self)
        return self._homogeneous

    def homogeneous_edge_map(self) -> tuple[Tensor, Tensor]:
        """``(edge_type, position)``: for every stored edge of :meth:`to_homogeneous`'s graph,
        its edge type index and its position in that edge type's stored edges (so
        ``edge_attr_dict[edge_types[t]][position]`` is its attribute)."""
        self.to_homogeneous()
        return self._homogeneous_edges

    def homogeneous_edge_attr(self, key: str = "edge_attr") -> Optional[Tensor]:
        """Edge tensor ``key`` of every edge type, in :meth:`to_homogeneous`'s stored edge
        order, when every edge type has it with the same trailing shape (as PyG's
        ``to_homogeneous`` concatenates it); ``None`` otherwise."""
        tensors = [self.edge_data_dict[et].get(key) for et in self.edge_types]
        if not tensors or any(t is None for t in tensors) or \
                len({tuple(t.shape[1:]) for t in tensors}) != 1:
            return None
        etype, pos = self.homogeneous_edge_map()
        offsets = torch.tensor([0] + [int(t.size(0)) for t in tensors]).cumsum(0)
        return torch.cat(tensors)[offsets[etype] + pos]

    def __getstate__(self) -> dict:
        """Pickled (``torch.save``) without its communication context, which the graphs bind
        again on first use (to that of :func:`pyg_sar.init`)."""
        state = dict(self.__dict__)
        state["_context"] = None
        return state

    def __setstate__(self, state: dict) -> None:
        state.setdefault("pair_data_dict", {})  # pickled before link splits had pairs
        self.__dict__.update(state)

    # ------------------------------------------------------------ device moves
    def to(self, device: Any) -> HeteroPartition:
        """Move every tensor and graph to ``device`` (in place; returns ``self``)."""
        device = torch.device(device)
        self.node_data_dict = {t: {k: v.to(device) for k, v in d.items()}
                               for t, d in self.node_data_dict.items()}
        self.edge_data_dict = {et: {k: v.to(device) for k, v in d.items()}
                               for et, d in self.edge_data_dict.items()}
        self.edge_index_dict = {et: g.to(device) for et, g in self.edge_index_dict.items()}
        self.pair_data_dict = {et: {k: v.to(device) for k, v in d.items()}
                               for et, d in self.pair_data_dict.items()}
        if self._homogeneous is not None:
            graph, node_type, edge_type = self._homogeneous
            self._homogeneous = (graph.to(device), node_type.to(device), edge_type.to(device))
        return self


def _homogeneous_view(part: HeteroPartition) -> tuple[DistGraph, Tensor, Tensor]:
    """See :meth:`HeteroPartition.to_homogeneous`."""
    P, r = part.world_size, part.rank
    types = part.node_types
    tindex = {t: i for i, t in enumerate(types)}
    counts_of = np.array([[part.node_offsets_dict[t][q + 1] - part.node_offsets_dict[t][q]
                           for t in types] for q in range(P)], dtype=np.int64)  # [P, T]
    offsets = [0] + np.cumsum(counts_of.sum(axis=1)).tolist()
    start = np.concatenate([[0], np.cumsum(counts_of[r])[:-1]])  # local start of every type
    global_start = np.concatenate([[0], np.cumsum(counts_of.sum(axis=0))[:-1]])
    stride = int(max((part.node_offsets_dict[t][-1] for t in types), default=0)) + 1

    def key(t: str, orig: np.ndarray) -> np.ndarray:
        return tindex[t] * stride + orig

    node_type = torch.repeat_interleave(torch.arange(len(types)), torch.from_numpy(counts_of[r]))
    node_ids = torch.cat([part.node_ids_dict[t] + int(global_start[tindex[t]]) for t in types])
    n = int(counts_of[r].sum())
    in_degree = np.zeros(n, dtype=np.int64)
    for et in part.edge_types:
        s0 = int(start[tindex[et[2]]])
        a = part.edge_arrays[et]
        in_degree[s0:s0 + a.in_degree.numel()] += a.in_degree.numpy()

    # Send lists: per target rank, the union over edge types of the rows sent, ordered by key.
    send_idx = []
    for q in range(P):
        keys, local = [np.zeros(0, np.int64)], [np.zeros(0, np.int64)]
        for et in part.edge_types:
            ids = part.edge_arrays[et].send_idx[q].numpy()
            keys.append(key(et[0], part.node_ids_dict[et[0]].numpy()[ids]))
            local.append(ids + start[tindex[et[0]]])
        _, first = np.unique(np.concatenate(keys), return_index=True)
        send_idx.append(torch.from_numpy(np.concatenate(local)[first]))

    blocks, etypes, positions, edge_start = [], [], [], 0
    for s in range(P):
        rows, cols, ets, pos = [], [], [], []
        recv_keys, recv_deg = [np.zeros(0, np.int64)], [np.zeros(0, np.int64)]
        degrees_known = True
        recv_pos = {}
        for j, et in enumerate(part.edge_types):
            a = part.edge_arrays[et]
            begin = int(sum(a.block_num_edges[:s]))
            count = a.block_num_edges[s]
            ptr = a.rowptr[s].numpy()
            row = np.repeat(np.arange(ptr.size - 1), np.diff(ptr)) + start[tindex[et[2]]]
            col = a.col[begin:begin + count].numpy()
            if s != r:
                lo = int(sum(a.recv_counts[:s]))
                k = key(et[0], a.recv_node_ids[lo:lo + a.recv_counts[s]].numpy())
                recv_pos[j] = (len(recv_keys) - 1, k)
                recv_keys.append(k)
                if a.recv_total_in_degree is None:
                    degrees_known = False
                else:
                    recv_deg.append(a.recv_total_in_degree[lo:lo + a.recv_counts[s]].numpy())
                col = k[col]  # keys for now, positions below
            else:
                col = col + start[tindex[et[0]]]
            rows.append(row)
            cols.append(col)
            ets.append(np.full(count, j, dtype=np.int64))
            pos.append(np.arange(begin, begin + count, dtype=np.int64))
        rows, cols = np.concatenate([np.zeros(0, np.int64), *rows]), \
            np.concatenate([np.zeros(0, np.int64), *cols])
        ets, pos = np.concatenate([np.zeros(0, np.int64), *ets]), \
            np.concatenate([np.zeros(0, np.int64), *pos])
        if s == r:
            num_src, src_degree = n, torch.from_numpy(in_degree)
        else:
            union, first = np.unique(np.concatenate(recv_keys), return_index=True)
            cols = np.searchsorted(union, cols)
            num_src = int(union.size)
            src_degree = torch.from_numpy(np.concatenate(recv_deg)[first]) \
                if degrees_known else None
        order = np.lexsort((pos, ets, rows))
        rows, cols, ets, pos = rows[order], cols[order], ets[order], pos[order]
        rowptr = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(np.bincount(rows, minlength=n), out=rowptr[1:])
        blocks.append(Block(s, torch.from_numpy(rowptr), torch.from_numpy(cols), num_src,
                            edge_start, src_degree))
        edge_start += int(cols.size)
        etypes.append(ets)
        positions.append(pos)
    graph = DistGraph(r, P, offsets, blocks, send_idx, torch.from_numpy(in_degree),
                      node_ids=node_ids)
    if part._context is not None:
        graph.bind(part._context)
    edge_type = torch.from_numpy(np.concatenate(etypes))
    part._homogeneous_edges = (edge_type, torch.from_numpy(np.concatenate(positions)))
    return graph, node_type, edge_type


def load_hetero_partition(root: Path, rank: int, meta: dict, raw: bytes,
                          context: Any = None) -> HeteroPartition:
    """Rank ``rank``'s :class:`HeteroPartition` of the heterogeneous partition at ``root``
    (``meta`` validated by :func:`~pyg_sar.partition.loader.read_meta`; called by
    :func:`~pyg_sar.partition.load_partition`, which checks ``rank`` and the world size)."""
    read = _Reader(root, meta)
    P = meta["num_parts"]
    h = meta["hetero"]
    node_types = [info["name"] for info in h["node_types"]]
    offsets = {info["name"]: info["node_offsets"] for info in h["node_types"]}
    count = {t: offsets[t][rank + 1] - offsets[t][rank] for t in node_types}
    node_ids, node_data = {}, {}
    for i, info in enumerate(h["node_types"]):
        t = info["name"]
        ids = read(fmt.ntype_file(rank, i, "node_ids"), (count[t],))
        _check_range(ids, info["num_nodes"], f"node_ids of node type {t!r}",
                     root / fmt.ntype_file(rank, i, "node_ids"))
        node_ids[t] = torch.from_numpy(ids)
        node_data[t] = _tensors(read, info["node_keys"], count[t],
                                lambda key, i=i: fmt.ntype_data_file(rank, i, key))
    edge_types, arrays, edge_data = [], {}, {}
    for j, info in enumerate(h["edge_types"]):
        et = (info["src"], info["rel"], info["dst"])
        edge_types.append(et)
        part = info["parts"][rank]
        n_dst, n_src = count[et[2]], count[et[0]]
        E = info["part_num_edges"][rank]
        num_recv, num_send = sum(part["recv_counts"]), sum(part["send_counts"])
        shapes = {"in_degree": (n_dst,), "rowptr": (P, n_dst + 1), "col": (E,),
                  "edge_ids": (E,), "recv_node_ids": (num_recv,),
                  "recv_in_degree": (num_recv,), "recv_total_in_degree": (num_recv,),
                  "send_idx": (num_send,)}
        got = {name: read(fmt.etype_file(rank, j, name), shape)
               for name, shape in shapes.items()}

        def where(name: str, j: int = j) -> Path:
            return root / fmt.etype_file(rank, j, name)
        _check_range(got["send_idx"], n_src, "send_idx", where("send_idx"))
        _check_range(got["edge_ids"], info["num_edges"], "edge_ids", where("edge_ids"))
        _check_range(got["recv_node_ids"], offsets[et[0]][-1], "recv_node_ids",
                     where("recv_node_ids"))
        edge_start = 0
        for s in range(P):
            c = part["block_num_edges"][s]
            ptr = got["rowptr"][s]
            if int(ptr[0]) != 0 or int(ptr[-1]) != c or bool((ptr[1:] < ptr[:-1]).any()):
                raise ValueError(f"partition file '{where('rowptr')}': row {s} is not a CSR "
                                 f"row pointer of {c} edges (edge type {et})")
            num_src = n_src if s == rank else part["recv_counts"][s]
            _check_range(got["col"][edge_start:edge_start + c], num_src,
                         f"block {s} columns of edge type {et}", where("col"))
            edge_start += c
        t = {k: torch.from_numpy(v) for k, v in got.items()}
        arrays[et] = EdgeTypeArrays(
            in_degree=t["in_degree"], rowptr=t["rowptr"], col=t["col"],
            edge_ids=t["edge_ids"], recv_node_ids=t["recv_node_ids"],
            recv_in_degree=t["recv_in_degree"],
            recv_total_in_degree=t["recv_total_in_degree"],
            send_idx=list(torch.split(t["send_idx"], part["send_counts"])),
            block_num_edges=list(part["block_num_edges"]),
            recv_counts=list(part["recv_counts"]))
        edge_data[et] = _tensors(read, info["edge_keys"], E,
                                 lambda key, j=j: fmt.etype_data_file(rank, j, key))
    return HeteroPartition(rank, P, node_types, edge_types, offsets, node_ids, node_data,
                           arrays, edge_data, meta=meta,
                           fingerprint=hashlib.sha256(raw).hexdigest(), path=root,
                           context=context)


def _tensors(read: _Reader, keys: dict, rows: int, file_of) -> dict[str, Tensor]:
    out = {}
    for key, spec in keys.items():
        array = read(file_of(key), (rows, *spec["shape"][1:]), spec["storage_dtype"])
        out[key] = from_storage(array, parse_dtype(spec["dtype"]))
    return out
