r"""The scaled-Laplacian family (ChebConv): PyG's ``get_laplacian`` and ChebConv's scaling, done
exactly over a :class:`~pyg_sar.graph.DistGraph`.

``ChebConv.__norm__`` computes, for a Tensor ``edge_index``:

1. ``get_laplacian``: self-loops removed; the degree ``deg = scatter(w, edge_index[0])`` summed
   by **source** (the out-degree; it differs from the in-degree on a directed graph); the
   off-diagonal weights ``-w`` (``normalization=None``), ``-deg_src^{-1/2} w deg_dst^{-1/2}``
   (``'sym'``) or ``-deg_src^{-1} w`` (``'rw'``); one self-loop per node of weight ``deg``
   (``None``) or 1;
2. ``lambda_max = 2 * max(weights)`` when not given (a maximum over the whole graph);
3. ``2 w / lambda_max`` (``inf`` set to 0), and ``-1`` on the self-loops.

Over a DistGraph the stored edges are a node's in-edges, so the out-degree of a node is summed
by the ranks that store its out-edges: each rank sums by source over ``[local; halo]`` rows and
the halo sums go to their owners (:func:`~pyg_sar.core.reduce.sum_to_owners`); the source's
factor comes back from its owner (:func:`~pyg_sar.core.halo.with_halo`); ``lambda_max`` is a
maximum over all ranks (:func:`~pyg_sar.core.reduce.global_max`). All steps are
differentiable in the edge weights, as PyG's. The weights are in the order of the
:func:`~pyg_sar.core.views.self_loop_view` (exactly one self-loop per node).
"""
from __future__ import annotations

from typing import Optional, Union

import torch
from torch import Tensor

from pyg_sar.core.halo import halo_offsets, with_halo
from pyg_sar.core.reduce import global_max, sum_to_owners
from pyg_sar.core.views import self_loop_view, stored_view
from pyg_sar.graph import DistGraph
from pyg_sar.nn.adapters.families import wide_dtype

LambdaMax = Union[None, float, Tensor]


def out_degree(graph: DistGraph, weight: Tensor) -> Tensor:
    """Sum of ``weight`` (stored edge order) over the out-edges of every local node."""
    sources = graph.cached(("stored_sources_ext",),
                           lambda: stored_view(graph).edge_index(halo_offsets(graph))[0])
    n = graph.num_nodes
    ext = weight.new_zeros((n + sum(graph.recv_counts), *weight.shape[1:]))
    ext = ext.index_add(0, sources, weight)
    return ext[:n] + sum_to_owners(graph, ext[n:])


def _stored_loops(graph: DistGraph) -> Tensor:
    def build() -> Tensor:
        local = graph.blocks[graph.rank]
        mask = torch.zeros(graph.num_edges, dtype=torch.bool, device=graph.device)
        mask[local.edge_slice] = local.row == local.col
        return mask
    return graph.cached(("stored_loop_mask",), build)


def _inv(deg: Tensor, power: float) -> Tensor:
    out = deg.pow(power)
    return out.masked_fill(out == float("inf"), 0.0)


def laplacian(graph: DistGraph, weight: Optional[Tensor], normalization: Optional[str],
              dtype: Optional[torch.dtype]) -> Tensor:
    """``get_laplacian`` weights of the graph in self-loop-view order, computed (and returned)
    in at least float32 (:func:`~pyg_sar.nn.adapters.families.wide_dtype`: degrees of bf16 weights
    are summed in float32)."""
    if normalization not in (None, "sym", "rw"):
        raise ValueError(f"laplacian: normalization must be None, 'sym' or 'rw' "
                         f"(got {normalization!r})")
    view = self_loop_view(graph)
    w = weight if weight is not None else torch.ones(graph.num_edges, dtype=dtype,
                                                     device=graph.device)
    # get_laplacian removes the stored self-loops before summing degrees.
    w = w.to(wide_dtype(w.dtype)).masked_fill(_stored_loops(graph), 0.0)
    deg = out_degree(graph, w)
    rows = torch.cat([b.row for b in graph.blocks])
    if normalization is None:
        off, loops = -w, deg
    else:
        factor = _inv(deg, -0.5 if normalization == "sym" else -1.0)
        sources = graph.cached(("stored_sources_ext",),
                               lambda: stored_view(graph).edge_index(halo_offsets(graph))[0])
        src_factor = with_halo(graph, factor.view(-1, 1)).view(-1).index_select(0, sources)
        if normalization == "sym":
            off = -(src_factor * w * factor.index_select(0, rows))
        else:
            off = -(src_factor * w)
        loops = torch.ones(graph.num_nodes, dtype=off.dtype, device=off.device)
    return view.edge_tensor(off, loop_value=loops)


def scaled_laplacian(graph: DistGraph, weight: Optional[Tensor], normalization: Optional[str],
                     lambda_max: LambdaMax, dtype: Optional[torch.dtype]) -> Tensor:
    """ChebConv's edge weights ``2 L / lambda_max - I`` in self-loop-view order (in the
    weights' dtype, or ``dtype`` for an unweighted graph, as PyG's; computed in at least
    float32)."""
    lap = laplacian(graph, weight, normalization, dtype)
    narrow = weight.dtype if weight is not None else dtype
    if lambda_max is None:
        lambda_max = 2.0 * global_max(graph, lap)
    elif not isinstance(lambda_max, Tensor):
        lambda_max = torch.tensor(lambda_max, dtype=dtype, device=graph.device)
    out = (2.0 * lap) / lambda_max
    out = out.masked_fill(out == float("inf"), 0.0)
    is_loop = self_loop_view(graph).stored_index < 0
    out = out - is_loop.to(out.dtype)
    if narrow is not None and wide_dtype(narrow) != narrow:
        out = out.to(narrow)  # bf16 / f16 weights: back to their dtype once, at the end
    return out


def cheb_norm(self, edge_index, num_nodes: Optional[int], edge_weight: Optional[Tensor],
              normalization: Optional[str], lambda_max: LambdaMax = None,
              dtype: Optional[torch.dtype] = None, batch: Optional[Tensor] = None):
    """``ChebConv.__norm__`` (the converted class's): over a DistGraph, the graph itself and
    :func:`scaled_laplacian` weights (its propagate runs over the self-loop view); PyG's own
    code for a Tensor edge_index."""
    if not isinstance(edge_index, DistGraph):
        return self._sar_base.__norm__(self, edge_index, num_nodes, edge_weight, normalization,
                                       lambda_max, dtype, batch)
    graph = edge_index
    if isinstance(lambda_max, Tensor) and lambda_max.numel() > 1:
        raise ValueError(f"pyg_sar: ChebConv got lambda_max with {lambda_max.numel()} values "
                         f"(one per graph of a batch); over a DistGraph give one value (a "
                         f"number or a 1-element tensor) or None")
    if edge_weight is not None and edge_weight.shape[0] != graph.num_edges:
        raise ValueError(f"pyg_sar: ChebConv got edge_weight with {edge_weight.shape[0]} rows, "
                         f"expected {graph.num_edges} (the rank's stored edges, in the order of "
                         f"LocalPartition.edge_attr)")
    if num_nodes is not None and num_nodes != graph.num_nodes:
        raise ValueError(f"pyg_sar: ChebConv got x with {num_nodes} rows, expected "
                         f"{graph.num_nodes} (the rank's local nodes)")
    if edge_weight is None and not isinstance(lambda_max, Tensor):
        # structure only: one computation per graph and options
        key = ("scaled_laplacian", normalization, lambda_max, dtype)
        return graph, graph.cached(key, lambda: scaled_laplacian(
            graph, None, normalization, lambda_max, dtype))
    return graph, scaled_laplacian(graph, edge_weight, normalization, lambda_max, dtype)
