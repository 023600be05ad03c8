r"""Where the rows of ``Q @ A`` are computed: :class:`LocalRows` reads a :class:`SamplingGraph`
held by this process. (:class:`pyg_sar.sampling.distributed.DistRows` sends each row to the
rank that owns it and answers the same three questions.)

A row source answers, for frontier rows named by their original node ids:

* :meth:`uniform`: GraphSAGE picks per row, ``(ptr, cols, e_ids)``;
* :meth:`ladies`: LADIES' ``Q @ (A * A)`` with one row per minibatch, ``(ptr, cand, weight)``;
* :meth:`extract`: the edges into the rows from their minibatch's sampled set,
  ``(ptr, cols, e_ids)``.
"""
from __future__ import annotations

from typing import Protocol

from torch import Tensor

from pyg_sar.ops import sampling as ops
from pyg_sar.sampling.graph import SamplingGraph


class RowSource(Protocol):
    num_nodes: int

    def uniform(self, rows: Tensor, row_keys: Tensor, fanout: int
                ) -> tuple[Tensor, Tensor, Tensor]: ...

    def ladies(self, rows: Tensor, batch_ptr: Tensor) -> tuple[Tensor, Tensor, Tensor]: ...

    def extract(self, rows: Tensor, row_batch: Tensor, keep_ptr: Tensor, keep_cols: Tensor
                ) -> tuple[Tensor, Tensor, Tensor]: ...


class LocalRows:
    """Rows of a :class:`SamplingGraph` in this process.

    Args:
        graph: the adjacency rows.
        backend: ``"auto"`` (native kernels when built), ``"native"`` or ``"reference"``.
        row_index: maps original node ids to row positions; ``None`` when row ``i`` is node
            ``i`` (the whole graph).
    """

    def __init__(self, graph: SamplingGraph, backend: str = "auto",
                 row_index: Tensor | None = None) -> None:
        self.graph = graph
        self.backend = backend
        self.num_nodes = graph.num_nodes
        self.row_index = row_index

    def _rows(self, rows: Tensor) -> Tensor:
        return rows if self.row_index is None else self.row_index[rows]

    def uniform(self, rows: Tensor, row_keys: Tensor, fanout: int
                ) -> tuple[Tensor, Tensor, Tensor]:
        g = self.graph
        ptr, pos = ops.sample_uniform(g.rowptr, self._rows(rows), row_keys, fanout,
                                      backend=self.backend)
        return ptr, g.col[pos], g.e_id[pos]

    def ladies(self, rows: Tensor, batch_ptr: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        g = self.graph
        return ops.ladies_weights(g.rowptr, g.col, g.values, self._rows(rows), batch_ptr,
                                  g.num_nodes, backend=self.backend)

    def extract(self, rows: Tensor, row_batch: Tensor, keep_ptr: Tensor, keep_cols: Tensor
                ) -> tuple[Tensor, Tensor, Tensor]:
        g = self.graph
        ptr, pos = ops.extract_columns(g.rowptr, g.col, self._rows(rows), row_batch, keep_ptr,
                                       keep_cols, g.num_nodes, backend=self.backend)
        return ptr, g.col[pos], g.e_id[pos]
