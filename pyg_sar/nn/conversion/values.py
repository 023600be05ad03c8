"""Graphs with edge values (``data.adj_t``): which converted layers use the values, and how.

PyG layers given a sparse ``adj_t`` holding values (``T.ToSparseTensor()`` after
``T.GCNNorm()``, as in PyG's ``gcn2_cora.py``) either weight their messages by the values
(their ``message_and_aggregate`` is ``spmm(adj_t, x)``, or their ``gcn_norm`` takes the values
as the edge weights) or drop them. A :class:`~pyg_sar.graph.DistGraph` carrying values
(:meth:`~pyg_sar.graph.DistGraph.with_values`) stands for such an ``adj_t``: for the layers
listed in :data:`WEIGHTED` the values become the layer's ``edge_weight`` (in stored edge
order, the path every edge tensor takes through the engine), which is what PyG computes
with ``adj_t``. Every other layer, and every option where PyG would treat the values
differently from an ``edge_weight`` (``gcn_norm`` adding self-loops, which for a sparse
``adj_t`` depends on its format: torch_sparse replaces the diagonal), is refused with an error
naming the layer and the fix: a graph with values is never run silently unweighted.
"""
from __future__ import annotations

from typing import Optional, Union

import torch_geometric.nn.conv as C
from torch_geometric.nn.conv import MessagePassing
from torch_geometric.nn.models import LabelPropagation

from pyg_sar.graph import DistGraph

# class -> (normalize option, add-self-loops option): an attribute name or a constant. With
# normalisation, PyG's gcn_norm of a sparse adj_t takes its values as the edge weights; without
# self-loops that is the gcn_norm of an edge_index with edge_weight=values (exact here).
_Option = Union[str, bool]
_GCN_NORM: dict[type, tuple[_Option, _Option]] = {
    C.GCNConv: ("normalize", "add_self_loops"),
    C.GCN2Conv: ("normalize", "add_self_loops"),
    C.APPNP: ("normalize", "add_self_loops"),
    C.SGConv: (True, "add_self_loops"),
    C.SSGConv: (True, "add_self_loops"),
    C.MixHopConv: (True, "add_self_loops"),
    C.TAGConv: ("normalize", False),
    C.LGConv: ("normalize", False),
}
# Layers whose message is ``edge_weight * x_j`` and whose fused path is ``spmm(adj_t, x)``.
_PLAIN = (C.GraphConv, C.GatedGraphConv, C.SimpleConv)
WEIGHTED = tuple(_GCN_NORM) + _PLAIN
WEIGHT_ARG = "edge_weight"

_USE = ("GCNConv/GCN2Conv/APPNP(normalize=False), TAGConv, LGConv, SGConv/SSGConv/MixHopConv"
        "(add_self_loops=False), GraphConv, GatedGraphConv or SimpleConv")


def _base(layer: MessagePassing) -> type:
    """The verified PyG class of a (converted) layer, or its own class."""
    from pyg_sar.nn.conversion.registry import verified_adapter
    cls = getattr(type(layer), "_sar_base", type(layer))
    base, _, _ = verified_adapter(cls)
    return base if base is not None else cls


def _name(layer: MessagePassing) -> str:
    cls = getattr(type(layer), "_sar_base", type(layer)).__name__
    name = getattr(layer, "_sar_name", None)
    return f"layer '{name}' ({cls})" if name and name != cls else cls


def _option(layer: MessagePassing, value: _Option) -> bool:
    return bool(getattr(layer, value) if isinstance(value, str) else value)


def refusal(layer: MessagePassing, graph: Optional[DistGraph] = None) -> Optional[str]:
    """Why ``layer`` cannot run over ``graph``, a graph with edge values, or ``None``."""
    base = _base(layer)
    name = _name(layer)
    if base is LabelPropagation:
        # PyG's LabelPropagation weights by a torch_sparse SparseTensor's values as they are,
        # but gcn_norm-alises a torch.sparse adj_t's values: only a graph made by adj_t
        # arithmetic (which only a SparseTensor supports) says which one the user means.
        if graph is not None and graph.values_from_arithmetic:
            return None
        return (f"{name} treats a sparse adj_t's values by its format (a torch_sparse "
                f"SparseTensor's as they are, a torch.sparse tensor's normalised with "
                f"gcn_norm), which data.adj_t no longer tells; pass data.edge_index with "
                f"edge_weight=... to use weights as they are, data.edge_index alone for "
                f"gcn_norm's, or a graph scaled by its degrees (d.view(-1, 1) * adj_t)")
    if base in _GCN_NORM:
        normalize, loops = _GCN_NORM[base]
        if _option(layer, normalize) and _option(layer, loops):
            opts = ("add_self_loops=False" if isinstance(normalize, bool)
                    else "normalize=False")
            return (f"{name} would re-normalise the edge values of the graph (data.adj_t) "
                    f"with gcn_norm, which adds self-loops to a sparse adj_t in a way that "
                    f"depends on its sparse format (and values that T.GCNNorm() already "
                    f"normalised would be normalised twice); "
                    f"pass {opts} to use the values as they are, or call the layer with "
                    f"data.edge_index and edge_weight=data.edge_weight to normalise the "
                    f"weights as PyG does for an edge_index")
        return None
    if base in _PLAIN:
        if base is C.SimpleConv and layer.combine_root == "self_loop":
            return (f"{name}(combine_root='self_loop') adds self-loops to a sparse adj_t in a "
                    f"way that depends on its sparse format; call it with data.edge_index and "
                    f"edge_weight=data.edge_weight instead")
        return None
    return (f"{name} would ignore the edge values of the graph it was given (data.adj_t, a "
            f"graph with values): PyG's {base.__name__} does not weight its messages by a "
            f"sparse adjacency's values, so the graph would be used unweighted; pass "
            f"data.edge_index (the same graph without values) to this layer, or use a layer "
            f"that weights messages by the values: {_USE}")


def check_layer(layer: MessagePassing, graph: Optional[DistGraph] = None) -> None:
    """Raise a ``ValueError`` if ``layer`` would not use ``graph``'s edge values as PyG
    does."""
    reason = refusal(layer, graph)
    if reason is not None:
        raise ValueError(f"pyg_sar: {reason}")


def with_edge_values(layer: MessagePassing, graph: DistGraph, kwargs: dict) -> dict:
    """``propagate``'s arguments for a graph with edge values: the values as the layer's
    ``edge_weight`` (stored edge order). Raises ``ValueError`` for a layer that would ignore
    them, or when an ``edge_weight`` is passed as well (PyG would ignore that one)."""
    check_layer(layer, graph)
    given = kwargs.get(WEIGHT_ARG)
    if given is not None and given is not graph.edge_values:
        raise ValueError(
            f"pyg_sar: {_name(layer)} got both a graph with edge values (data.adj_t) and "
            f"{WEIGHT_ARG}; PyG would use adj_t's values and ignore {WEIGHT_ARG}. Pass one: "
            f"data.adj_t alone, or data.edge_index with {WEIGHT_ARG}")
    out = dict(kwargs)
    out[WEIGHT_ARG] = graph.edge_values
    return out
