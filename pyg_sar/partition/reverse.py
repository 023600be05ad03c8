r"""The reversed graph (every edge ``u -> v`` becomes ``v -> u``), partitioned like the original.

PyG reverses a graph with ``edge_index.flip([0])`` (``DirGNNConv`` runs a second convolution
over it). A :class:`~pyg_sar.graph.DistGraph` stores every edge on the rank that owns its
destination, so the reversed graph stores every edge on the rank that owns its *source* in the
original graph. Each rank knows its in-edges and its send lists, which is enough to build it
with one exchange of the cut edges:

* block ``(r, r)``: the local block with its two ends swapped;
* for ``s != r``, rank ``r`` hands the edges of its block ``(r, s)`` to ``s`` as pairs (local
  destination on ``r``, position in ``s``'s send list to ``r``); ``s`` maps the position to its
  own node (the reversed destination) and the destinations on ``r`` become its reversed sources
  from ``r``. Both sides order those source rows the same way (ascending local id on ``r``), so
  ``r``'s reversed send list to ``s`` needs no further message.

The in-degree of the reversed graph is the original out-degree; the in-degree of every reversed
source row comes from its owner in a second (N x 1) exchange. Node ids, ``node_ids`` and the
communication context are those of the original graph.

Edge tensors of the original graph (``LocalPartition.edge_attr``) are in the original stored
order on the destination's rank; they do not describe the reversed graph's edges, which live on
other ranks. PyG's ``DirGNNConv`` passes none.
"""
from pyg_sar.graph import reversed_graph

__all__ = ["reversed_graph"]
