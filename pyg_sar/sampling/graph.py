r"""The adjacency the samplers read: CSR over destinations, columns in ORIGINAL node ids.

Row ``i`` lists the in-neighbours (sources of edges into the row's node) in ascending original
id, with the input position of every edge (``e_id``). Columns are always original ids, so a
row reads the same on one process and on any rank of any partition: the samplers' picks never
depend on the partitioning.

* :meth:`SamplingGraph.from_edge_index`: the whole graph (row ``i`` is node ``i``);
* :meth:`SamplingGraph.from_partition`: the rows one rank owns (its local nodes, in local
  order), built from a :class:`~pyg_sar.partition.LocalPartition`;
* :meth:`SamplingGraph.from_partition_folder`: the whole graph assembled from every part of a
  partition folder (``--replicate-graph``).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

import torch
from torch import Tensor


def hetero_message(what: str) -> str:
    """Why the samplers refuse a heterogeneous graph or partition, and what to use instead."""
    return (f"{what} is heterogeneous (node and edge types); pyg_sar's neighbour samplers "
            f"(BulkNeighborLoader, BulkLadiesLoader) sample one homogeneous graph. Train it "
            f"full-batch instead: pyg_sar.load_partition gives a HeteroPartition for to_hetero "
            f"/ HeteroConv models (part.x_dict, part.edge_index_dict) or RGCNConv / RGATConv / "
            f"HEATConv on part.to_homogeneous(); see examples/hetero_rgcn.py")


@dataclass
class SamplingGraph:
    """CSR rows of the adjacency, columns in original ids.

    Attributes:
        rowptr: ``int64 [num_rows + 1]``.
        col: ``int64 [E]`` original id of each in-neighbour, ascending within a row.
        e_id: ``int64 [E]`` input position of each edge (into the original ``edge_index``).
        num_nodes: number of nodes of the whole graph (the column space).
        row_ids: original id of each row; ``None`` when row ``i`` is node ``i``.
    """

    rowptr: Tensor
    col: Tensor
    e_id: Tensor
    num_nodes: int
    row_ids: Optional[Tensor] = None
    _values: Optional[Tensor] = field(default=None, repr=False)

    @property
    def device(self) -> torch.device:
        """Where the rows live."""
        return self.rowptr.device

    def to(self, device: torch.device | str) -> SamplingGraph:
        """A copy with every tensor on ``device`` (``self`` when already there); the native
        bulk-sampling kernels run where the graph and the seeds are (CPU or CUDA)."""
        device = torch.device(device)
        if self.rowptr.device == device:
            return self

        def move(t: Optional[Tensor]) -> Optional[Tensor]:
            return None if t is None else t.to(device)

        return SamplingGraph(move(self.rowptr), move(self.col), move(self.e_id), self.num_nodes,
                             move(self.row_ids), move(self._values))

    @property
    def num_rows(self) -> int:
        return self.rowptr.numel() - 1

    @property
    def num_edges(self) -> int:
        return self.col.numel()

    @property
    def values(self) -> Tensor:
        """``float64 [E]``: the row-normalised adjacency, ``1 / in-degree`` of the row (whose
        squares are LADIES' importance weights); computed once."""
        if self._values is None:
            deg = self.rowptr.diff()
            self._values = torch.repeat_interleave(
                1.0 / deg.clamp(min=1).to(torch.float64), deg)
        return self._values

    @staticmethod
    def _csr(dst: Tensor, src: Tensor, e_id: Tensor, num_rows: int) -> tuple[Tensor, ...]:
        order = torch.argsort(dst * (int(src.max()) + 1 if src.numel() else 1) + src)
        counts = torch.bincount(dst, minlength=num_rows)
        rowptr = torch.cat([counts.new_zeros(1), torch.cumsum(counts, 0)])
        return rowptr, src[order].contiguous(), e_id[order].contiguous()

    @classmethod
    def from_edge_index(cls, edge_index: Tensor, num_nodes: int) -> SamplingGraph:
        """The whole graph of a PyG ``edge_index`` (row 0 source, row 1 destination)."""
        if edge_index.dim() != 2 or edge_index.size(0) != 2:
            raise ValueError(f"SamplingGraph: edge_index must have shape [2, E] "
                             f"(got {list(edge_index.shape)})")
        edge_index = edge_index.to(torch.int64)
        if edge_index.numel() and (int(edge_index.min()) < 0 or
                                   int(edge_index.max()) >= num_nodes):
            raise ValueError(f"SamplingGraph: edge_index values must lie in [0, {num_nodes}) "
                             f"(got min {int(edge_index.min())}, max {int(edge_index.max())})")
        e_id = torch.arange(edge_index.size(1))
        rowptr, col, e_id = cls._csr(edge_index[1], edge_index[0], e_id, num_nodes)
        return cls(rowptr, col, e_id, int(num_nodes))

    @classmethod
    def from_partition(cls, part) -> SamplingGraph:
        """The rows (local nodes, in local order) of one rank's ``LocalPartition``."""
        edges = part.global_edge_index()
        local_of = torch.full((part.graph.num_global_nodes,), -1, dtype=torch.int64)
        local_of[part.node_ids] = torch.arange(part.num_nodes)
        dst = local_of[edges[1]]
        rowptr, col, e_id = cls._csr(dst, edges[0], part.edge_ids, part.num_nodes)
        return cls(rowptr, col, e_id, part.graph.num_global_nodes, row_ids=part.node_ids)

    @classmethod
    def from_partition_folder(cls, path: str | Path) -> SamplingGraph:
        """The whole graph, read from every part of a partition folder.

        Raises:
            ValueError: the folder holds a heterogeneous partition (written from a
                ``HeteroData``): the samplers sample one homogeneous graph, and the typed
                homogeneous view would lose what a typed model needs.
        """
        from pyg_sar.partition import load_partition, read_meta
        meta, _ = read_meta(path)
        if "hetero" in meta:
            raise ValueError(hetero_message(f"the partition at '{path}'"))
        num_parts = meta["num_parts"]
        srcs, dsts, eids = [], [], []
        for r in range(num_parts):
            part = load_partition(path, r, world_size=num_parts)
            edges = part.global_edge_index()
            srcs.append(edges[0])
            dsts.append(edges[1])
            eids.append(part.edge_ids)
        n = int(meta["num_nodes"])
        rowptr, col, e_id = cls._csr(torch.cat(dsts), torch.cat(srcs), torch.cat(eids), n)
        return cls(rowptr, col, e_id, n)
