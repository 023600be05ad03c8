r"""A differentiable distributed gather: rows of node embeddings by global node id.

Which ids: a partition renumbers the nodes by rank, so a node has an ORIGINAL id (its id in
the graph before partitioning, ``part.node_ids[i]`` for local row ``i``) and a NEW global id
(rank ``r`` owns ``[node_offsets[r], node_offsets[r + 1])``). :func:`gather` says which ones
``index`` holds with ``ids=``:

* ``ids="new"``: pairs from :func:`pyg_sar.distribute` / :func:`~pyg_sar.load_link_split`
  (``edge_label_index``, ``pos_edge_label_index``, ...) and from
  :func:`pyg_sar.link.negative_sampling`;
* ``ids="original"``: ids of the graph before partitioning, e.g. PyG's own
  ``RandomLinkSplit`` or ``negative_sampling`` run on the whole graph; they are mapped with
  :func:`pyg_sar.link.to_new_ids`, which needs the partition's graph (``graph=part.edge_index``,
  or a DistGraph given as ``node_offsets`` / ``context``).

The one way::

    src, dst = pyg_sar.gather(z, data.edge_label_index.flatten(), ids="new").chunk(2)
    rows = pyg_sar.gather(z, whole_graph_pairs.flatten(), ids="original",
                          graph=data.edge_index)

Left out, ``ids`` raises a ``ValueError`` wherever the two numberings may differ (more than one
rank, or a graph whose ``node_ids`` are not the identity), never returning another node's rows;
it may be left out with one process and no partition, and when ``node_offsets`` is given as a
list or tensor (a plain layout of rows, no renumbering: new ids are the only ids).

Each rank holds the rows of its own nodes (``z``, local order: row ``i`` is the node with new
global id ``node_offsets[rank] + i``) and asks for any global ids (``index``, any order, any
number per rank, repeats allowed, empty allowed). :func:`gather` returns ``z_global[index]``,
where ``z_global`` is the concatenation of every rank's ``z`` in rank order; in backward the
gradients of the returned rows go back to their owners and are summed there (repeated ids
add up), so the gradient of ``z`` is that of ``z_global[index]`` restricted to the rank's rows.

Communication per call (every rank must call, also with an empty ``index``):

* forward: one all-to-all of request counts (``P`` int64 per rank, also carrying an error flag
  so that bad input on one rank raises on every rank), one of the requested ids (each distinct
  id once: repeats are answered by one row) and one of the rows;
* backward: one all-to-all of the gradients of the distinct requested rows, index-added by the
  owners.

Bytes crossing to other ranks are counted in ``comm.traffic`` under ``name``: direction
``rows`` (counts, ids and rows of the forward) and ``grads`` (the backward). Rows a rank asks of
itself are copied locally and not counted. With one process (no context, or one rank) the
gather is ``z[index]``.

``node_offsets``: the ``P + 1`` boundaries of the ranks' new-id ranges, a
:class:`~pyg_sar.DistGraph` (its ``node_offsets``; also its context when ``context`` is not
given), or ``None``: taken from ``context`` when it is a DistGraph, else from one all-gather of
the ranks' row counts (one more small collective per call; pass ``graph.node_offsets`` to
avoid it).

Backward is collective too: when the ranks' ``z`` require grad, every rank must backpropagate
through the output of every gather call (a loss summed over all ranks, e.g. one of
:mod:`pyg_sar.nn.functional`, does so even on a rank with no pairs).
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, Optional, Union

import torch
from torch import Tensor

from pyg_sar.core.exchange import count
from pyg_sar.core.loss_reduction import local_values

Offsets = Union[Sequence[int], Tensor, Any]


def _offsets_of(node_offsets: Offsets) -> Optional[list[int]]:
    if node_offsets is None:
        return None
    if hasattr(node_offsets, "node_offsets"):  # a DistGraph
        node_offsets = node_offsets.node_offsets
    if isinstance(node_offsets, Tensor):
        node_offsets = node_offsets.tolist()
    return [int(o) for o in node_offsets]


def row_offsets(num_rows: int, comm: Any) -> list[int]:
    """The first global row of each rank, and the total, from every rank's ``num_rows`` (one
    small all-gather; ``[0, num_rows]`` without a communicator)."""
    counts = [num_rows] if comm is None else [int(c) for c in comm.allgather_object(num_rows)]
    out = [0]
    for c in counts:
        out.append(out[-1] + c)
    return out


def _is_graph(x: Any) -> bool:
    return hasattr(x, "blocks") and hasattr(x, "node_offsets")


def _graph_arg(graph: Any, node_offsets: Offsets, context: Any, name: str) -> Any:
    """The partition's DistGraph: ``graph`` (a DistGraph or a PartitionData), else
    ``node_offsets`` or ``context`` when it is a DistGraph, else ``None``."""
    if graph is not None:
        if _is_graph(graph):
            return graph
        inner = getattr(graph, "edge_index", None)
        if _is_graph(inner):
            return inner
        raise ValueError(f"{name}: graph must be the partition's DistGraph (part.edge_index) or "
                         f"its PartitionData (got {type(graph).__name__})")
    for candidate in (node_offsets, context):
        if _is_graph(candidate):
            return candidate
    return None


def _identity_ids(graph: Any) -> bool:
    """Whether the graph's new ids are its original ids (on this rank)."""
    node_ids = getattr(graph, "node_ids", None)
    if node_ids is None:
        return True
    lo = graph.node_offsets[graph.rank]
    return torch.equal(node_ids.long().cpu(),
                       torch.arange(lo, lo + node_ids.numel(), dtype=torch.long))


def _ids_problem(name: str, why: str) -> str:
    return (f"{name}: say which node ids index holds ({why}): ids=\"new\" for the partition's "
            f"new global ids (rank r owns [node_offsets[r], node_offsets[r + 1])): pairs from "
            f"pyg_sar.distribute / pyg_sar.load_link_split (edge_label_index, "
            f"pos_edge_label_index, ...) or pyg_sar.link.negative_sampling; ids=\"original\" "
            f"for ids of the graph before partitioning, e.g. PyG's own RandomLinkSplit or "
            f"negative_sampling on the whole graph (mapped with pyg_sar.link.to_new_ids; pass "
            f"the partition's graph, graph=part.edge_index). A partition renumbers the nodes, so "
            f"the two may differ: without ids= the gather could return other nodes' rows")


def _resolve(z: Tensor, node_offsets: Offsets, context: Any, name: str, graph: Any = None):
    """``(comm or None, rank, offsets or None)``."""
    from pyg_sar.distributed.context import resolve_context
    where = context
    if where is None and hasattr(node_offsets, "node_offsets"):
        where = node_offsets
    if where is None and graph is not None:
        where = graph
    if node_offsets is None and graph is not None:
        node_offsets = graph
    if node_offsets is None and hasattr(context, "node_offsets"):
        node_offsets = context
    ctx = resolve_context(where, create=False)
    comm = ctx.comm if ctx is not None and ctx.world_size > 1 else None
    rank = ctx.rank if comm is not None else 0
    offsets = _offsets_of(node_offsets)
    if offsets is None:
        offsets = row_offsets(int(z.shape[0]), comm)
    return comm, rank, offsets


def _problem(z: Tensor, index: Tensor, offsets: list[int], world: int, rank: int,
             name: str) -> Optional[str]:
    """What is wrong with this rank's input, or ``None``."""
    if not isinstance(z, Tensor) or z.dim() < 1:
        return f"{name}: z must be a tensor with one row per local node (got " \
               f"{type(z).__name__ if not isinstance(z, Tensor) else tuple(z.shape)})"
    if not isinstance(index, Tensor):
        return f"{name}: index must be a 1-d integer tensor (got {type(index).__name__})"
    if index.dtype.is_floating_point or index.dtype.is_complex or index.dtype == torch.bool:
        return f"{name}: index must be a 1-d integer tensor of global node ids (got dtype " \
               f"{index.dtype})"
    if index.dim() != 1:
        return f"{name}: index must be a 1-d integer tensor (got shape {tuple(index.shape)})"
    if len(offsets) != world + 1 or offsets[0] != 0 or any(
            b < a for a, b in zip(offsets, offsets[1:])):
        return f"{name}: node_offsets must be {world + 1} non-decreasing boundaries starting " \
               f"at 0 (got {offsets})"
    own = offsets[rank + 1] - offsets[rank]
    if z.shape[0] != own:
        return f"{name}: z has {z.shape[0]} rows on rank {rank}, but node_offsets give the " \
               f"rank {own} nodes ({offsets[rank]}..{offsets[rank + 1]})"
    n = offsets[-1]
    if index.numel():
        bad = (index < 0) | (index >= n)
        if bool(bad.any()):
            pos = int(bad.nonzero()[0, 0])
            return f"{name}: node id {int(index[pos])} (index position {pos}) is out of " \
                   f"range [0, {n})"
    return None


class _Plan:
    """Who asks whom for what: built in forward, reused by backward."""

    def __init__(self, comm, rank: int, name: str, inverse: Tensor, send_counts: list[int],
                 recv_counts: list[int], served: Tensor, num_local: int) -> None:
        self.comm, self.rank, self.name = comm, rank, name
        self.inverse = inverse          # [len(index)] position of each id among the distinct
        self.send_counts = send_counts  # distinct ids asked of each rank
        self.recv_counts = recv_counts  # ids each rank asks of this one
        self.served = served            # local ids asked of this rank, by asking rank
        self.num_local = num_local


def _cross(sizes: list[int], rank: int, row: int) -> int:
    return row * (sum(sizes) - sizes[rank])


class _Gather(torch.autograd.Function):
    @staticmethod
    def forward(ctx, z: Tensor, plan: _Plan) -> Tensor:  # type: ignore[override]
        comm, rank = plan.comm, plan.rank
        zc = z.detach().contiguous()
        rows = zc.index_select(0, plan.served)
        got = zc.new_empty((sum(plan.send_counts), *zc.shape[1:]))
        comm.all_to_all_single(got, rows, plan.send_counts, plan.recv_counts)
        row = zc.element_size() * math.prod(zc.shape[1:])
        count(comm, _cross(plan.recv_counts, rank, row), _cross(plan.send_counts, rank, row),
              0, traffic=(plan.name, "rows"))
        ctx.plan = plan
        ctx.z_shape = tuple(zc.shape)
        ctx.row = row
        return got.index_select(0, plan.inverse)

    @staticmethod
    def backward(ctx, grad: Tensor):  # type: ignore[override]
        plan: _Plan = ctx.plan
        grad = grad.contiguous()
        distinct = grad.new_zeros((sum(plan.send_counts), *grad.shape[1:]))
        distinct.index_add_(0, plan.inverse, grad)
        back = grad.new_empty((sum(plan.recv_counts), *grad.shape[1:]))
        plan.comm.all_to_all_single(back, distinct, plan.recv_counts, plan.send_counts)
        count(plan.comm, _cross(plan.send_counts, plan.rank, ctx.row),
              _cross(plan.recv_counts, plan.rank, ctx.row), 0, traffic=(plan.name, "grads"))
        out = grad.new_zeros(ctx.z_shape)
        out.index_add_(0, plan.served, back)
        return out, None


def gather(z: Tensor, index: Tensor, *, ids: Optional[str] = None, graph: Any = None,
           node_offsets: Offsets = None, context: Any = None, name: str = "gather") -> Tensor:
    """``z_global[index]``: rows of node embeddings by global node id, from every rank.

    ``index`` holds NEW global ids (``ids="new"``: pairs from :func:`pyg_sar.distribute`,
    :func:`~pyg_sar.load_link_split`, :func:`pyg_sar.link.negative_sampling`) or ORIGINAL ids
    (``ids="original"``: ids of the graph before partitioning, e.g. PyG's ``RandomLinkSplit``
    or ``negative_sampling`` on the whole graph; needs the partition's graph)::

        src, dst = pyg_sar.gather(z, data.edge_label_index.flatten(), ids="new").chunk(2)
        rows = pyg_sar.gather(z, pairs.flatten(), ids="original", graph=data.edge_index)

    Collective: every rank calls it (with its own ``index``, possibly empty), and every rank
    backpropagates through the result when ``z`` requires grad.

    Args:
        z: ``[num_local_nodes, *]`` this rank's rows in local order (any floating dtype,
            CPU or CUDA; any trailing shape).
        index: ``[m]`` integer tensor of global node ids in ``[0, N)`` (new or original, as
            ``ids`` says), any order, repeats allowed.
        ids: ``"new"`` or ``"original"``. Required wherever the two may differ: with more than
            one rank, or with a graph (``graph``, or a DistGraph as ``node_offsets`` /
            ``context``) whose ``node_ids`` are not the identity; may be left out (meaning
            ``"new"``) with one process and no partition, or when ``node_offsets`` is a list
            or tensor (rows laid out by rank, no renumbering).
        graph: the partition's :class:`~pyg_sar.DistGraph` (``part.edge_index``) or its
            PartitionData; ``ids="original"`` maps through it with
            :func:`pyg_sar.link.to_new_ids` (an extra collective). Default: ``node_offsets`` or
            ``context`` when it is a DistGraph.
        node_offsets: ``P + 1`` boundaries of the ranks' ranges, or a DistGraph; ``None``:
            from ``graph`` or ``context`` when it is a DistGraph, else one all-gather of the
            row counts.
        context: a DistContext or DistGraph to communicate in (default: :func:`pyg_sar.init`'s
            context; one process when there is none).
        name: the label of the traffic in ``comm.traffic``.

    Returns:
        ``[m, *]`` tensor on ``z``'s device, differentiable with respect to ``z``.

    Raises:
        ValueError: on every rank when any rank's input is bad (index not a 1-d integer tensor,
            an id out of ``[0, N)``, ``z`` rows disagreeing with ``node_offsets``); the
            offending rank's message names the value. Also when ``ids`` is left out where the
            new and original ids may differ, is not ``"new"`` / ``"original"``, or is
            ``"original"`` with no partition graph to map through.
    """
    pairs_graph = getattr(index, "_sar_graph", None)
    if hasattr(type(index), "_sar_graph"):  # PairIds: new ids of a known partition
        ids = "new" if ids is None else ids
        if graph is None and node_offsets is None and context is None:
            graph = pairs_graph
    z, index = local_values(z), local_values(index)
    part_graph = _graph_arg(graph, node_offsets, context, name)
    comm, rank, offsets = _resolve(z, node_offsets, context, name, part_graph)
    world = 1 if comm is None else comm.world_size
    if ids is None:
        plain_layout = node_offsets is not None and not _is_graph(node_offsets)
        if not plain_layout:
            if world > 1:
                raise ValueError(_ids_problem(name, f"{world} ranks"))
            if part_graph is not None and not _identity_ids(part_graph):
                raise ValueError(_ids_problem(name, "the graph's node_ids are not the "
                                                    "identity"))
    elif ids == "original":
        if part_graph is None:
            raise ValueError(f"{name}: ids=\"original\" needs the partition's graph to map "
                             f"original ids to new ones: pass graph=part.edge_index (the "
                             f"DistGraph of pyg_sar.distribute / load_partition), or a "
                             f"DistGraph as node_offsets or context")
        from pyg_sar.link.split import to_new_ids
        index = to_new_ids(part_graph, index)
    elif ids != "new":
        raise ValueError(f"{name}: ids must be \"new\" or \"original\" (got {ids!r})")
    problem = _problem(z, index, offsets, world, rank, name)
    if comm is None:
        if problem is not None:
            raise ValueError(problem)
        return z.index_select(0, index.to(device=z.device, dtype=torch.long))
    ok = problem is None
    if ok:
        index = index.to(device=z.device, dtype=torch.long)
        uniq, inverse = torch.unique(index, sorted=True, return_inverse=True)
        bounds = torch.tensor(offsets[1:], dtype=torch.long, device=uniq.device)
        owner = torch.searchsorted(bounds, uniq, right=True)
        send_counts = torch.bincount(owner, minlength=world).cpu()
    else:
        uniq = inverse = torch.zeros(0, dtype=torch.long)
        send_counts = torch.zeros(world, dtype=torch.long)
    # counts + error flag in one message: a bad input raises on every rank, none waits.
    msg = torch.stack([send_counts, torch.full((world,), 0 if ok else 1, dtype=torch.long)], 1)
    got = torch.empty_like(msg)
    comm.all_to_all_single(got, msg, [1] * world, [1] * world)
    count(comm, 16 * (world - 1), 16 * (world - 1), 0, traffic=(name, "rows"))
    if not ok:
        raise ValueError(problem)
    if bool(got[:, 1].any()):
        bad = [q for q in range(world) if int(got[q, 1])]
        raise ValueError(f"{name}: invalid input on rank(s) {bad} (their error names the "
                         f"value)")
    send = send_counts.tolist()
    recv = got[:, 0].tolist()
    served = uniq.new_empty(sum(recv))
    comm.all_to_all_single(served, uniq, recv, send)
    count(comm, 8 * (sum(send) - send[rank]), 8 * (sum(recv) - recv[rank]), 0,
          traffic=(name, "rows"))
    served = served - offsets[rank]
    plan = _Plan(comm, rank, name, inverse, send, recv, served, int(z.shape[0]))
    return _Gather.apply(z, plan)
