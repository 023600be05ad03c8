"""``load_partition``: one rank's part of a partition folder as a :class:`PartitionData`.

Reads ``meta.json`` and the files of ``part{rank}/`` only, each checked against its SHA-256;
nothing is unpickled and no other rank's data is touched.
"""
from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import torch
from torch import Tensor
from torch_geometric.data import Data

from pyg_sar.graph import Block, DistGraph
from pyg_sar.partition import format as fmt
from pyg_sar.partition.reader import PartitionReader as _Reader
from pyg_sar.partition.reader import check_range as _check_range
from pyg_sar.partition.storage import from_storage, parse_dtype

if TYPE_CHECKING:  # pragma: no cover
    from pyg_sar.partition.hetero import HeteroPartition

STANDARD_NODE_KEYS = ("x", "y", "train_mask", "val_mask", "test_mask")
STANDARD_EDGE_KEYS = ("edge_attr", "edge_weight")


class PartitionData(Data):
    r"""The part of a partitioned graph that one rank holds: a PyG ``Data`` whose
    ``edge_index`` is the rank's :class:`~pyg_sar.graph.DistGraph`.

    Returned by :func:`load_partition` and :func:`pyg_sar.distribute`; use it as PyG's ``data``
    in an unchanged training script: ``model(data.x, data.edge_index)``,
    ``data('train_mask', 'val_mask', 'test_mask')``, ``data.to(device)``. The tensors and
    graphs below live in PyG's store (``data.keys()``, moved by ``to``); ``rank``,
    ``num_parts``, ``meta``, ``fingerprint`` and ``path`` do not. ``num_nodes`` and
    ``num_edges`` count the rank's local nodes and stored edges. ``LocalPartition`` is another
    name for this class.

    Attributes:
        x: node features of the local nodes (``y``, ``train_mask``, ``val_mask`` and
            ``test_mask`` likewise; ``None`` when the input had none).
        edge_index: the rank's :class:`~pyg_sar.graph.DistGraph` (pass it where PyG expects
            ``edge_index``); :attr:`graph` is the same object.
        adj_t: present when the input graph was a sparse ``adj_t``: the graph carrying its
            values (:meth:`~pyg_sar.graph.DistGraph.with_values`), for layers that PyG calls
            with ``adj_t``.
        edge_attr: attributes of the stored edges, in stored edge order (``edge_weight``
            likewise; for an input ``adj_t`` with values, ``edge_weight`` holds them).
        node_ids: ``int64 [num_nodes]`` original ids of the local nodes, in local order.
        edge_ids: ``int64 [num_edges]`` input position of every stored edge.
        recv_node_ids: original ids of the rows received from other ranks, by source rank.
        node_data: any other node tensor of the input, by name (also ``data.<name>``);
            ``edge_data`` likewise for edge tensors.
        meta: the parsed ``meta.json``; ``fingerprint`` is its SHA-256 (it identifies the
            partition), ``path`` the folder the part was loaded from.
    """

    def __init__(self, rank: int = 0, num_parts: int = 1, graph: DistGraph | None = None,
                 node_ids: Tensor | None = None, edge_ids: Tensor | None = None,
                 recv_node_ids: Tensor | None = None, meta: dict | None = None,
                 fingerprint: str = "", path: Path | str | None = None,
                 x: Tensor | None = None, y: Tensor | None = None,
                 train_mask: Tensor | None = None, val_mask: Tensor | None = None,
                 test_mask: Tensor | None = None, edge_attr: Tensor | None = None,
                 edge_weight: Tensor | None = None,
                 node_data: dict[str, Tensor] | None = None,
                 edge_data: dict[str, Tensor] | None = None, **kwargs: Any) -> None:
        if graph is None:
            graph = kwargs.pop("edge_index", None)
        super().__init__(x=x, edge_index=graph, edge_attr=edge_attr, y=y, **kwargs)
        self.__dict__.update(_rank=int(rank), _num_parts=int(num_parts),
                             _meta=meta if meta is not None else {},
                             _fingerprint=fingerprint,
                             _path=None if path is None else Path(path),
                             _node_keys=[], _edge_keys=[])
        for key, value in (("edge_weight", edge_weight), ("train_mask", train_mask),
                           ("val_mask", val_mask), ("test_mask", test_mask),
                           ("node_ids", node_ids), ("edge_ids", edge_ids),
                           ("recv_node_ids", recv_node_ids)):
            if value is not None:
                self[key] = value
        self.node_data = node_data or {}
        self.edge_data = edge_data or {}

    # ------------------------------------------------------------ plain attributes
    rank = property(lambda self: self.__dict__["_rank"],
                    lambda self, v: self.__dict__.__setitem__("_rank", int(v)),
                    doc="This part's rank.")
    num_parts = property(lambda self: self.__dict__["_num_parts"],
                         lambda self, v: self.__dict__.__setitem__("_num_parts", int(v)),
                         doc="Number of parts of the partition (= the world size).")
    meta = property(lambda self: self.__dict__["_meta"],
                    lambda self, v: self.__dict__.__setitem__("_meta", v),
                    doc="The parsed ``meta.json`` of the partition.")
    fingerprint = property(lambda self: self.__dict__["_fingerprint"],
                           lambda self, v: self.__dict__.__setitem__("_fingerprint", v),
                           doc="SHA-256 of ``meta.json``: identifies the partition.")
    path = property(lambda self: self.__dict__["_path"],
                    lambda self, v: self.__dict__.__setitem__("_path", v),
                    doc="The folder the part was loaded from.")

    @property
    def graph(self) -> DistGraph | None:
        """The rank's :class:`~pyg_sar.graph.DistGraph` (the same object as ``edge_index``)."""
        return self.edge_index

    @graph.setter
    def graph(self, value: DistGraph) -> None:
        self.edge_index = value

    def _optional(key: str, doc: str) -> property:  # noqa: N805 - a helper of the class body
        def get(self):
            return self._store[key] if key in self._store else None

        def put(self, value):
            setattr(self._store, key, value)  # None removes it, as in PyG
        return property(get, put, doc=doc)

    train_mask = _optional("train_mask", "Training mask of the local nodes, or ``None``.")
    val_mask = _optional("val_mask", "Validation mask of the local nodes, or ``None``.")
    test_mask = _optional("test_mask", "Test mask of the local nodes, or ``None``.")
    del _optional

    def _extra(self, attr: str) -> dict[str, Tensor]:
        return {k: self._store[k] for k in self.__dict__[attr] if k in self._store}

    def _set_extra(self, attr: str, values: dict[str, Tensor]) -> None:
        for key in self.__dict__[attr]:
            if key in self._store:
                del self._store[key]
        self.__dict__[attr] = list(values)
        for key, value in values.items():
            self[key] = value

    @property
    def node_data(self) -> dict[str, Tensor]:
        """Node tensors of the input other than x, y and the masks, by name (also attributes
        of the data, ``data.<name>``)."""
        return self._extra("_node_keys")

    @node_data.setter
    def node_data(self, values: dict[str, Tensor]) -> None:
        self._set_extra("_node_keys", values)

    @property
    def edge_data(self) -> dict[str, Tensor]:
        """Edge tensors of the input other than edge_attr and edge_weight, by name, in stored
        edge order (also attributes of the data)."""
        return self._extra("_edge_keys")

    @edge_data.setter
    def edge_data(self, values: dict[str, Tensor]) -> None:
        self._set_extra("_edge_keys", values)

    # ------------------------------------------------------------------ sizes
    @property
    def num_nodes(self) -> int | None:
        """Number of local nodes (those this rank owns)."""
        graph = self.edge_index
        return graph.num_nodes if isinstance(graph, DistGraph) else super().num_nodes

    @num_nodes.setter
    def num_nodes(self, value: int | None) -> None:
        graph = self.edge_index
        if isinstance(graph, DistGraph) and value != graph.num_nodes:
            raise ValueError(f"PartitionData.num_nodes is the rank's number of local nodes "
                             f"({graph.num_nodes}) and cannot be set to {value!r}")
        if not isinstance(graph, DistGraph):
            Data.num_nodes.fset(self, value)

    @property
    def num_edges(self) -> int:
        """Number of edges stored on this rank (all in-edges of its local nodes)."""
        graph = self.edge_index
        return graph.num_edges if isinstance(graph, DistGraph) else super().num_edges

    @property
    def num_features(self) -> int:
        """Number of node features (as recorded at partition time)."""
        if "num_features" in self.meta:
            return int(self.meta.get("num_features") or 0)
        return super().num_features

    @property
    def num_classes(self) -> int | None:
        """Number of classes (as recorded at partition time), or ``None``."""
        return self.meta.get("num_classes")

    # ---------------------------------------------------------- device moves
    def apply(self, func: Callable, *args: str) -> PartitionData:
        """PyG's ``Data.apply`` (``to``, ``cpu``, ``cuda``, ``pin_memory`` go through it); the
        graphs move as a whole, to the device ``func`` moves a tensor to, and ``adj_t`` keeps
        sharing the structure of ``edge_index``."""
        graphs = {k: v for k, v in self._store.items() if isinstance(v, DistGraph)}
        for key in graphs:
            del self._store[key]
        try:
            super().apply(func, *args)
        finally:
            moved: dict[int, DistGraph] = {}
            for key, graph in graphs.items():
                self._store[key] = graph if args and key not in args else \
                    _apply_to_graph(graph, func, moved)
        return self

    def local_index(self, index: Tensor | dict) -> Tensor | dict:
        """The positions among this part's rows of the nodes ``index`` (ORIGINAL ids) that
        this rank holds, in the order of ``index``; the others are left out. A dict of index
        tensors (an OGB ``split_idx``) gives a dict with the same keys. Local: no
        communication.

        Example (an OGB script)::

            data = pyg_sar.distribute(dataset[0])
            split_idx = data.local_index(dataset.get_idx_split())
            x_train = data.x[split_idx["train"]]

        Raises:
            ValueError: ``index`` is not a 1-D integer tensor (or a dict of them), or holds an
                id outside ``[0, num_nodes)`` of the whole graph.
        """
        if isinstance(index, dict):
            return {key: self.local_index(value) for key, value in index.items()}
        if not isinstance(index, Tensor) or index.dim() != 1 or index.is_floating_point() \
                or index.dtype == torch.bool:
            what = (f"a tensor of dtype {index.dtype} and shape {list(index.shape)}"
                    if isinstance(index, Tensor) else type(index).__name__)
            raise ValueError(f"PartitionData.local_index: index must be a 1-D integer tensor of "
                             f"original node ids (or a dict of them), got {what}")
        total = self.graph.num_global_nodes
        if index.numel() and (int(index.min()) < 0 or int(index.max()) >= total):
            bad = int(index.min()) if int(index.min()) < 0 else int(index.max())
            raise ValueError(f"PartitionData.local_index: node id {bad} is outside "
                             f"[0, {total}), the whole graph's nodes")
        own = self.node_ids
        if own is None:  # one part, not renumbered: original ids are the rows
            return index.to(torch.long)
        index = index.to(own.device, torch.long)
        ordered, position = torch.sort(own)
        at = torch.searchsorted(ordered, index).clamp_(max=max(ordered.numel() - 1, 0))
        held = ordered[at] == index if ordered.numel() else torch.zeros_like(index, dtype=bool)
        return position[at[held]]

    def global_edge_index(self) -> Tensor:
        """The rank's stored edges as ``int64 [2, num_edges]`` in ORIGINAL node ids.

        Same order as :attr:`edge_attr`; row 0 is the source, row 1 the destination.
        """
        graph = self.graph
        node_ids, recv_node_ids = self.node_ids, self.recv_node_ids
        recv_start = 0
        parts = []
        for block in graph.blocks:
            dst = node_ids[block.row]
            if block.src_rank == self.rank:
                src = node_ids[block.col]
            else:
                src = recv_node_ids[recv_start + block.col]
                recv_start += block.num_src
            parts.append(torch.stack([src, dst]))
        if not parts:
            return torch.zeros(2, 0, dtype=torch.long)
        return torch.cat(parts, dim=1)


def _apply_to_graph(graph: DistGraph, func: Callable, moved: dict[int, DistGraph]
                    ) -> DistGraph:
    """``graph`` on the device ``func`` moves its tensors to (``graph`` itself if none)."""
    try:
        probe = func(graph.in_degree)
    except Exception:  # noqa: BLE001 - PyG's apply also leaves what func cannot take
        return graph
    if not isinstance(probe, Tensor) or probe.device == graph.device:
        return graph
    key = id(graph.blocks)  # graphs sharing their structure (adj_t and edge_index) stay so
    base = moved.get(key)
    if base is None:
        base = moved[key] = graph.with_values(None).to(probe.device)
    if graph.edge_values is None:
        return base
    return base.with_values(graph.edge_values.to(probe.device))


LocalPartition = PartitionData


def read_meta(path: str | Path) -> tuple[dict, bytes]:
    """Parsed and validated ``meta.json`` of a partition folder, with its raw bytes."""
    meta_path = Path(path) / fmt.META_FILE
    if not meta_path.is_file():
        raise FileNotFoundError(f"no partition at '{path}': '{meta_path}' does not exist")
    raw = meta_path.read_bytes()
    try:
        meta = json.loads(raw)
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise fmt.MetaError(f"malformed partition metadata '{meta_path}': not valid JSON "
                            f"({err})") from None
    return fmt.validate_meta(meta, meta_path), raw


def load_node_map(path: str | Path, node_type: str | None = None) -> Tensor:
    """``int64 [num_nodes]``: the new (partitioned) id of every original node (of
    ``node_type``, within that type, for a heterogeneous partition)."""
    root = Path(path)
    meta, _ = read_meta(root)
    if "hetero" in meta:
        from pyg_sar.partition.format import node_map_file
        types = [info["name"] for info in meta["hetero"]["node_types"]]
        if node_type not in types:
            raise ValueError(f"load_node_map: the partition at '{root}' is heterogeneous; "
                             f"pass node_type, one of {types} (got {node_type!r})")
        i = types.index(node_type)
        return torch.from_numpy(_Reader(root, meta)(
            node_map_file(i), (meta["hetero"]["node_types"][i]["num_nodes"],)))
    if node_type is not None:
        raise ValueError(f"load_node_map: the partition at '{root}' is homogeneous; it has "
                         f"no node type {node_type!r}")
    return torch.from_numpy(_Reader(root, meta)(fmt.NODE_MAP_FILE, (meta["num_nodes"],)))


def _expected_world_size(world_size: int | None) -> int | None:
    """``world_size`` if given, else the running job's (:func:`pyg_sar.init`), even of one
    rank; ``None`` (no check) only for a process that never called ``init`` (inspection)."""
    if world_size is not None:
        if not isinstance(world_size, (int, np.integer)) or isinstance(world_size, bool) or \
                world_size < 1:
            raise ValueError(f"load_partition: world_size must be an integer >= 1 (got "
                             f"{world_size!r})")
        return int(world_size)
    from pyg_sar.distributed.context import resolve_context
    ctx = resolve_context(create=False)
    return ctx.world_size if ctx is not None else None


def load_partition(path: str | Path, rank: int, world_size: int | None = None,
                   context: Any = None) -> PartitionData | HeteroPartition:
    """Load rank ``rank``'s part of the partition folder ``path``.

    A folder written from a ``HeteroData`` gives a
    :class:`~pyg_sar.partition.hetero.HeteroPartition` (``x_dict``, ``edge_index_dict``, ...).

    Verifies ``meta.json`` (format version, structure) and the SHA-256 of every file read;
    reads only ``meta.json`` and ``part{rank}/``. The number of parts must equal the number
    of ranks: ``world_size`` when given, else that of the running job (:func:`pyg_sar.init`),
    so a single process that called ``init()`` is refused a P-part folder here, not in its
    first forward pass. Only a process that never called ``init()`` may load any part of any
    partition, for inspection.

    ``context`` (a :class:`~pyg_sar.distributed.context.DistContext`) binds the graph to it:
    its engine, batch norms and losses then communicate there (default: the context of
    :func:`pyg_sar.init` when the graph is first used), and it is the world size checked.

    Raises:
        FileNotFoundError: no partition (or a listed file is missing) at ``path``.
        ValueError: ``rank`` out of range, malformed or newer-format metadata, a file that fails
            its checksum (:class:`~pyg_sar.partition.storage.ChecksumError`, a ``RuntimeError``)
            or is not a plain array, or a partition whose number of parts is not the
            world size.
    """
    root = Path(path)
    if (root / "link.json").is_file():
        raise ValueError(f"the folder '{root}' holds a partitioned link split (train / val / "
                         f"test graphs and supervision pairs): load it with "
                         f"pyg_sar.load_link_split(path, rank), which returns the three parts")
    if world_size is None and context is not None:
        world_size = context.world_size
    expected = _expected_world_size(world_size)
    meta, raw = read_meta(root)
    num_parts = meta["num_parts"]
    if expected is not None and num_parts != expected:
        raise ValueError(f"the partition at '{root}' has {num_parts} parts but the job runs "
                         f"on {expected} rank{'s' if expected != 1 else ''} (world size); "
                         f"partition the graph with num_parts={expected} or launch "
                         f"{num_parts} ranks (or, to inspect one part in this process, pass "
                         f"world_size={num_parts})")
    if not isinstance(rank, (int, np.integer)) or isinstance(rank, bool) or \
            not 0 <= rank < num_parts:
        raise ValueError(f"rank {rank!r} is out of range for a partition of {num_parts} parts "
                         f"at '{root}'")
    rank = int(rank)
    if "hetero" in meta:  # written from a HeteroData
        from pyg_sar.partition.hetero import load_hetero_partition
        return load_hetero_partition(root, rank, meta, raw, context)
    read = _Reader(root, meta)
    info = meta["parts"][rank]
    offsets = meta["node_offsets"]
    n = offsets[rank + 1] - offsets[rank]
    num_edges = meta["part_num_edges"][rank]
    num_recv, num_send = sum(info["recv_counts"]), sum(info["send_counts"])

    def structure(name: str, shape: tuple) -> Tensor:
        return torch.from_numpy(read(fmt.structure_file(rank, name), shape))

    node_ids = structure("node_ids", (n,))
    in_degree = structure("in_degree", (n,))
    rowptr = structure("rowptr", (num_parts, n + 1))
    col = structure("col", (num_edges,))
    edge_ids = structure("edge_ids", (num_edges,))
    recv_node_ids = structure("recv_node_ids", (num_recv,))
    recv_in_degree = structure("recv_in_degree", (num_recv,))
    send_flat = structure("send_idx", (num_send,))
    _check_range(send_flat.numpy(), n, "send_idx", root / fmt.structure_file(rank, "send_idx"))

    blocks, edge_start, recv_start = [], 0, 0
    for s in range(num_parts):
        count = info["block_num_edges"][s]
        ptr = rowptr[s]
        if int(ptr[0]) != 0 or int(ptr[-1]) != count or bool((ptr[1:] < ptr[:-1]).any()):
            raise ValueError(f"partition file '{root / fmt.structure_file(rank, 'rowptr')}': "
                             f"row {s} is not a CSR row pointer of {count} edges")
        block_col = col[edge_start:edge_start + count]
        if s == rank:
            num_src, src_degree = n, in_degree
        else:
            num_src = info["recv_counts"][s]
            src_degree = recv_in_degree[recv_start:recv_start + num_src]
            recv_start += num_src
        _check_range(block_col.numpy(), num_src, f"block {s} columns",
                     root / fmt.structure_file(rank, "col"))
        blocks.append(Block(s, ptr, block_col, num_src, edge_start, src_degree))
        edge_start += count
    send_idx = list(torch.split(send_flat, info["send_counts"]))
    graph = DistGraph(rank, num_parts, offsets, blocks, send_idx, in_degree, node_ids=node_ids)
    if context is not None:
        graph.bind(context)

    def tensors(keys: dict, file_of, rows: int) -> dict[str, Tensor]:
        out = {}
        for key, spec in keys.items():
            shape = (rows, *spec["shape"][1:])
            array = read(file_of(rank, key), shape, spec["storage_dtype"])
            out[key] = from_storage(array, parse_dtype(spec["dtype"]))
        return out

    node = tensors(meta["node_keys"], fmt.node_file, n)
    edge = tensors(meta["edge_keys"], fmt.edge_file, num_edges)
    adj_t = meta.get("adj_t")
    extra = {}
    if adj_t is not None:  # the input was a sparse adj_t: its values ride on the graph
        values = adj_t["values"]
        extra["adj_t"] = graph if values is None else graph.with_values(edge[values])
    return PartitionData(
        rank=rank, num_parts=num_parts, graph=graph, node_ids=node_ids, edge_ids=edge_ids,
        recv_node_ids=recv_node_ids, meta=meta, fingerprint=hashlib.sha256(raw).hexdigest(),
        path=root,
        **{k: node.pop(k) for k in STANDARD_NODE_KEYS if k in node},
        **{k: edge.pop(k) for k in STANDARD_EDGE_KEYS if k in edge},
        node_data=node, edge_data=edge, **extra)
