r"""The per-rank view of a partitioned graph that SAR layers receive instead of ``edge_index``.

Rank ``r`` owns a contiguous range of new node ids ``[node_offsets[r], node_offsets[r + 1])``.
Every edge is stored on the rank that owns its destination, so all in-edges of a local node are
local. The edges of rank ``r`` that come from rank ``s`` form **block (r, s)**: a CSR matrix by
local destination whose columns are positions in the list of ``s``'s nodes that ``r`` needs (the
``recv`` list, ordered exactly as ``s``'s ``send_idx[r]``). For the local block (``s == r``) the
columns are local node ids.

The rank's stored edge order is the blocks concatenated by source rank, each block sorted by
(destination, source): block ``s`` occupies ``[block.edge_start, block.edge_start +
block.num_edges)``. Edge attributes (``PartitionData.edge_attr``) follow that order.

**Bipartite graphs** (one edge type of a heterogeneous graph, ``src_node_offsets`` given): the
sources belong to another node set than the destinations (its own per-rank ranges,
``src_node_offsets``), while ``node_offsets`` stays the destinations'. The local block's columns
are then local ids of the source set (``num_src_nodes`` rows), remote blocks' columns positions
in the recv list from rank ``s`` (ordered as ``s``'s ``send_idx[r]``, local ids of the source set
on ``s``); ``in_degree`` counts a destination's in-edges of this edge type. A converted layer is
called in bipartite form, ``conv((x_src, x_dst), graph)`` with ``num_src_nodes`` and
``num_nodes`` rows; its output has one row per destination.

A DistGraph may carry one value per stored edge (:meth:`DistGraph.with_values`): the
partitioned form of a sparse adjacency with values (PyG's ``adj_t`` after ``T.ToSparseTensor()``,
e.g. holding GCN-normalised weights). Layers that weight their messages by an edge weight use
the values as PyG does with ``adj_t``; any other layer refuses such a graph
(:mod:`pyg_sar.nn.conversion.values`).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Optional

import torch
from torch import Tensor

if TYPE_CHECKING:  # pragma: no cover
    from pyg_sar.distributed.context import DistContext


@dataclass
class Block:
    """Edges from rank ``src_rank`` into this rank's nodes, CSR by local destination.

    Attributes:
        src_rank: the rank that owns the source nodes of these edges.
        rowptr: ``int64 [num_dst + 1]`` CSR row pointer over local destinations.
        col: ``int64 [num_edges]`` position of each edge's source in the recv list of
            ``src_rank`` (a local node id when ``src_rank`` is this rank).
        num_src: number of source rows the block refers to (length of the recv list; the
            number of local nodes for the local block).
        edge_start: offset of this block's first edge in the rank's stored edge order.
        src_in_degree: ``int64 [num_src]`` global in-degree of each source row (written at
            partition time, so source-degree normalisations such as GCN's are exact);
            ``None`` in a bipartite graph (source-degree normalisations are refused there) and
            in a masked graph (``graph[:, mask]``), whose sources' masked degrees are
            known only to their owners.
    """

    src_rank: int
    rowptr: Tensor
    col: Tensor
    num_src: int
    edge_start: int
    src_in_degree: Optional[Tensor]
    _row: Optional[Tensor] = field(default=None, repr=False)

    @property
    def num_edges(self) -> int:
        return int(self.col.numel())

    @property
    def num_dst(self) -> int:
        return int(self.rowptr.numel()) - 1

    @property
    def edge_slice(self) -> slice:
        return slice(self.edge_start, self.edge_start + self.num_edges)

    @property
    def row(self) -> Tensor:
        """Local destination of every edge (``int64 [num_edges]``), computed once."""
        if self._row is None:
            counts = self.rowptr[1:] - self.rowptr[:-1]
            self._row = torch.repeat_interleave(
                torch.arange(self.num_dst, device=self.rowptr.device), counts)
        return self._row

    def to(self, device: torch.device) -> Block:
        src_in_degree = None if self.src_in_degree is None else self.src_in_degree.to(device)
        return Block(self.src_rank, self.rowptr.to(device), self.col.to(device), self.num_src,
                     self.edge_start, src_in_degree)


class DistGraph:
    r"""What a converted PyG layer receives where it expects ``edge_index``.

    Args:
        rank: this process's rank.
        world_size: number of ranks (= number of parts).
        node_offsets: ``P + 1`` boundaries of the contiguous new-id ranges owned by each rank.
        blocks: the ``P`` blocks of this rank, indexed by source rank (empty blocks included).
        send_idx: for every rank ``q``, the local ids of this rank's nodes that ``q`` needs, in
            the order ``q`` stores them as its recv list (``send_idx[rank]`` is empty).
        in_degree: ``int64 [num_nodes]`` global in-degree of every local node.
        context: the communication context; resolved from :func:`pyg_sar.init` when ``None``.
        node_ids: ``int64 [num_nodes]`` original (pre-partition) id of every local node, when
            known; it keys randomness that must not depend on the partitioning (attention
            dropout). ``None``: the new ids ``node_offsets[rank] + local id`` are used.
        edge_values: ``[num_edges]`` value of every stored edge (stored edge order), or
            ``None``; see :meth:`with_values`.
        src_node_offsets: ``P + 1`` boundaries of the per-rank ranges of the SOURCE node set,
            for one edge type of a heterogeneous graph; ``None`` (the default): the sources are
            the destinations' node set (``node_offsets``).
        bipartite: whether sources and destinations are different node sets (node types).
            ``None``: inferred, true when ``src_node_offsets`` is given and differs from
            ``node_offsets``. Pass ``True`` for an edge type between two different node types
            whose ranges happen to coincide: node ``i`` of the source type is then not node
            ``i`` of the destination type (no self-loops, no shared degrees).
    """

    # True for a graph whose values came from adj_t arithmetic (``d.view(-1, 1) * adj_t``),
    # which only a torch_sparse SparseTensor supports: its values mean what a SparseTensor's do.
    values_from_arithmetic: bool = False

    def __init__(self, rank: int, world_size: int, node_offsets: list[int], blocks: list[Block],
                 send_idx: list[Tensor], in_degree: Tensor,
                 context: Optional[DistContext] = None,
                 node_ids: Optional[Tensor] = None,
                 edge_values: Optional[Tensor] = None,
                 src_node_offsets: Optional[list[int]] = None,
                 bipartite: Optional[bool] = None) -> None:
        if len(blocks) != world_size or len(send_idx) != world_size:
            raise ValueError(f"DistGraph: expected {world_size} blocks and send lists "
                             f"(got {len(blocks)} and {len(send_idx)})")
        if len(node_offsets) != world_size + 1:
            raise ValueError(f"DistGraph: expected {world_size + 1} node offsets "
                             f"(got {len(node_offsets)})")
        if src_node_offsets is not None and len(src_node_offsets) != world_size + 1:
            raise ValueError(f"DistGraph: expected {world_size + 1} source node offsets "
                             f"(got {len(src_node_offsets)})")
        self.rank = rank
        self.world_size = world_size
        self.node_offsets = [int(o) for o in node_offsets]
        self.src_node_offsets = (None if src_node_offsets is None
                                 else [int(o) for o in src_node_offsets])
        if bipartite is None:
            bipartite = (self.src_node_offsets is not None
                         and self.src_node_offsets != self.node_offsets)
        elif not bipartite and self.src_node_offsets not in (None, self.node_offsets):
            raise ValueError("DistGraph: bipartite=False but src_node_offsets differ from "
                             "node_offsets (sources and destinations must then be one node set)")
        self._bipartite = bool(bipartite)
        local = blocks[rank]
        if local.num_src != self.num_src_nodes:
            raise ValueError(f"DistGraph: the local block of rank {rank} refers to "
                             f"{local.num_src} source rows, but the rank owns "
                             f"{self.num_src_nodes} nodes of the source node set")
        self.blocks = blocks
        self.send_idx = send_idx
        self.in_degree = in_degree
        if node_ids is not None and tuple(node_ids.shape) != (self.num_nodes_of(rank),):
            raise ValueError(f"DistGraph: node_ids must have shape [{self.num_nodes_of(rank)}] "
                             f"(got {list(node_ids.shape)})")
        self.node_ids = node_ids
        self.edge_values = self._checked_values(edge_values)
        self._context = context
        self._cache: dict = {}

    def _checked_values(self, values: Optional[Tensor]) -> Optional[Tensor]:
        if values is None:
            return None
        if not isinstance(values, Tensor):
            raise TypeError(f"DistGraph: edge values must be a tensor (got "
                            f"{type(values).__name__})")
        if tuple(values.shape) != (self.num_edges,):
            raise ValueError(f"DistGraph: edge values must have shape [{self.num_edges}] (one "
                             f"per stored edge, in stored edge order), got {list(values.shape)}")
        return values

    def with_values(self, values: Optional[Tensor]) -> DistGraph:
        """This graph carrying ``values`` (one per stored edge, stored edge order; ``None``:
        none), sharing everything else with it (blocks, exchange lists, context, cached
        layouts).

        Passed where PyG expects a sparse ``adj_t`` with values, the graph makes layers that
        weight their messages by an edge weight use ``values`` as PyG uses ``adj_t``'s values
        (``adj_t[i, j]`` is the weight of the edge ``j -> i``); layers that would ignore them
        raise an error (:mod:`pyg_sar.nn.conversion.values`).
        """
        graph = DistGraph(self.rank, self.world_size, self.node_offsets, self.blocks,
                          self.send_idx, self.in_degree, self._context, self.node_ids, values,
                          **self._src_kwargs())
        graph._cache = self._cache  # same structure: halo layouts, views, norms are shared
        return graph

    # ------------------------------------------------------------------ sizes
    def num_nodes_of(self, rank: int) -> int:
        """Number of nodes rank ``rank`` owns."""
        return self.node_offsets[rank + 1] - self.node_offsets[rank]

    @property
    def num_nodes(self) -> int:
        """Number of nodes this rank owns."""
        return self.num_nodes_of(self.rank)

    @property
    def num_global_nodes(self) -> int:
        return self.node_offsets[-1]

    @property
    def is_bipartite(self) -> bool:
        """Whether sources and destinations are different node sets (an edge type between
        two node types); see the class docstring."""
        return self._bipartite

    @property
    def source_offsets(self) -> list[int]:
        """The ``P + 1`` boundaries of the source node set's per-rank ranges
        (``node_offsets`` unless the graph has its own ``src_node_offsets``)."""
        return self.node_offsets if self.src_node_offsets is None else self.src_node_offsets

    def num_src_nodes_of(self, rank: int) -> int:
        """Number of source-set nodes rank ``rank`` owns."""
        offsets = self.source_offsets
        return offsets[rank + 1] - offsets[rank]

    @property
    def num_src_nodes(self) -> int:
        """Rows of the source node set on this rank (``num_nodes`` for a homogeneous graph):
        the rows of ``x_src`` in ``conv((x_src, x_dst), graph)``."""
        return self.num_src_nodes_of(self.rank)

    @property
    def num_global_src_nodes(self) -> int:
        """Number of nodes of the source node set over all ranks."""
        return self.source_offsets[-1]

    def _src_kwargs(self) -> dict:
        return {"src_node_offsets": self.src_node_offsets, "bipartite": self._bipartite}

    @property
    def num_edges(self) -> int:
        """Number of edges stored on this rank (all in-edges of its nodes)."""
        return sum(b.num_edges for b in self.blocks)

    @property
    def device(self) -> torch.device:
        return self.in_degree.device

    @property
    def recv_counts(self) -> list[int]:
        """Rows received from every rank (0 for this rank itself)."""
        return [0 if s == self.rank else b.num_src for s, b in enumerate(self.blocks)]

    @property
    def send_counts(self) -> list[int]:
        return [int(i.numel()) for i in self.send_idx]

    # ------------------------------------------------------------ context
    @property
    def context(self) -> DistContext:
        """The communication context (the one from :func:`pyg_sar.init` unless bound)."""
        if self._context is None:  # unbound: the API's edge, init()'s context
            from pyg_sar.distributed.context import resolve_context
            ctx = resolve_context(create=self.world_size == 1)
            if ctx is None:
                raise RuntimeError(
                    f"DistGraph of rank {self.rank} (world size {self.world_size}) has no "
                    f"communication context: call pyg_sar.init() first, or bind one")
            self._context = ctx
        if self._context.world_size != self.world_size or self._context.rank != self.rank:
            raise RuntimeError(
                f"DistGraph was partitioned for rank {self.rank} of {self.world_size}, but the "
                f"process is rank {self._context.rank} of {self._context.world_size}")
        return self._context

    def bind(self, context: DistContext) -> DistGraph:
        """Use ``context`` for this graph's communication; returns ``self``."""
        self._context = context
        return self

    # ------------------------------------------------------------- helpers
    def cached(self, key, build):
        """Memoise a derived structure (halo layout, self-loop blocks, ...) on this graph."""
        if key not in self._cache:
            self._cache[key] = build()
        return self._cache[key]

    def cached_for(self, owner: object, key: tuple, build):
        """Memoise ``build()`` for the object ``owner`` (a view of this graph, ...), keyed by
        its identity. The entry holds ``owner``, so its ``id`` cannot be reused by another
        object while the entry lives (a key of a bare ``id`` could return a dead object's
        entry for a new one)."""
        full = (*key, id(owner))
        hit = self._cache.get(full)
        if hit is None or hit[0] is not owner:
            hit = self._cache[full] = (owner, build())
        return hit[1]

    def flip(self, dims) -> DistGraph:
        """``edge_index.flip([0])``: the reversed graph (every edge ``u -> v`` becomes
        ``v -> u``), partitioned like this one (:func:`reversed_graph`).

        Built once per graph with one exchange of the cut edges and cached; collective, so every
        rank must call it. Edge tensors of this graph do not describe the reversed edges.
        """
        if self.is_bipartite:
            raise TypeError("DistGraph.flip: this graph is bipartite (one edge type between two "
                            "node types); its reverse is another edge type, stored by the "
                            "owners of the source type: partition it as its own edge type "
                            "(e.g. T.ToUndirected() on the HeteroData adds the reverse types)")
        if self.edge_values is not None:
            raise TypeError("DistGraph.flip: this graph carries edge values (data.adj_t), "
                            "which describe its edges, not the reversed ones; flip "
                            "data.edge_index (the graph without values) instead")
        axes = [dims] if isinstance(dims, int) else list(dims)
        if axes not in ([0], [-2]):
            raise ValueError(f"DistGraph.flip({dims!r}): only flip([0]) (reversing every edge) "
                             f"is supported; flipping the edge order has no meaning for a "
                             f"partitioned graph")
        return reversed_graph(self)

    def to(self, device, non_blocking: bool = False, **kwargs) -> DistGraph:
        """This graph on ``device``: ``self`` when already there, else a moved copy (same
        context; edge values moved too). Other arguments of ``Tensor.to`` (a dtype) do not
        apply to a graph's index structure and are ignored, as PyG's ``Data.to`` passes them
        on."""
        if isinstance(device, (torch.dtype, type(None))):
            return self
        device = torch.device(device)
        if _same_device(self.device, device):
            return self
        values = None if self.edge_values is None else self.edge_values.to(device)
        moved = DistGraph(self.rank, self.world_size, self.node_offsets,
                          [b.to(device) for b in self.blocks],
                          [i.to(device) for i in self.send_idx], self.in_degree.to(device),
                          self._context,
                          None if self.node_ids is None else self.node_ids.to(device), values,
                          **self._src_kwargs())
        moved.values_from_arithmetic = self.values_from_arithmetic
        return moved

    def cpu(self) -> DistGraph:
        return self.to("cpu")

    def __getstate__(self) -> dict:
        """Pickled without its communication context (bound again on first use, to that of
        :func:`pyg_sar.init`) and without cached layouts, so ``torch.save`` of a
        :class:`~pyg_sar.partition.PartitionData` works."""
        state = dict(self.__dict__)
        state["_context"], state["_cache"] = None, {}
        return state

    def __setstate__(self, state: dict) -> None:
        state.setdefault("src_node_offsets", None)  # pickled before bipartite graphs existed
        state.setdefault("_bipartite", False)
        self.__dict__.update(state)

    def __deepcopy__(self, memo: dict) -> DistGraph:
        """A copy of the tensors sharing the communication context (which cannot be copied);
        what ``copy.deepcopy`` of a PyG ``Data`` holding the graph (``data.clone()``) does."""
        import copy
        clone = copy.copy(self)
        memo[id(self)] = clone
        for key, value in self.__dict__.items():
            if key not in ("_context", "_cache"):
                setattr(clone, key, copy.deepcopy(value, memo))
        clone._cache = {}
        return clone

    # ------------------------------------------------- edge_index operations (exact subset)
    # PyG layers index ``edge_index`` in forward (``edge_index[:, edge_type == r]``,
    # ``degree(edge_index[1], N)``). A DistGraph supports exactly the operations whose result
    # is exact on a rank's part, in the rank's stored edge order, and refuses every other one
    # with a TypeError naming it (a source id may belong to another rank).
    _INDEXING_HELP = ("supported: graph[1] (local destination id of every stored edge) and "
                      "graph[:, mask] (a boolean mask over the rank's stored edges)")
    # Said wherever a plain PyG layer first touches a DistGraph as it would a tensor: a model
    # that was never converted reaches PyG's own code with the partition's graph, and the error
    # it gets should name the fix, not only PyG's complaint about edge_index.
    _UNCONVERTED_HELP = ("if a PyG layer raised this, the model was not converted: call "
                         "pyg_sar.convert(model) before calling it with the partition's graph "
                         "(data.edge_index of a PartitionData); if PyG's negative_sampling "
                         "raised it, import negative_sampling from pyg_sar.link instead (it "
                         "takes the same call and draws from the whole graph)")

    def __getattr__(self, name: str):
        # Only reached for names a DistGraph does not have: PyG reading edge_index as a tensor
        # (edge_index.size(1), .dim(), .dtype, .t()) in a layer that was not converted.
        if name.startswith("_"):
            raise AttributeError(name)
        raise AttributeError(f"DistGraph has no attribute {name!r}: it is the rank's part of "
                             f"a partitioned graph, not an edge_index tensor; "
                             f"{DistGraph._UNCONVERTED_HELP}")

    def __getitem__(self, key):
        """``graph[1]``: :meth:`destinations`; ``graph[:, mask]``: :meth:`masked`."""
        if isinstance(key, int) and not isinstance(key, bool):
            if key in (1, -1):
                return self.destinations()
            if key in (0, -2):
                raise TypeError(f"DistGraph[{key}]: the sources of a rank's edges may live on "
                                f"other ranks, so they have no local ids; "
                                f"{self._INDEXING_HELP}; {self._UNCONVERTED_HELP}")
            raise IndexError(f"DistGraph[{key}]: an edge_index has 2 rows")
        if (isinstance(key, tuple) and len(key) == 2 and isinstance(key[0], slice)
                and key[0] == slice(None) and isinstance(key[1], Tensor)):
            return self.masked(key[1])
        raise TypeError(f"DistGraph[{_describe_key(key)}] is not an operation pyg_sar can run "
                        f"exactly on a rank's part of the graph; {self._INDEXING_HELP}; "
                        f"{self._UNCONVERTED_HELP}")

    def __iter__(self):
        raise TypeError(f"a DistGraph cannot be unpacked into (row, col): the sources of a "
                        f"rank's edges may live on other ranks; {self._INDEXING_HELP}; "
                        f"{self._UNCONVERTED_HELP}")

    def send_index(self) -> Tensor:
        """The local rows this rank sends to its peers, by peer rank (``send_idx``
        concatenated; ``int64 [sum(send_counts)]``): what an all-to-all of halo rows sends, and
        where the rows returned to owners are added. Cached."""
        return self.cached(("send_index",), lambda: torch.cat(list(self.send_idx)))

    def destinations(self) -> Tensor:
        """Local destination id of every stored edge (``int64 [num_edges]``, stored order).

        Exact: every in-edge of a local node is stored on this rank, so e.g.
        ``degree(graph[1], graph.num_nodes)`` is the global in-degree of the local nodes.
        """
        return torch.cat([b.row for b in self.blocks])

    def masked(self, mask: Tensor) -> DistGraph:
        """The graph restricted to the stored edges where ``mask`` is true (PyG's
        ``edge_index[:, mask]``).

        The result is a DistGraph over the same nodes and exchange lists, whose blocks keep the
        masked edges in stored order (so an edge tensor ``t`` of this graph becomes
        ``t[mask]``) and whose ``in_degree`` counts them.
        """
        if mask.dtype != torch.bool:
            raise TypeError(f"DistGraph[:, mask]: mask must be a boolean tensor over the stored "
                            f"edges (got dtype {mask.dtype}); index tensors would reorder edges "
                            f"across ranks")
        if tuple(mask.shape) != (self.num_edges,):
            raise ValueError(f"DistGraph[:, mask]: mask must have shape [{self.num_edges}] (the "
                             f"rank's stored edges), got {list(mask.shape)}")
        mask = mask.to(self.device)
        blocks, start = [], 0
        for b in self.blocks:
            keep = mask[b.edge_slice]
            row = b.row[keep]
            rowptr = torch.zeros_like(b.rowptr)
            rowptr[1:] = torch.cumsum(torch.bincount(row, minlength=b.num_dst), 0)
            blocks.append(Block(b.src_rank, rowptr, b.col[keep], b.num_src, start, None,
                                _row=row))
            start += int(row.numel())
        in_degree = torch.zeros_like(self.in_degree)
        for b in blocks:
            in_degree += torch.bincount(b.row, minlength=self.num_nodes)
        values = None if self.edge_values is None else self.edge_values[mask]
        return DistGraph(self.rank, self.world_size, self.node_offsets, blocks, self.send_idx,
                         in_degree, self._context, self.node_ids, values, **self._src_kwargs())

    # -------------------------------------------- adj_t arithmetic (torch_sparse's semantics)
    # PyG's OGB scripts build normalised adjacencies from ``adj_t`` as torch_sparse allows:
    # ``deg = adj_t.sum(dim=1)``, ``d.view(-1, 1) * adj_t * d.view(1, -1)``. The row sums and
    # the row scaling are local (all in-edges of a local node are stored here); scaling by
    # columns fetches the column vector's entries for the rank's halo sources (collective).
    def sum(self, dim: int) -> Tensor:
        """``adj_t.sum(dim=1)``: for every local node the sum of its in-edges' values (the
        in-degree, ``int64``, when the graph has no values), as torch_sparse's
        ``SparseTensor.sum(dim=1)``.

        Only ``dim=1`` (rows of ``adj_t``, i.e. destinations) is local to a rank; ``dim=0``
        (sums over each node's out-edges) is refused.
        """
        if dim not in (1, -1):
            raise ValueError(f"DistGraph.sum(dim={dim!r}): only dim=1 (the sum over each local "
                             f"node's in-edges, adj_t's rows) is supported; column sums run "
                             f"over edges stored on other ranks")
        dst = self.destinations()
        if self.edge_values is None:
            return torch.bincount(dst, minlength=self.num_nodes)
        out = self.edge_values.new_zeros((self.num_nodes,))
        return out.index_add_(0, dst, self.edge_values)

    def __mul__(self, other) -> DistGraph:
        """``adj_t * v``: every edge ``j -> i`` (entry ``[i, j]``) times ``v[i]`` for ``v`` of
        shape ``[num_nodes, 1]`` (rows) or ``v[j]`` for ``v`` of shape ``[1, num_nodes]``
        (columns), or times a number; as torch_sparse's
        ``SparseTensor.__mul__``. The result carries the products as its values (a graph
        without values counts as ones). Collective on several ranks: every rank multiplies
        its graph the same way (a number, rows or columns), or every rank raises."""
        return _scaled(self, other)

    __rmul__ = __mul__

    def __repr__(self) -> str:
        values = "" if self.edge_values is None else ", values=True"
        if self.is_bipartite:
            values += f", num_src_nodes={self.num_src_nodes}"
        return (f"DistGraph(rank={self.rank}, world_size={self.world_size}, "
                f"num_nodes={self.num_nodes}, num_edges={self.num_edges}, "
                f"recv={self.recv_counts}{values})")


_SCALE_KINDS = ("a number", "rows", "columns", "a tensor of another shape")


def _scale_kind(graph: DistGraph, other: int | float | Tensor) -> int:
    """What ``graph * other`` scales: an index into :data:`_SCALE_KINDS`."""
    if not isinstance(other, Tensor) or other.dim() == 0:
        return 0
    if other.dim() == 2 and tuple(other.shape) == (graph.num_nodes, 1):
        return 1
    if (other.dim() == 2 and other.shape[0] == 1 and not graph.is_bipartite
            and other.shape[1] == graph.num_nodes):
        return 2
    return 3


def _agreed_scale_kind(graph: DistGraph, kind: int, shape: str) -> None:
    """Every rank scales the same way, or every rank raises: the column scaling's all-to-all
    would otherwise wait for ranks that refused their tensor, or scaled rows locally."""
    if graph.world_size > 1:
        # (on the graph's device: an NCCL communicator carries CUDA tensors only)
        seen = torch.tensor([kind, -kind], dtype=torch.int64, device=graph.device)
        graph.context.comm.all_reduce(seen, "max")
        low, high = -int(seen[1]), int(seen[0])
        if low != high and kind != 3:
            raise ValueError(
                f"DistGraph * tensor: rank {graph.rank} scales by {_SCALE_KINDS[kind]} "
                f"({shape}) but another rank by {_SCALE_KINDS[high if high != kind else low]}; "
                f"every rank must scale its graph the same way (adj_t * v is collective)")
    if kind == 3:
        raise ValueError(f"DistGraph * tensor: expected a number or a tensor of shape "
                         f"[{graph.num_nodes}, 1] (scales rows: destinations) or "
                         f"[1, {graph.num_nodes}] (scales columns: sources; not on a bipartite "
                         f"graph), the rank's nodes; got {shape}")


def _scaled(graph: DistGraph, other) -> DistGraph:
    """``graph * other`` (:meth:`DistGraph.__mul__`). Collective on several ranks: the ranks
    agree on what they scale (one small all-reduce) before the column scaling's all-to-all."""
    if isinstance(other, bool) or not isinstance(other, (int, float, Tensor)):
        return NotImplemented
    kind = _scale_kind(graph, other)
    shape = f"shape {list(other.shape)}" if isinstance(other, Tensor) else repr(other)
    _agreed_scale_kind(graph, kind, shape)
    values = graph.edge_values
    if kind == 0:
        factor = other
    elif kind == 1:
        factor = other.view(-1).to(graph.device)[graph.destinations()]
    else:
        factor = _source_values(graph, other.view(-1).to(graph.device))
    if values is None:
        dtype = factor.dtype if isinstance(factor, Tensor) else torch.get_default_dtype()
        values = torch.ones(graph.num_edges, dtype=dtype, device=graph.device)
    out = graph.with_values(values * factor)
    out.values_from_arithmetic = True
    return out


def halo_rows(graph: DistGraph, x: Tensor) -> Tensor:
    """``[sum(graph.recv_counts), ...]``: the rows of ``x`` (one per local node, on every rank)
    that this rank's remote blocks read, fetched from their owners in one all-to-all, by source
    rank in recv-list order. Collective; not differentiable."""
    send = x.index_select(0, graph.send_index()).contiguous()
    out = x.new_empty((sum(graph.recv_counts), *x.shape[1:]))
    graph.context.comm.all_to_all_single(out, send, graph.recv_counts, graph.send_counts)
    return out


def _source_values(graph: DistGraph, v: Tensor) -> Tensor:
    """``v`` (one entry per local node) at the source of every stored edge: the entries of
    other ranks' nodes are fetched with one all-to-all (collective)."""
    parts = []
    received = halo_rows(graph, v) if graph.world_size > 1 else None
    start = 0
    for s, b in enumerate(graph.blocks):
        if s == graph.rank:
            parts.append(v[b.col])
        else:
            rows = received[start:start + graph.recv_counts[s]]
            start += graph.recv_counts[s]
            parts.append(rows[b.col])
    return torch.cat(parts) if parts else v.new_zeros((0,))


def _same_device(have: torch.device, want: torch.device) -> bool:
    """``want`` names ``have`` (``cuda`` without an index names the current CUDA device)."""
    if have.type != want.type:
        return False
    if want.index is None and want.type == "cuda":
        return have.index == torch.cuda.current_device()
    return want.index is None or have.index == want.index


def _describe_key(key) -> str:
    """An index key in words, for error messages (tensors by dtype and shape)."""
    if isinstance(key, tuple):
        return ", ".join(_describe_key(k) for k in key)
    if isinstance(key, Tensor):
        return f"<{key.dtype} tensor of shape {list(key.shape)}>"
    if isinstance(key, slice):
        parts = ["" if v is None else str(v) for v in (key.start, key.stop)]
        return ":".join(parts) + ("" if key.step is None else f":{key.step}")
    return repr(key)


# ----------------------------------------------------------------- the reversed graph (flip)
# Every edge u -> v becomes v -> u, partitioned like the original (docstring of
# pyg_sar.partition.reverse, which re-exports reversed_graph): here, beside DistGraph.flip,
# because building it needs Block and DistGraph.
_REVERSED_KEY = ("reversed",)


def reversed_graph(graph: DistGraph) -> DistGraph:
    """The reversed graph of ``graph``, built once per graph and cached on it (collective: every
    rank must call it; the reversed graph's own reverse is ``graph``)."""
    def build() -> DistGraph:
        rev = _build_reversed(graph)
        rev.cached(_REVERSED_KEY, lambda: graph)
        # The edge tensors a user holds are in the original's stored order on the
        # destinations' ranks: none describes the reversed edges (checked by propagate).
        rev.edge_data_refused = ("edge tensors cannot be passed over a reversed DistGraph "
                                 "(edge_index.flip([0])): the reversed edges are stored on "
                                 "their sources' ranks, where the original's edge tensors "
                                 "do not line up with them")
        return rev
    return graph.cached(_REVERSED_KEY, build)


def _csr_block(src_rank: int, num_dst: int, dst: Tensor, col: Tensor, num_src: int,
               edge_start: int, src_in_degree: Tensor) -> Block:
    """A block from unordered edges: CSR by destination, each row ordered by source."""
    order = torch.argsort(dst * max(num_src, 1) + col, stable=True)
    rowptr = torch.zeros(num_dst + 1, dtype=torch.long, device=dst.device)
    rowptr[1:] = torch.cumsum(torch.bincount(dst, minlength=num_dst), 0)
    return Block(src_rank, rowptr, col[order].contiguous(), num_src, edge_start, src_in_degree)


def _build_reversed(graph: DistGraph) -> DistGraph:
    world, rank, n = graph.world_size, graph.rank, graph.num_nodes
    device = graph.device
    local = graph.blocks[rank]
    # Reversed in-edges of this rank's nodes by source rank: (local destination, source id on
    # the source rank).
    dst_of: list[Tensor] = [torch.empty(0, dtype=torch.long, device=device)] * world
    src_of: list[Tensor] = [torch.empty(0, dtype=torch.long, device=device)] * world
    dst_of[rank], src_of[rank] = local.col, local.row
    send_idx = [torch.empty(0, dtype=torch.long, device=device) for _ in range(world)]
    context = None
    if world > 1:
        context = graph.context
        received = _exchange_cut_edges(graph)
        for s in range(world):
            if s == rank:
                continue
            rows_on_s, position = received[s]
            dst_of[s] = graph.send_idx[s].index_select(0, position)
            src_of[s] = rows_on_s
            # s reads these rows of ours; it orders them ascending, as torch.unique does here.
            send_idx[s] = torch.unique(graph.blocks[s].row, sorted=True)

    in_degree = torch.zeros(n, dtype=torch.long, device=device)
    for d in dst_of:
        in_degree += torch.bincount(d, minlength=n)

    cols, num_src, src_rows = [], [], []
    for s in range(world):
        if s == rank:
            cols.append(src_of[s])
            num_src.append(n)
            src_rows.append(None)
        else:
            rows, col = torch.unique(src_of[s], sorted=True, return_inverse=True)
            cols.append(col.view(-1))
            num_src.append(int(rows.numel()))
            src_rows.append(rows)
    src_in_degree = _source_degrees(graph, in_degree, send_idx, num_src) if world > 1 else {}
    src_in_degree[rank] = in_degree

    blocks, start = [], 0
    for s in range(world):
        block = _csr_block(s, n, dst_of[s], cols[s], num_src[s], start, src_in_degree[s])
        blocks.append(block)
        start += block.num_edges
    return DistGraph(rank, world, graph.node_offsets, blocks, send_idx, in_degree,
                     context=context, node_ids=graph.node_ids)


def _exchange_cut_edges(graph: DistGraph) -> dict[int, tuple[Tensor, Tensor]]:
    """Send every remote block's edges to the block's source rank; return, by sending rank,
    (its local destination, position in our send list to it) for each of its edges."""
    world, rank = graph.world_size, graph.rank
    comm = graph.context.comm
    device = graph.device
    send_counts = [0 if s == rank else graph.blocks[s].num_edges for s in range(world)]
    counts = torch.tensor(send_counts, dtype=torch.long, device=device)
    recv_counts_t = torch.empty_like(counts)
    ones = [1] * world
    comm.all_to_all_single(recv_counts_t, counts, ones, ones)
    recv_counts = [int(c) for c in recv_counts_t.tolist()]
    if recv_counts[rank] != 0:
        raise RuntimeError(f"reversed_graph: rank {rank} was sent {recv_counts[rank]} edges by "
                           f"itself")
    pairs = [torch.stack([graph.blocks[s].row, graph.blocks[s].col], dim=1)
             for s in range(world) if s != rank]
    send = (torch.cat(pairs) if pairs else torch.empty(0, 2, dtype=torch.long, device=device))
    recv = torch.empty(sum(recv_counts), 2, dtype=torch.long, device=device)
    comm.all_to_all_single(recv, send.contiguous(), recv_counts, send_counts)
    out, at = {}, 0
    for s in range(world):
        if s == rank:
            continue
        part = recv[at:at + recv_counts[s]]
        at += recv_counts[s]
        position = part[:, 1]
        if position.numel() and int(position.max()) >= graph.send_idx[s].numel():
            raise RuntimeError(f"reversed_graph: rank {s} names row {int(position.max())} of "
                               f"rank {rank}'s send list to it, which has "
                               f"{graph.send_idx[s].numel()} rows (partition files disagree)")
        out[s] = (part[:, 0].contiguous(), position.contiguous())
    return out


def _source_degrees(graph: DistGraph, in_degree: Tensor, send_idx: list[Tensor],
                    num_src: list[int]) -> dict[int, Tensor]:
    """Reversed in-degree of every reversed source row, from its owner (one exchange)."""
    world, rank = graph.world_size, graph.rank
    send_counts = [int(i.numel()) for i in send_idx]
    recv_counts = [0 if s == rank else num_src[s] for s in range(world)]
    send = in_degree.index_select(0, torch.cat(send_idx)).contiguous()
    recv = in_degree.new_empty(sum(recv_counts))
    graph.context.comm.all_to_all_single(recv, send, recv_counts, send_counts)
    out, at = {}, 0
    for s in range(world):
        if s != rank:
            out[s] = recv[at:at + recv_counts[s]]
            at += recv_counts[s]
    return out
