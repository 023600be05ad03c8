r"""Negative node pairs drawn from the whole graph, keyed by ``(seed, epoch)``: the same pairs
for every number of ranks and thread count.

Negative ``j`` of key ``k`` (``k`` a global id of what it belongs to: a supervision pair's
``edge_label_ids`` entry, or a slot number) is a pure function of ``(seed, epoch, k, j, try)``
through the counter-based generator of :mod:`pyg_sar.ops.sampling_rng`, and the draws are made
in the space of the ORIGINAL node ids (the ids of the graph before partitioning), so a
partition into any number of parts, and the single-process :func:`reference_negative_sampling`
on the whole graph, pick the same node pairs. :func:`negative_sampling` returns them as the
partition's new global ids (to index :func:`~pyg_sar.gather`); the reference returns original
ids.

Draws (``u`` a uniform double of 53 random bits):

* ``method="uniform"``: node ``floor(u * N)`` in original-id order.
* ``method="degree"``: probability proportional to the in-degree in the message-passing graph
  (the graph's stored edges ``src -> dst`` counted at ``dst``; for an undirected graph with both
  directions stored, the degree): the node whose range ``[C[v], C[v + 1])`` of the cumulative
  in-degree in original-id order contains ``floor(u * E)``. Nodes without in-edges are never
  drawn. (Integer cumulative degrees keep the draw exact and independent of the partition; a
  smoothed ``degree ** 0.75`` would need float prefix sums whose rounding depends on it, so it
  is not offered.)
* ``src=None``: both ends are drawn, the source uniformly (as PyG's ``negative_sampling``) and
  the destination by ``method``; ``src`` given: the sources are kept (one per key) and only the
  destinations drawn, e.g. candidates ranked against a positive for MRR / Hits@K.
* ``reject_existing=True``: a candidate that is an edge ``src -> dst`` of the message-passing
  graph, or a self-loop, is drawn again with the next try counter, up to ``max_tries`` draws;
  after the last one the last candidate is kept (no error: with a sparse graph this is rare;
  test with :func:`reference_negative_sampling` if it matters).
* Typed pairs (one edge type between two node types, e.g. ``("user", "rates", "movie")`` of a
  heterogeneous partition or link split, ``negative_sampling(part, keys,
  edge_type=...)``; ``reference_negative_sampling(..., num_nodes=(num_src, num_dst))``): the
  source is drawn among the ``num_src`` nodes of the source type (``floor(u * num_src)``, its
  original ids), the destination among the ``num_dst`` of the destination type as above (the
  degree: in-edges of that edge type); there are no self-loops to reject. With equal draws
  for every P, as for one node set.

Distributed cost (no O(N) structure on any rank): original ids are spread over the ranks in
``P`` blocks (``[N * d // P, N * (d + 1) // P)`` on "directory" rank ``d``), which hold, for
their block, each node's new id and in-degree (built once per graph and cached on it: one
all-to-all of the ranks' nodes). Each draw round sends every candidate to its directory rank
and gets its new id back (two all-to-alls of counts and values); with rejection, each round
then asks the destination's owner whether the pair is an edge (its CSR holds the in-edges of
the destination; the new ids of received source rows are exchanged once per graph and cached),
and one all-reduce tells the ranks whether any candidate is left. Traffic is counted in
``comm.traffic`` under ``"negative_sampling"``.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any, Optional

import torch
from torch import Tensor

from pyg_sar.ops.sampling_rng import combine_tensor, dart_tensor, make_key

METHODS = ("uniform", "degree")
LABEL = "negative_sampling"
_TAG = 0x4E4547  # separates these draws from other users of (seed, epoch)

# lookup(positions, kind) -> node ids; kind "id": original ids; "deg": cumulative-degree
# offsets. is_edge(src, dst) -> bool. any_left(n) -> whether any rank has candidates left.
Lookup = Callable[[Tensor, str], Tensor]


# ---- the draws (shared by the distributed and the reference sampler) ----------------------
def _check_args(name: str, method: str, num_neg: int, max_tries: int, seed: int,
                epoch: int) -> None:
    if method not in METHODS:
        raise ValueError(f"{name}: method must be one of {METHODS} (got {method!r})")
    for what, v, low in (("num_neg", num_neg, 1), ("max_tries", max_tries, 1),
                         ("seed", seed, 0), ("epoch", epoch, 0)):
        if isinstance(v, bool) or not isinstance(v, int) or v < low:
            raise ValueError(f"{name}: {what} must be an integer >= {low} (got {v!r})")


def _keys_problem(name: str, keys: Any, src: Optional[Tensor], num_ids: int) -> Optional[str]:
    """What is wrong with ``keys`` / ``src`` (``num_ids``: the number of source ids)."""
    if not isinstance(keys, Tensor) or keys.dim() != 1 or keys.dtype.is_floating_point \
            or keys.dtype.is_complex or keys.dtype == torch.bool:
        what = (f"dtype {keys.dtype}, shape {tuple(keys.shape)}" if isinstance(keys, Tensor)
                else type(keys).__name__)
        return f"{name}: keys must be a 1-d integer tensor (got {what})"
    if keys.numel() and int(keys.min()) < 0:
        return f"{name}: keys must be non-negative (got {int(keys.min())})"
    if src is not None:
        if not isinstance(src, Tensor) or src.dim() != 1 or src.dtype.is_floating_point \
                or src.numel() != keys.numel():
            what = (f"dtype {src.dtype}, shape {tuple(src.shape)}" if isinstance(src, Tensor)
                    else type(src).__name__)
            return f"{name}: src must be a 1-d integer tensor with one node id per key " \
                   f"({keys.numel()}) (got {what})"
        bad = (src < 0) | (src >= num_ids)
        if bool(bad.any()):
            return f"{name}: src node id {int(src[bad][0])} is out of range [0, {num_ids})"
    return None


def _positions(u: Tensor, total: int) -> Tensor:
    """``floor(u * total)`` for uniforms ``u`` in ``[0, 1)`` (exact for totals < 2**53)."""
    return (u * total).floor().long().clamp_(max=max(total - 1, 0))


def _locate(cumulative: Tensor, offsets: Tensor) -> Tensor:
    """Index ``v`` with ``cumulative[v - 1] <= offset < cumulative[v]`` (inclusive cumsum)."""
    return torch.searchsorted(cumulative, offsets, right=True)


def _sample(keys: Tensor, src: Optional[Tensor], *, seed: int, epoch: int, num_neg: int,
            method: str, reject: bool, max_tries: int, num_nodes: int, num_edges: int,
            lookup: Lookup, is_edge: Callable[[Tensor, Tensor], Tensor],
            any_left: Callable[[int], bool], num_src: Optional[int] = None) -> Tensor:
    """The sampling loop; ``lookup`` / ``is_edge`` / ``any_left`` are the only differences
    between one process and many (they are collective in the distributed sampler).
    ``num_src`` given: typed pairs, sources among ``num_src`` nodes of another node set
    (looked up with kind ``"src"``), destinations among ``num_nodes``, no self-loops."""
    bipartite = num_src is not None
    device = keys.device
    base = torch.tensor(make_key(_TAG, seed, epoch), dtype=torch.long, device=device)
    m = keys.numel() * num_neg
    j = torch.arange(num_neg, dtype=torch.long, device=device).repeat(keys.numel())
    k = combine_tensor(combine_tensor(base, keys.long().repeat_interleave(num_neg)), j)
    out_s = (src.long().repeat_interleave(num_neg) if src is not None
             else torch.zeros(m, dtype=torch.long, device=device))
    out_d = torch.zeros(m, dtype=torch.long, device=device)
    pending = torch.arange(m, dtype=torch.long, device=device)
    for t in range(max_tries if reject else 1):
        kk = k[pending]
        tt = torch.full_like(kk, t)
        u_d = dart_tensor(kk, 2 * tt + 1)
        if method == "uniform":
            d = lookup(_positions(u_d, num_nodes), "id")
        else:
            d = lookup(_positions(u_d, num_edges), "deg")
        out_d[pending] = d
        if src is None:
            u_s = dart_tensor(kk, 2 * tt)
            out_s[pending] = (lookup(_positions(u_s, num_src), "src") if bipartite
                              else lookup(_positions(u_s, num_nodes), "id"))
        if not reject:
            break
        s = out_s[pending]
        bad = is_edge(s, d) if bipartite else is_edge(s, d) | (s == d)
        pending = pending[bad]
        if not any_left(int(pending.numel())):
            break
    return torch.stack([out_s, out_d])


# ---- single process ----------------------------------------------------------------------
def reference_negative_sampling(edge_index: Tensor, keys: Tensor, *,
                                num_nodes: int | tuple[int, int], seed: int, epoch: int,
                                num_neg: int = 1, method: str = "uniform",
                                src: Optional[Tensor] = None, reject_existing: bool = False,
                                max_tries: int = 20) -> Tensor:
    """The negatives of :func:`negative_sampling` from the whole graph in one process.

    The arguments not listed below are those of :func:`negative_sampling`.

    Args:
        edge_index: ``[2, E]`` the whole message-passing graph in ORIGINAL node ids (for typed
            pairs, the edge type's edges: sources of the source type, destinations of the
            destination type, each in its type's ids).
        keys: ``[n]`` the keys (all of them, e.g. ``arange(num_pairs)``).
        num_nodes: ``N``; or ``(num_src, num_dst)`` for typed pairs between two node types
            (as :func:`negative_sampling` with ``edge_type=`` of a bipartite edge type draws
            them).
        src: ``[n]`` original ids of kept sources, or ``None``.

    Returns:
        ``int64 [2, n * num_neg]`` ORIGINAL node ids, the negatives of each key in turn.
    """
    name = "reference_negative_sampling"
    _check_args(name, method, num_neg, max_tries, seed, epoch)
    bipartite = isinstance(num_nodes, (tuple, list))
    if bipartite:
        if len(num_nodes) != 2 or any(isinstance(n, bool) or not isinstance(n, int) or n < 0
                                      for n in num_nodes):
            raise ValueError(f"{name}: num_nodes must be an integer or a pair (num_src, "
                             f"num_dst) of integers (got {num_nodes!r})")
        num_src, num_dst = int(num_nodes[0]), int(num_nodes[1])
    else:
        num_src = num_dst = num_nodes
    problem = _keys_problem(name, keys, src, num_src)
    if problem is not None:
        raise ValueError(problem)
    if edge_index.dim() != 2 or edge_index.shape[0] != 2:
        raise ValueError(f"{name}: edge_index must have shape [2, E] (got "
                         f"{tuple(edge_index.shape)})")
    edge_index = edge_index.to(keys.device).long()
    num_edges = int(edge_index.shape[1])
    if method == "degree" and num_edges == 0:
        raise ValueError(f"{name}: method='degree' needs a graph with edges")
    cumulative = torch.bincount(edge_index[1], minlength=num_dst).cumsum(0)
    codes = torch.unique(edge_index[0] * num_dst + edge_index[1]) if reject_existing \
        else None

    def lookup(pos: Tensor, kind: str) -> Tensor:
        return _locate(cumulative, pos) if kind == "deg" else pos

    def is_edge(s: Tensor, d: Tensor) -> Tensor:
        q = s * num_dst + d
        at = torch.searchsorted(codes, q).clamp_(max=max(codes.numel() - 1, 0))
        return codes[at] == q if codes.numel() else torch.zeros_like(q, dtype=torch.bool)

    return _sample(keys, src, seed=seed, epoch=epoch, num_neg=num_neg, method=method,
                   reject=reject_existing, max_tries=max_tries, num_nodes=num_dst,
                   num_edges=num_edges, lookup=lookup, is_edge=is_edge,
                   any_left=lambda n: n > 0, num_src=num_src if bipartite else None)


# ---- distributed -------------------------------------------------------------------------
def negative_sampling(graph: Any = None, keys: Any = None, *, seed: Optional[int] = None,
                      epoch: Optional[int] = None, num_neg: int = 1,
                      method: str = "uniform", src: Optional[Tensor] = None,
                      reject_existing: bool = False, max_tries: int = 20,
                      edge_type: Any = None, edge_index: Any = None,
                      num_nodes: Optional[int] = None, num_neg_samples: Optional[int] = None,
                      force_undirected: bool = False) -> Tensor:
    """Negative pairs for this rank's ``keys``, drawn from the whole graph.

    PyG's form is accepted too, so that PyG's call runs unchanged with this import::

        neg_edge_index = negative_sampling(
            edge_index=train_data.edge_index, num_nodes=train_data.num_nodes,
            num_neg_samples=train_data.edge_label_index.size(1), method='sparse')

    ``edge_index`` is the rank's DistGraph and ``num_neg_samples`` this rank's number of
    negatives (default: its number of stored edges). The ranks' requests are laid end to end
    as global slots ``0, 1, ...`` (rank order), and slot ``k`` is drawn as key ``k`` of the
    keyed form, uniformly over all nodes, rejecting edges of the graph and self-loops (as
    PyG's ``method="sparse"`` / ``"dense"`` do): the whole set of negatives is the same for
    every number of ranks. ``seed`` defaults to 0 and ``epoch`` to the number of earlier
    draws on this graph (a new set each call, the same sequence every run; the count lives on
    the graph object and starts again in a resumed run: pass ``epoch=`` to continue the
    sequence of the interrupted one exactly); ``num_nodes`` is
    not needed (the graph knows its nodes) and ``force_undirected=True`` is not supported.

    Collective: every rank calls it with the same ``seed``, ``epoch``, ``num_neg``, ``method``,
    ``reject_existing``, ``max_tries`` and ``edge_type`` (its own ``keys``, possibly none).

    Typed pairs of a heterogeneous graph: ``negative_sampling(part, keys,
    edge_type=("user", "rates", "movie"), ...)`` with ``part`` a
    :class:`~pyg_sar.HeteroPartition` (e.g. a split of a heterogeneous
    :func:`~pyg_sar.load_link_split`) draws sources among all nodes of the source type and
    destinations among those of the destination type, and returns them in the new ids of
    each type (row 0 source type, row 1 destination type); ``method="degree"`` and
    ``reject_existing`` use that edge type's message-passing edges.
    :func:`reference_negative_sampling` with ``num_nodes=(num_src, num_dst)`` draws the same
    pairs in original ids.

    Args:
        graph: the rank's message-passing :class:`~pyg_sar.DistGraph` (not bipartite), or a
            :class:`~pyg_sar.PartitionData` holding it; or a
            :class:`~pyg_sar.HeteroPartition` with ``edge_type``.
        keys: ``[n]`` non-negative int64 keys, global ids of what the negatives belong to (a
            pair's ``edge_label_ids`` entry): the same key gives the same negatives on every
            number of ranks.
        seed, epoch: non-negative integers; a new epoch draws new negatives.
        num_neg: negatives per key.
        method: ``"uniform"`` or ``"degree"`` (destination proportional to its in-degree).
        src: ``[n]`` NEW global ids of sources to keep (only destinations drawn), or ``None``
            (both ends drawn, the source uniformly).
        reject_existing: redraw candidates that are edges of ``graph`` or self-loops, up to
            ``max_tries`` draws in all (then the last candidate is kept).
        edge_type: with a :class:`~pyg_sar.HeteroPartition`: the edge type (``(src, rel,
            dst)``, or what ``part[...]`` accepts) whose pairs are drawn; ``src`` then holds
            new ids of its source type.

    Returns:
        ``int64 [2, n * num_neg]`` NEW global ids (row 0 sources, row 1 destinations):
        ``num_neg`` columns for ``keys[0]``, then for ``keys[1]``, ...

    Raises:
        ValueError: bad arguments (on every rank when one rank's keys / src are bad).
    """
    from pyg_sar.link.negatives_comm import DirectoryComm
    from pyg_sar.link.pair_ids import as_pair_ids, as_typed_pair_ids, type_owner
    name = "negative_sampling"
    hetero_part, typed = graph, None
    if edge_index is not None or keys is None or isinstance(keys, int):
        return _pyg_form(graph if edge_index is None else edge_index,
                         num_nodes if keys is None else keys, num_neg_samples, method,
                         force_undirected, seed, epoch, max_tries)
    if seed is None or epoch is None:
        raise ValueError(f"{name}: with keys, seed= and epoch= are required (got seed={seed!r}, "
                         f"epoch={epoch!r}): the negatives of a key are a function of them")
    _check_args(name, method, num_neg, max_tries, seed, epoch)
    src_ids = None
    if hasattr(graph, "edge_index_dict") and hasattr(graph, "node_ids_dict"):  # hetero
        if edge_type is None:
            raise ValueError(f"{name}: a heterogeneous partition needs edge_type= (one of "
                             f"{list(graph.edge_types)}): the edge type whose pairs are drawn")
        et = graph.edge_type_of(edge_type)
        typed = (type_owner(hetero_part, et[0]), type_owner(hetero_part, et[-1]))
        src_ids = graph.node_ids_dict[et[0]]
        graph = graph.edge_index_dict[et]
    elif edge_type is not None:
        raise ValueError(f"{name}: edge_type= needs a heterogeneous partition "
                         f"(HeteroPartition) as graph (got {type(graph).__name__})")
    if not hasattr(graph, "blocks") and hasattr(graph, "graph"):  # a PartitionData
        graph = graph.graph
    bipartite = getattr(graph, "is_bipartite", False)
    if bipartite and src_ids is None:
        raise ValueError(f"{name}: a bipartite graph (one edge type between two node types) "
                         f"needs its source type's ids: pass the HeteroPartition and the "
                         f"edge type, negative_sampling(part, keys, edge_type=(src, rel, dst), "
                         f"...)")
    if not hasattr(graph, "node_offsets") or not hasattr(graph, "blocks"):
        raise ValueError(f"{name}: graph must be a DistGraph (got {type(graph).__name__})")
    dc = DirectoryComm.of(graph, src_ids if bipartite else None)
    dc.agree(name, _keys_problem(name, keys, src, dc.num_src))
    keys = keys.to(dc.device)
    src = None if src is None else src.to(dc.device)
    if method == "degree" and dc.num_edges == 0:
        raise ValueError(f"{name}: method='degree' needs a graph with edges")
    pairs = _sample(keys, src, seed=seed, epoch=epoch, num_neg=num_neg, method=method,
                    reject=reject_existing, max_tries=max_tries, num_nodes=dc.num_nodes,
                    num_edges=dc.num_edges, lookup=dc.lookup, is_edge=dc.is_edge,
                    any_left=dc.any_left, num_src=dc.num_src if bipartite else None)
    if typed is not None:
        return as_typed_pair_ids(pairs, *typed)
    return pairs if bipartite else as_pair_ids(pairs, graph)


_DRAWS = "_sar_negative_draws"


def _pyg_form(graph: Any, num_nodes: Any, num_neg_samples: Optional[int], method: str,
              force_undirected: bool, seed: Optional[int], epoch: Optional[int],
              max_tries: int) -> Tensor:
    """PyG's ``negative_sampling(edge_index, num_nodes, num_neg_samples, method, ...)`` over
    the rank's DistGraph: global slots as keys (see :func:`negative_sampling`)."""
    from pyg_sar.distributed.context import communicator_of
    name = "negative_sampling"
    if not hasattr(graph, "blocks") and hasattr(getattr(graph, "edge_index", None), "blocks"):
        graph = graph.edge_index  # a PartitionData
    if not hasattr(graph, "blocks") or not hasattr(graph, "node_offsets"):
        raise ValueError(f"{name}: edge_index must be the rank's DistGraph (data.edge_index of "
                         f"pyg_sar.distribute's output; got {type(graph).__name__}); a plain "
                         f"edge_index tensor of the whole graph is PyG's own negative_sampling")
    if force_undirected:
        raise ValueError(f"{name}: force_undirected=True is not supported over a partition")
    if method not in ("sparse", "dense", *METHODS):
        raise ValueError(f"{name}: method must be 'sparse' or 'dense' (PyG's) or one of "
                         f"{METHODS} (got {method!r})")
    n = graph.num_edges if num_neg_samples is None else num_neg_samples
    if isinstance(n, Tensor) and n.numel() == 1:
        n = int(n)
    problem = None
    if isinstance(n, bool) or not isinstance(n, int) or n < 0:
        problem = f"{name}: num_neg_samples must be a non-negative integer (got {n!r})"
    comm = communicator_of(graph.context)
    rank = 0 if comm is None else comm.rank
    told = [(n, problem)] if comm is None else comm.allgather_object((n, problem))
    bad = [(r, p) for r, (_, p) in enumerate(told) if p is not None]
    if bad:  # on every rank, naming the rank whose input was bad
        raise ValueError(f"{bad[0][1]} (rank {bad[0][0]})")
    counts = [int(c) for c, _ in told]
    start = sum(counts[:rank])
    if epoch is None:
        epoch = int(graph.__dict__.get(_DRAWS, 0))
        graph.__dict__[_DRAWS] = epoch + 1
    keys = torch.arange(start, start + n, dtype=torch.long)
    return negative_sampling(graph, keys, seed=0 if seed is None else seed, epoch=epoch,
                             method="uniform" if method in ("sparse", "dense") else method,
                             reject_existing=True, max_tries=max_tries)
