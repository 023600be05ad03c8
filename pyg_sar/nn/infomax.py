r"""PyG's ``DeepGraphInfomax`` over a partitioned graph (set up by :func:`pyg_sar.convert`).

Deep Graph Infomax has two pieces that span the whole graph: its **summary** (in PyG's
examples ``z.mean(dim=0).sigmoid()``, a mean over every node) and its **corruption** (in PyG's
examples a random permutation of all nodes' features). :func:`pyg_sar.convert` gives every
``DeepGraphInfomax`` a converted class whose methods, when the model is called with a
:class:`~pyg_sar.DistGraph`, compute both exactly:

* ``forward(x, graph, ...)``: the encoder runs on the rank's rows; the user's ``summary`` runs
  on a one-row tensor holding the GLOBAL node mean of ``pos_z`` (:func:`node_mean`: one
  all-reduce of ``[hidden]`` forward, one backward), so a summary that is a function of
  ``z.mean(dim=0)`` (PyG's) is exact unchanged. On its first use (and for every new summary
  object) the summary is probed on the rank's rows: ``f(z)``, ``f(mean(z)`` repeated ``n``
  times``)`` and ``f(mean(z)[None])`` must agree, else every rank raises a ``ValueError``
  (a max, a sum or a mean of something non-linear is not a function of the mean). A summary
  that does its own reduction over ranks is marked with :func:`distributed_summary` and runs
  on the rank's rows unchanged.
* the corruption: pass ``corruption=pyg_sar.nn.infomax.corruption(seed=0)``
  (:class:`NodePermutation`): a permutation of ALL nodes of the whole graph, keyed by
  ``(seed, epoch)`` in the original node ids, the same for every number of ranks and for the
  single-process run over a plain ``edge_index``. A user corruption is called as it is; it
  must act row by row (``-x``, noise keyed per node). A corruption that returns the rank's
  own rows in another order (PyG's ``x[torch.randperm(x.size(0))]``, which would shuffle
  within a rank only) is detected on its first call and refused on every rank with a
  ``ValueError`` naming :func:`corruption`.
* ``loss(pos_z, neg_z, summary)``: PyG's two means over nodes, each a global mean over every
  rank's rows (:func:`pyg_sar.nn.functional.global_mean`, which also marks the backward pass
  as one through a global loss).
* ``test(train_z, train_y, test_z, test_y, ...)``: every rank gathers every rank's train and
  test rows (``O(train + test rows)`` memory per rank; one all-gather) and runs PyG's test (a
  scikit-learn ``LogisticRegression``) on them, so every rank returns the same accuracy. The
  rows are in rank order (new global ids), not in original order: the fit sees the same
  rows as one process, summed in another order (rounding only).

A plain Tensor ``edge_index`` runs PyG's own methods. Gradients: the encoder's and the
discriminator's parameters are summed over ranks by the converted model's gradient sync
(:mod:`pyg_sar.nn.grad_sync`), since ``forward`` receives the graph.
"""
from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any, Optional

import torch
from torch import Tensor

from pyg_sar.graph import DistGraph

_CLASSES: dict[type, type] = {}
_TAG = 0x44474921  # "DGI!": separates the permutation's keys from other users of (seed, epoch)
_ROUNDS = 4  # Luby-Rackoff: four rounds of a pseudo-random function
# the ranks of the last graph and the checks made on them: not copied
_RUNTIME = ("_sar_context", "_sar_probed", "_sar_checked_cor")


# ---- the permutation of all nodes ------------------------------------------------------------
def _feistel(y: Tensor, keys: list[Tensor], half: int) -> Tensor:
    """One pass of a balanced Feistel network on ``2 * half``-bit integers (a bijection)."""
    from pyg_sar.ops.sampling_rng import mix64_tensor
    mask = (1 << half) - 1
    left, right = y >> half, y & mask
    for key in keys:  # round function: SplitMix64's finaliser of (right + round key)
        left, right = right, left ^ (mix64_tensor(right + key) & mask)
    return (left << half) | right


def permute_ids(ids: Tensor, num_nodes: int, seed: int, epoch: int) -> Tensor:
    r""":math:`\pi(\text{ids})`: where the pseudo-random permutation :math:`\pi` of
    ``[0, num_nodes)`` keyed by ``(seed, epoch)`` sends each id.

    :math:`\pi` is a 4-round Feistel network on the smallest even number of bits that holds
    ``num_nodes - 1``, its round functions SplitMix64's finaliser of the half plus a round key
    drawn from ``(seed, epoch, round)`` (:mod:`pyg_sar.ops.sampling_rng`),
    walked until the value falls in ``[0, num_nodes)`` (cycle walking: a bijection of
    ``[0, num_nodes)``, on average fewer than 4 passes). Each id is computed on its own, so a
    rank computes its own nodes' images in ``O(its nodes)``, the same for every partition.

    Args:
        ids: integer tensor of ids in ``[0, num_nodes)``, any shape.
        num_nodes: the size of the permuted set.
        seed, epoch: non-negative integers, the key.

    Returns:
        ``int64`` tensor of the shape of ``ids``.
    """
    from pyg_sar.ops.sampling_rng import make_key
    for what, v in (("seed", seed), ("epoch", epoch), ("num_nodes", num_nodes)):
        if isinstance(v, bool) or not isinstance(v, int) or v < 0:
            raise ValueError(f"pyg_sar.nn.infomax: {what} must be a non-negative integer "
                             f"(got {v!r})")
    y = ids.to(torch.long)
    if y.numel() and (int(y.min()) < 0 or int(y.max()) >= num_nodes):
        raise ValueError(f"pyg_sar.nn.infomax: ids must lie in [0, {num_nodes})")
    if num_nodes <= 1:
        return y.clone()
    half = max(1, ((num_nodes - 1).bit_length() + 1) // 2)
    keys = [torch.tensor(make_key(_TAG, seed, epoch, r), dtype=torch.long, device=y.device)
            for r in range(_ROUNDS)]
    y = _feistel(y.reshape(-1), keys, half)
    out = y >= num_nodes
    while bool(out.any()):
        y[out] = _feistel(y[out], keys, half)
        out = y >= num_nodes
    return y.reshape(ids.shape)


def permutation(num_nodes: int, seed: int = 0, epoch: int = 0) -> Tensor:
    """The whole permutation ``perm`` (``[num_nodes]``, int64) that :class:`NodePermutation`
    applies as ``x[perm]`` for ``(seed, epoch)``: ``perm[i]`` is the original id of the node
    whose features node ``i`` receives (:func:`permute_ids` of ``arange(num_nodes)``)."""
    return permute_ids(torch.arange(num_nodes), num_nodes, seed, epoch)


class NodePermutation:
    """DGI's corruption, P-independent: the features of ALL nodes permuted,
    ``(x[perm], edge_index, *rest)`` with ``perm`` = :func:`permutation` ``(N, seed, epoch)``.

    Pass it as ``DeepGraphInfomax(..., corruption=pyg_sar.nn.infomax.corruption(seed=0))`` in
    place of PyG's ``x[torch.randperm(x.size(0))]``. Call ``i`` (counting from 0, over the
    object's life) uses ``epoch = start_epoch + i``; the attribute ``epoch`` holds the next
    one (set it to choose; :func:`pyg_sar.save_checkpoint` saves it with the model and
    :func:`pyg_sar.load_checkpoint` restores it). A model trained over a plain ``edge_index``
    in one process and the converted model over any number of ranks draw the same
    permutations.

    * over a plain tensor ``edge_index``: ``x[perm]`` with ``N = x.size(0)`` (the rows are the
      original nodes);
    * over a :class:`~pyg_sar.DistGraph`: rank ``r``'s row of original id ``o`` receives the
      row of original id ``perm[o]``, fetched from its owner by
      :func:`pyg_sar.gather` with ``ids="original"`` (mapped to new global ids through the
      graph's distributed directory, :func:`pyg_sar.link.to_new_ids`, then three
      all-to-alls forward and one backward, counted under ``"infomax"``). Nothing of size
      ``N`` is built on a rank.

    Collective over a DistGraph: every rank calls it in the same order (DGI's forward does).
    """

    _sar_distributed = True

    def __init__(self, seed: int = 0, start_epoch: int = 0) -> None:
        for what, v in (("seed", seed), ("start_epoch", start_epoch)):
            if isinstance(v, bool) or not isinstance(v, int) or v < 0:
                raise ValueError(f"pyg_sar.nn.infomax.corruption: {what} must be a "
                                 f"non-negative integer (got {v!r})")
        self.seed = seed
        self.epoch = start_epoch

    def __call__(self, x: Tensor, edge_index: Any, *rest: Any, **kwargs: Any) -> tuple:
        epoch = self.epoch
        self.epoch += 1
        if isinstance(edge_index, DistGraph):
            x_cor = _permute_rows(x, edge_index, self.seed, epoch)
        else:
            perm = permutation(int(x.size(0)), self.seed, epoch).to(x.device)
            x_cor = x[perm]
        return (x_cor, edge_index, *rest, *kwargs.values())

    def __repr__(self) -> str:
        return f"NodePermutation(seed={self.seed}, epoch={self.epoch})"


def corruption(seed: int = 0, start_epoch: int = 0) -> NodePermutation:
    """DGI's corruption for any number of ranks: a :class:`NodePermutation` (a permutation of
    all nodes keyed by ``(seed, epoch)``, the epoch counted per call from ``start_epoch``)."""
    return NodePermutation(seed, start_epoch)


def _permute_rows(x: Tensor, graph: DistGraph, seed: int, epoch: int) -> Tensor:
    from pyg_sar.link.gather import gather
    if graph.is_bipartite:
        raise ValueError("pyg_sar.nn.infomax.corruption: the graph is bipartite (two node "
                         "sets); DGI permutes the nodes of one node set")
    if x.dim() < 1 or x.shape[0] != graph.num_nodes:
        raise ValueError(f"pyg_sar.nn.infomax.corruption: x has shape {tuple(x.shape)} but "
                         f"this rank owns {graph.num_nodes} nodes (one row each)")
    lo = graph.node_offsets[graph.rank]
    ids = graph.node_ids
    own = (torch.arange(lo, lo + graph.num_nodes, device=x.device) if ids is None
           else ids.to(x.device))
    target = permute_ids(own, graph.num_global_nodes, seed, epoch)
    return gather(x, target, ids="original", graph=graph, name="infomax")


# ---- the summary --------------------------------------------------------------------------
def node_mean(z: Tensor, context: Any = None) -> Tensor:
    """``z_global.mean(dim=0)``: the mean over the rows of EVERY rank (``[*z.shape[1:]]``, the
    same on every rank), differentiable: its backward sums the gradient over ranks (every rank
    uses the mean) and hands each row ``1 / N`` of it. Collective (one all-reduce of a row
    forward, one backward); ``context``: a DistGraph or DistContext (default:
    :func:`pyg_sar.init`'s; one process: ``z.mean(dim=0)``). Summed in float32 for a
    low-precision ``z``."""
    from pyg_sar.core.collectives import sum_over_ranks, sum_over_ranks_grad
    from pyg_sar.core.precision import accumulate_dtype
    from pyg_sar.distributed.context import communicator_of as _comm
    comm = _comm(context)
    if isinstance(context, DistGraph) and z.shape[0] == context.num_nodes:
        total = context.num_global_nodes
    else:
        count = torch.tensor([float(z.shape[0])], dtype=torch.float64, device=z.device)
        total = int(sum_over_ranks(count, comm)[0])
    sums = sum_over_ranks_grad(z.sum(dim=0, dtype=accumulate_dtype(z.dtype)), comm)
    return (sums / total).to(z.dtype)


def distributed_summary(fn: Callable) -> Callable:
    """Mark a DGI summary that reduces over ranks itself (e.g. with :func:`node_mean` and the
    graph it is given): the converted DGI then calls it on the rank's rows, unprobed.
    Returns ``fn``."""
    fn._sar_distributed = True
    return fn


def _close(a: Any, b: Any, tol: float) -> bool:
    if not isinstance(a, Tensor) or not isinstance(b, Tensor) or a.shape != b.shape:
        return False
    a, b = a.detach().double(), b.detach().double()
    if not bool(torch.isfinite(a).all() and torch.isfinite(b).all()):
        return bool(torch.equal(a, b))
    scale = max(1.0, float(b.abs().max())) if b.numel() else 1.0
    return bool(torch.allclose(a, b, rtol=tol, atol=tol * scale))


def _summary_problem(fn: Callable, z: Tensor, args: tuple, kwargs: dict) -> Optional[str]:
    """Why ``fn`` is not recognisably a function of the node mean on this rank's rows."""
    n = int(z.shape[0])
    if n < 2 or z.dim() < 2:
        return None  # nothing to tell apart here; another rank decides
    z = z.detach()
    mean = z.mean(dim=0, keepdim=True)
    try:
        with torch.no_grad():
            a = fn(z, *args, **kwargs)
            b = fn(mean.expand(n, *z.shape[1:]).contiguous(), *args, **kwargs)
            c = fn(mean, *args, **kwargs)
    except Exception as exc:  # noqa: BLE001 - reported on every rank below
        return f"it raised {type(exc).__name__}: {exc}"
    tol = max(1e-6, torch.finfo(z.dtype).eps ** 0.5) if z.is_floating_point() else 1e-6
    if not (_close(a, b, tol) and _close(b, c, tol)):
        return "its value changes when the rows are replaced by their mean"
    return None


def _summary(self, pos_z: Tensor, graph: DistGraph, args: tuple, kwargs: dict) -> Tensor:
    fn = self.summary
    if getattr(fn, "_sar_distributed", False):
        return fn(pos_z, *args, **kwargs)
    if getattr(self, "_sar_probed", None) != id(fn):
        from pyg_sar.core.collectives import sum_over_ranks
        from pyg_sar.distributed.context import communicator_of as _comm
        problem = _summary_problem(fn, pos_z, args, kwargs)
        flag = torch.tensor([0.0 if problem is None else 1.0], dtype=torch.float64)
        bad = int(sum_over_ranks(flag, _comm(graph.context))[0])
        if bad:
            why = problem or "it is not a function of the node mean on another rank"
            raise ValueError(
                f"pyg_sar: DeepGraphInfomax's summary is not recognisably a function of the "
                f"node mean z.mean(dim=0) ({why}); over a partition pyg_sar runs the summary "
                f"on the global node mean (pyg_sar.nn.infomax.node_mean). Write it as a "
                f"function of z.mean(dim=0) (PyG's lambda z, *args, **kwargs: "
                f"z.mean(dim=0).sigmoid()), or reduce over ranks yourself and mark it with "
                f"pyg_sar.nn.infomax.distributed_summary")
        self._sar_probed = id(fn)
    mean = node_mean(pos_z, graph)
    return fn(mean.unsqueeze(0), *args, **kwargs)


# ---- a user corruption: refuse a shuffle within the rank ----------------------------------
def _row_keys(x: Tensor) -> Tensor:
    flat = x.detach().reshape(x.shape[0], -1).double()
    weights = 1.0 + torch.arange(flat.shape[1], dtype=torch.float64,
                                 device=flat.device) * 0.6180339887498949 % 1.0
    return torch.sort((flat * weights).sum(dim=1)).values


def _local_shuffle(x: Any, x_cor: Any) -> bool:
    """Whether ``x_cor`` holds the rows of ``x`` in another order (a per-rank shuffle)."""
    if not isinstance(x, Tensor) or not isinstance(x_cor, Tensor) or x.dim() < 1 \
            or x.shape != x_cor.shape or x.shape[0] < 2 or not x.is_floating_point():
        return False
    if torch.equal(x.detach(), x_cor.detach()):
        return False
    a, b = _row_keys(x), _row_keys(x_cor)
    scale = max(1.0, float(a.abs().max()))
    return bool(torch.allclose(a, b, rtol=1e-9, atol=1e-9 * scale))


def _check_corruption(self, graph: DistGraph, args: tuple, cor: tuple) -> None:
    fn = self.corruption
    if getattr(fn, "_sar_distributed", False) or getattr(self, "_sar_checked_cor",
                                                         None) == id(fn):
        return
    from pyg_sar.core.collectives import sum_over_ranks
    from pyg_sar.distributed.context import communicator_of as _comm
    shuffled = bool(args) and bool(cor) and _local_shuffle(args[0], cor[0])
    flag = torch.tensor([1.0 if shuffled else 0.0], dtype=torch.float64)
    if int(sum_over_ranks(flag, _comm(graph.context))[0]):
        raise ValueError(
            "pyg_sar: DeepGraphInfomax's corruption permutes the rows of each rank among "
            "themselves (e.g. x[torch.randperm(x.size(0))]), not the nodes of the whole "
            "graph; pass corruption=pyg_sar.nn.infomax.corruption(seed=0), a permutation of "
            "all nodes keyed by (seed, epoch), the same at every number of ranks")
    self._sar_checked_cor = id(fn)


# ---- the converted methods -----------------------------------------------------------------
def _graph_in(args: tuple, kwargs: dict) -> Optional[DistGraph]:
    from pyg_sar.nn.module_forwards import find_graph
    return find_graph(args, kwargs)


def forward(self, *args: Any, **kwargs: Any) -> tuple[Tensor, Tensor, Tensor]:
    """PyG's ``forward``; over a DistGraph the summary is the user's on the global node mean
    and the corruption is checked (see the module docstring)."""
    graph = _graph_in(args, kwargs)
    if graph is None:
        self.__dict__.pop("_sar_context", None)
        return self._sar_base.forward(self, *args, **kwargs)
    self._sar_context = graph.context
    pos_z = self.encoder(*args, **kwargs)
    cor = self.corruption(*args, **kwargs)
    cor = cor if isinstance(cor, tuple) else (cor, )
    _check_corruption(self, graph, args, cor)
    cor_args = cor[:len(args)]
    cor_kwargs = copy.copy(kwargs)
    for key, value in zip(kwargs.keys(), cor[len(args):]):
        cor_kwargs[key] = value
    neg_z = self.encoder(*cor_args, **cor_kwargs)
    summary = _summary(self, pos_z, graph, args, kwargs)
    return pos_z, neg_z, summary


def loss(self, pos_z: Tensor, neg_z: Tensor, summary: Tensor) -> Tensor:
    """PyG's ``loss``; after a forward over a DistGraph both means are over every rank's
    rows (:func:`pyg_sar.nn.functional.global_mean`)."""
    ctx = self.__dict__.get("_sar_context")
    if ctx is None:
        return self._sar_base.loss(self, pos_z, neg_z, summary)
    from torch_geometric.nn.models.deep_graph_infomax import EPS

    from pyg_sar.nn.functional import global_mean
    pos = -torch.log(self.discriminate(pos_z, summary, sigmoid=True) + EPS)
    neg = -torch.log(1 - self.discriminate(neg_z, summary, sigmoid=True) + EPS)
    return global_mean(pos, context=ctx) + global_mean(neg, context=ctx)


def test(self, train_z: Tensor, train_y: Tensor, test_z: Tensor, test_y: Tensor,
         solver: str = "lbfgs", *args: Any, **kwargs: Any) -> float:
    """PyG's ``test``; after a forward over a DistGraph of several ranks, the train and test
    rows of every rank are gathered to every rank first (``O(train + test rows)`` per rank,
    rank order), so every rank fits the same classifier on the whole graph's rows and
    returns the same accuracy. Collective."""
    ctx = self.__dict__.get("_sar_context")
    from pyg_sar.distributed.context import communicator_of as _comm
    comm = _comm(ctx) if ctx is not None else None
    if comm is None:
        return self._sar_base.test(self, train_z, train_y, test_z, test_y, solver, *args,
                                   **kwargs)
    whole = [_allgather_rows(comm, t) for t in (train_z, train_y, test_z, test_y)]
    return self._sar_base.test(self, *whole, solver, *args, **kwargs)


def _allgather_rows(comm: Any, t: Tensor) -> Tensor:
    """Every rank's rows of ``t`` concatenated in rank order, on every rank (row counts by
    one all-gather, then one all-to-all sending the rank's rows to every rank)."""
    t = t.detach().contiguous()
    counts = [int(c) for c in comm.allgather_object(int(t.shape[0]))]
    world = len(counts)
    out = t.new_empty((sum(counts), *t.shape[1:]))
    comm.all_to_all_single(out, torch.cat([t] * world), counts, [int(t.shape[0])] * world)
    return out


# ---- the converted class -------------------------------------------------------------------
def _reduce_ex(self, protocol: int) -> tuple:
    # The generated class cannot be found by name: pickle (and deepcopy) the PyG class and the
    # state without the communicator; the next call over a DistGraph sets it again.
    return _new_converted, (type(self)._sar_base,), _getstate(self)


def _getstate(self) -> dict:
    state = dict(self.__dict__)
    for key in _RUNTIME:
        state.pop(key, None)
    return state


def _setstate(self, state: dict) -> None:
    torch.nn.Module.__setstate__(self, state)


def _new_converted(base: type) -> Any:
    """An empty converted ``DeepGraphInfomax`` (unpickling; its state is set next)."""
    cls = _converted_class(base)
    return cls.__new__(cls)


_METHODS = ("forward", "loss", "test")


def _converted_class(base: type) -> type:
    cls = _CLASSES.get(base)
    if cls is None:
        cls = type(base.__name__, (base,), {
            "__module__": __name__, "__qualname__": base.__qualname__,
            "__doc__": f"{base.__name__} converted by pyg_sar.convert (see {__name__}).",
            # _sar_embedding_model: unconvert gives the PyG class back (as for LightGCN)
            "_sar_base": base, "_sar_embedding_model": True,
            "forward": forward, "loss": loss, "test": test,
            "__reduce_ex__": _reduce_ex, "__getstate__": _getstate,
            "__setstate__": _setstate})
        _CLASSES[base] = cls
    return cls


def convert_infomax(model: torch.nn.Module) -> None:
    """Give every ``DeepGraphInfomax`` in ``model`` the converted class (methods above); a
    second call changes nothing. A subclass that overrides ``forward``, ``loss`` or ``test``
    is refused (:class:`~pyg_sar.UnsupportedLayerError`): its own method would be skipped."""
    from torch_geometric.nn.models import DeepGraphInfomax

    from pyg_sar.nn.layers import UnsupportedLayerError
    for name, module in model.named_modules():
        if not isinstance(module, DeepGraphInfomax):
            continue
        base = getattr(type(module), "_sar_base", type(module))
        overridden = sorted({m for klass in base.__mro__[:base.__mro__.index(
            DeepGraphInfomax)] for m in _METHODS if m in klass.__dict__})
        if overridden:
            raise UnsupportedLayerError(
                f"pyg_sar.convert: layer '{name or base.__name__}' ({base.__name__}) "
                f"overrides {', '.join(overridden)} of DeepGraphInfomax, which pyg_sar "
                f"replaces to run over a partition; derive without overriding them")
        module.__class__ = _converted_class(base)


__all__ = ["NodePermutation", "corruption", "distributed_summary", "node_mean",
           "permutation", "permute_ids"]
