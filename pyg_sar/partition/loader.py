"""``load_partition``: one rank's part of a partition folder as a :class:`LocalPartition`.

Reads ``meta.json`` and the files of ``part{rank}/`` only, each checked against its SHA-256;
nothing is unpickled and no other rank's data is touched.
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import Tensor

from pyg_sar.graph import Block, DistGraph
from pyg_sar.partition import format as fmt
from pyg_sar.partition.storage import from_storage, load_npy, parse_dtype

STANDARD_NODE_KEYS = ("x", "y", "train_mask", "val_mask", "test_mask")
STANDARD_EDGE_KEYS = ("edge_attr", "edge_weight")


@dataclass
class LocalPartition:
    """The part of a partitioned graph that one rank loads.

    Attributes:
        graph: the rank's :class:`~pyg_sar.graph.DistGraph` (pass it where ``edge_index`` goes).
        x, y, train_mask, val_mask, test_mask: node tensors of the local nodes (``None`` when
            the input had none).
        node_ids: ``int64 [num_nodes]`` original ids of the local nodes, in local order.
        edge_attr, edge_weight: attributes of the stored edges, in stored edge order.
        edge_ids: ``int64 [num_edges]`` input position of every stored edge.
        node_data, edge_data: any other node / edge tensors, by name.
        recv_node_ids: original ids of the rows received from other ranks, by source rank.
        meta: the parsed ``meta.json``; fingerprint: its SHA-256 (identifies the partition).
    """

    rank: int
    num_parts: int
    graph: DistGraph
    node_ids: Tensor
    edge_ids: Tensor
    recv_node_ids: Tensor
    meta: dict
    fingerprint: str
    path: Path
    x: Tensor | None = None
    y: Tensor | None = None
    train_mask: Tensor | None = None
    val_mask: Tensor | None = None
    test_mask: Tensor | None = None
    edge_attr: Tensor | None = None
    edge_weight: Tensor | None = None
    node_data: dict[str, Tensor] = field(default_factory=dict)
    edge_data: dict[str, Tensor] = field(default_factory=dict)

    @property
    def num_nodes(self) -> int:
        return self.graph.num_nodes

    @property
    def num_edges(self) -> int:
        return self.graph.num_edges

    @property
    def num_features(self) -> int:
        return int(self.meta.get("num_features") or 0)

    @property
    def num_classes(self) -> int | None:
        return self.meta.get("num_classes")

    def global_edge_index(self) -> Tensor:
        """The rank's stored edges as ``int64 [2, num_edges]`` in ORIGINAL node ids.

        Same order as :attr:`edge_attr`; row 0 is the source, row 1 the destination.
        """
        graph = self.graph
        recv_start = 0
        parts = []
        for block in graph.blocks:
            dst = self.node_ids[block.row]
            if block.src_rank == self.rank:
                src = self.node_ids[block.col]
            else:
                src = self.recv_node_ids[recv_start + block.col]
                recv_start += block.num_src
            parts.append(torch.stack([src, dst]))
        if not parts:
            return torch.zeros(2, 0, dtype=torch.long)
        return torch.cat(parts, dim=1)


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


class _Reader:
    """Reads meta-listed files of one partition, checking checksum, dtype and shape."""

    def __init__(self, root: Path, meta: dict) -> None:
        self.root = root
        self.files = meta["files"]

    def __call__(self, rel: str, shape: tuple, dtype: str | np.dtype = "int64"
                 ) -> np.ndarray:
        digest = self.files.get(rel)
        if digest is None:
            raise fmt.MetaError(f"malformed partition metadata '{self.root / fmt.META_FILE}': "
                                f"no checksum listed for '{rel}'")
        path = self.root / rel
        if not path.is_file():
            raise FileNotFoundError(f"partition file '{path}' is missing")
        array = load_npy(path, digest)
        if array.dtype != np.dtype(dtype) or array.shape != tuple(shape):
            raise ValueError(f"partition file '{path}' holds {array.dtype} {list(array.shape)}, "
                             f"expected {np.dtype(dtype)} {list(shape)}")
        return array


def _check_range(array: np.ndarray, high: int, what: str, path: Path) -> None:
    if array.size and (int(array.min()) < 0 or int(array.max()) >= high):
        raise ValueError(f"partition file '{path}': {what} has values outside [0, {high})")


def load_node_map(path: str | Path) -> Tensor:
    """``int64 [num_nodes]``: the new (partitioned) id of every original node."""
    root = Path(path)
    meta, _ = read_meta(root)
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
                   context: Any = None) -> LocalPartition:
    """Load rank ``rank``'s part of the partition folder ``path``.

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
    return LocalPartition(
        rank=rank, num_parts=num_parts, graph=graph, node_ids=node_ids, edge_ids=edge_ids,
        recv_node_ids=recv_node_ids, meta=meta, fingerprint=hashlib.sha256(raw).hexdigest(),
        path=root,
        **{k: node.pop(k) for k in STANDARD_NODE_KEYS if k in node},
        **{k: edge.pop(k) for k in STANDARD_EDGE_KEYS if k in edge},
        node_data=node, edge_data=edge)
