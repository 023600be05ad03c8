r"""PyG's graph auto-encoders (``GAE``, ``VGAE``, ``ARGA``, ``ARGVA``) over a partitioned graph
(set up by :func:`pyg_sar.convert`).

Their encoder is an ordinary model of PyG layers (converted as any other); what spans the
whole graph is in the other methods: the decoder scores node pairs whose ends may live on any
rank, the losses are means over all nodes or pairs, the test metrics rank every pair, and the
variational and adversarial models draw noise per node. :func:`pyg_sar.convert` gives every
such model a converted class whose methods, after ``encode`` (or ``forward``) ran over a
:class:`~pyg_sar.DistGraph`, do the single-process computation over the ranks:

* ``encode(x, graph)`` runs the encoder and remembers the graph (its ranks, node ranges and
  original node ids) for the methods below; ``z`` holds the rank's rows in local order;
* ``decode(z, edge_index)``, ``recon_loss(z, pos_edge_index, neg_edge_index=None)`` and
  ``test(z, pos_edge_index, neg_edge_index)`` take pairs of NEW global ids (what
  :func:`pyg_sar.distribute`'s link split gives: each rank passes its own share); the rows of
  the pairs' ends are fetched from their owners with :func:`pyg_sar.gather` (one exchange per
  pair set) and the decoder runs on them, so any decoder that scores
  ``decoder(z, edge_index)`` from the rows ``z[edge_index]`` works, PyG's
  ``InnerProductDecoder`` included;
* ``recon_loss`` is PyG's ``-log(sigmoid(pos) + EPS).mean() - log(1 - sigmoid(neg) +
  EPS).mean()`` with each mean over the pairs of ALL ranks
  (:func:`pyg_sar.nn.functional.global_mean`). Without ``neg_edge_index`` it draws one
  negative per positive from the whole graph with :func:`pyg_sar.link.negative_sampling`
  (both ends uniform, edges of the encoded graph and self-loops redrawn, as PyG's
  ``negative_sampling`` redraws the positive pairs), keyed by ``(seed, epoch)`` with ``seed``
  the model's :attr:`sar_seed` (default 0) and ``epoch`` the number of earlier calls of this
  model that drew negatives over a DistGraph (0, 1, 2, ...), and by the positives' global slot
  numbers (rank ``r``'s positives are slots ``[m_0 + ... + m_{r-1}, ... + m_r)``): the same
  negative pairs for every number of ranks, which
  :func:`pyg_sar.link.reference_negative_sampling` gives a single-process run
  (``keys=arange(M)``, ``reject_existing=True``, the encoded graph's edges). They are not
  PyG's own random draws, which no partition can reproduce;
* ``test`` returns ``(AUC, AP)`` over the pairs of all ranks
  (:func:`pyg_sar.link.roc_auc`, :func:`pyg_sar.link.average_precision`), equal to
  scikit-learn's ``roc_auc_score`` / ``average_precision_score`` on all pairs, as Python floats;
* ``VGAE.kl_loss`` is PyG's ``-0.5 * mean over nodes of sum(1 + 2 logstd - mu**2 -
  exp(logstd)**2)`` with the mean over the nodes of all ranks; ``__mu__`` / ``__logstd__``
  hold the rank's rows;
* ``VGAE.reparametrize`` in training mode adds ``N(0, 1)`` noise drawn per (node, channel)
  from a counter-based generator keyed by the node's ORIGINAL id (``DistGraph.node_ids``),
  :attr:`sar_seed` and the model's count of earlier training reparametrizations over a
  DistGraph (:func:`keyed_normal`, kind ``"reparametrize"``): every number of ranks draws the
  same noise for a node, and a single-process run gets it from :func:`keyed_normal` over
  ``arange(N)``. Not torch's ``randn_like`` stream; eval mode returns ``mu`` as PyG does;
* ``ARGA.reg_loss`` and ``ARGA.discriminator_loss`` are PyG's with every mean over the nodes
  of all ranks; the discriminator's "real" samples (PyG: ``randn_like(z)``) are
  :func:`keyed_normal` rows of the rank's nodes (kind ``"prior"``, counted per call). The
  discriminator's parameters are the model's: their gradients are summed over ranks as every
  other parameter's.

Every one of these methods is collective over a DistGraph: every rank calls it, in the same
order (a rank without pairs passes empty ones). The draw counters live on the model object
(``_sar_draws``), are the same on every rank and are saved in checkpoints
(:func:`pyg_sar.save_checkpoint`), so a resumed run draws on. A plain Tensor
``edge_index`` given to ``encode`` / ``forward`` runs PyG's own methods until the next
``encode`` over a DistGraph. A user subclass keeps the methods it overrides (they then run on
the rank's rows as written).
"""
from __future__ import annotations

import functools
import inspect
import math
from typing import Any, Optional

import torch
from torch import Tensor

from pyg_sar.graph import DistGraph

EPS = 1e-15          # PyG's autoencoder EPS
MAX_LOGSTD = 10      # PyG's clamp of logstd
GRAPH = "_sar_graph"  # the DistGraph of the last encode (None: PyG's behaviour)
DRAWS = "_sar_draws"  # counters of the keyed draws, by kind
KINDS = {"reparametrize": 1, "prior": 2}  # keyed_normal streams
_TAG = 0x474145  # separates these draws from other users of (seed, epoch)
_CLASSES: dict[type, type] = {}


# ---- keyed noise -------------------------------------------------------------------------
def keyed_normal(node_ids: Tensor, num_channels: int, *, seed: int, epoch: int,
                 kind: str = "reparametrize", dtype: torch.dtype = torch.float64,
                 device: Optional[torch.device] = None) -> Tensor:
    r"""Standard normal noise ``[n, num_channels]``, row ``i`` a function of ``(kind, seed,
    epoch, node_ids[i], channel)`` only (Box-Muller on two counter-based uniforms of
    :mod:`pyg_sar.ops.sampling_rng`): the same for a node on every number of ranks.

    Args:
        node_ids: ``[n]`` ORIGINAL node ids of the rows (single process: ``arange(N)``).
        num_channels: columns.
        seed, epoch: non-negative integers (the model's ``sar_seed`` and draw counter).
        kind: ``"reparametrize"`` (VGAE's noise) or ``"prior"`` (ARGA's real samples).
        dtype, device: of the result (drawn in float64, then cast).
    """
    from pyg_sar.ops.sampling_rng import combine_tensor, dart_tensor, make_key
    if kind not in KINDS:
        raise ValueError(f"keyed_normal: kind must be one of {sorted(KINDS)} (got {kind!r})")
    device = node_ids.device if device is None else device
    ids = node_ids.to(device=device, dtype=torch.long)
    base = torch.tensor(make_key(_TAG, KINDS[kind], seed, epoch), dtype=torch.long,
                        device=device)
    rows = combine_tensor(base, ids)[:, None]
    c = torch.arange(num_channels, dtype=torch.long, device=device)[None, :]
    u1 = dart_tensor(rows, 2 * c)
    u2 = dart_tensor(rows, 2 * c + 1)
    noise = torch.sqrt(-2.0 * torch.log1p(-u1)) * torch.cos((2.0 * math.pi) * u2)
    return noise.to(dtype)


def _node_ids(graph: DistGraph, device: torch.device) -> Tensor:
    """Original ids of the rank's rows (the new ids where the graph has none)."""
    if graph.node_ids is not None:
        return graph.node_ids.to(device)
    lo, hi = graph.node_offsets[graph.rank], graph.node_offsets[graph.rank + 1]
    return torch.arange(lo, hi, device=device)


def _next_draw(self, kind: str) -> int:
    draws = self.__dict__.setdefault(DRAWS, {})
    epoch = int(draws.get(kind, 0))
    draws[kind] = epoch + 1
    return epoch


def _seed(self) -> int:
    return int(self.__dict__.get("_sar_seed", 0))


def _noise_like(self, z: Tensor, kind: str) -> Tensor:
    graph = self.__dict__[GRAPH]
    _check_rows(z, graph, "z")
    flat = z.reshape(z.shape[0], -1)
    noise = keyed_normal(_node_ids(graph, z.device), flat.shape[1], seed=_seed(self),
                         epoch=_next_draw(self, kind), kind=kind, dtype=z.dtype,
                         device=z.device)
    return noise.reshape(z.shape)


# ---- pairs -------------------------------------------------------------------------------
@functools.lru_cache(maxsize=1)
def _gather_kwargs() -> tuple:
    from pyg_sar.link.gather import gather
    return (("ids", "new"),) if "ids" in inspect.signature(gather).parameters else ()


def _gather(z: Tensor, index: Tensor, graph: DistGraph) -> Tensor:
    """``z_global[index]`` for NEW global ids ``index``."""
    from pyg_sar.link.gather import gather
    return gather(z, index, node_offsets=graph.node_offsets, context=graph.context,
                  name="autoencoder", **dict(_gather_kwargs()))


def _check_rows(z: Tensor, graph: DistGraph, what: str) -> None:
    n = graph.num_nodes_of(graph.rank)
    if not isinstance(z, Tensor) or z.dim() < 1 or z.shape[0] != n:
        shape = tuple(z.shape) if isinstance(z, Tensor) else type(z).__name__
        raise ValueError(f"pyg_sar: {what} must hold this rank's {n} node rows in local order "
                         f"(the output of model.encode over the DistGraph; got {shape})")


def _check_pairs(pairs: Any, what: str) -> Tensor:
    if not isinstance(pairs, Tensor) or pairs.dim() != 2 or pairs.shape[0] != 2:
        shape = tuple(pairs.shape) if isinstance(pairs, Tensor) else type(pairs).__name__
        raise ValueError(f"pyg_sar: {what} must be [2, n] NEW global node ids (this rank's "
                         f"pairs, e.g. part.pos_edge_label_index; got {shape})")
    return pairs


def _decode_pairs(self, z: Tensor, pairs: Tensor, *args: Any, **kwargs: Any) -> Tensor:
    """The decoder on the pairs ``pairs`` (new global ids): the distinct ends' rows fetched
    from their owners, the pairs renumbered into them."""
    graph = self.__dict__[GRAPH]
    pairs = _check_pairs(pairs, "edge_index")
    uniq, inverse = torch.unique(pairs.reshape(-1).to(z.device), return_inverse=True)
    rows = _gather(z, uniq, graph)
    return self.decoder(rows, inverse.view(2, -1), *args, **kwargs)


def _distributed(self) -> Optional[DistGraph]:
    return self.__dict__.get(GRAPH)


# ---- the converted methods ---------------------------------------------------------------
def _remember(self, args: tuple, kwargs: dict) -> None:
    from pyg_sar.nn.module_forwards import find_graph
    self.__dict__[GRAPH] = find_graph(args, kwargs)


def forward(self, *args: Any, **kwargs: Any) -> Any:
    """PyG's ``forward`` (the encoder); remembers the DistGraph it runs over."""
    _remember(self, args, kwargs)
    return self._sar_base.forward(self, *args, **kwargs)


def encode(self, *args: Any, **kwargs: Any) -> Any:
    """PyG's ``encode``; remembers the DistGraph it runs over (the pair methods use it)."""
    _remember(self, args, kwargs)
    return self._sar_base.encode(self, *args, **kwargs)


def decode(self, *args: Any, **kwargs: Any) -> Tensor:
    """PyG's ``decode``; after ``encode`` over a DistGraph, ``decode(z, edge_index, ...)``
    scores pairs of NEW global ids (their ends fetched from their owners), returned as
    :class:`~pyg_sar.link.PairRows` (the rank's share: torch's losses on them are global)."""
    if _distributed(self) is None or len(args) < 2:
        return self._sar_base.decode(self, *args, **kwargs)
    out = _decode_pairs(self, args[0], args[1], *args[2:], **kwargs)
    if isinstance(out, Tensor) and out.dim() and out.shape[0] == args[1].shape[-1]:
        # one score per pair: this rank's share of the scores of all ranks' pairs, so that
        # torch's losses on them (BCE-with-logits on cat([pos, neg])) reduce over every rank
        from pyg_sar.link.pair_ids import as_pair_rows
        out = as_pair_rows(out, self.__dict__[GRAPH])
    return out


def recon_loss(self, z: Tensor, pos_edge_index: Tensor,
               neg_edge_index: Optional[Tensor] = None) -> Tensor:
    """PyG's ``recon_loss``; after ``encode`` over a DistGraph the global loss (module
    docstring): pairs of NEW global ids, negatives keyed by ``(sar_seed, draw count)``."""
    graph = _distributed(self)
    if graph is None:
        return self._sar_base.recon_loss(self, z, pos_edge_index, neg_edge_index)
    from pyg_sar.nn.functional import global_mean
    _check_rows(z, graph, "z")
    pos_edge_index = _check_pairs(pos_edge_index, "pos_edge_index")
    pos = _decode_pairs(self, z, pos_edge_index, sigmoid=True)
    pos_loss = global_mean(-torch.log(pos + EPS), context=graph.context)
    if neg_edge_index is None:
        neg_edge_index = _sample_negatives(self, graph, int(pos_edge_index.shape[1]),
                                           z.device)
    neg = _decode_pairs(self, z, _check_pairs(neg_edge_index, "neg_edge_index"),
                        sigmoid=True)
    neg_loss = global_mean(-torch.log(1 - neg + EPS), context=graph.context)
    return pos_loss + neg_loss


def _sample_negatives(self, graph: DistGraph, count: int, device: torch.device) -> Tensor:
    """One negative per positive, keyed by the positives' global slot numbers."""
    from pyg_sar.link.gather import row_offsets
    from pyg_sar.link.negatives import negative_sampling
    comm = graph.context.comm if graph.world_size > 1 else None
    offsets = row_offsets(count, comm)
    keys = torch.arange(offsets[graph.rank], offsets[graph.rank + 1], device=device)
    return negative_sampling(graph, keys, seed=_seed(self),
                             epoch=_next_draw(self, "negatives"), reject_existing=True)


def test(self, z: Tensor, pos_edge_index: Tensor, neg_edge_index: Tensor):
    """PyG's ``test``: ``(AUC, AP)``; after ``encode`` over a DistGraph over the pairs of all
    ranks (NEW global ids), as Python floats equal on every rank."""
    graph = _distributed(self)
    if graph is None:
        return self._sar_base.test(self, z, pos_edge_index, neg_edge_index)
    from pyg_sar.link.metrics import average_precision, roc_auc
    _check_rows(z, graph, "z")
    pos_pred = _decode_pairs(self, z, _check_pairs(pos_edge_index, "pos_edge_index"),
                             sigmoid=True)
    neg_pred = _decode_pairs(self, z, _check_pairs(neg_edge_index, "neg_edge_index"),
                             sigmoid=True)
    pred = torch.cat([pos_pred, neg_pred]).detach()
    y = torch.cat([z.new_ones(pos_pred.shape[0]), z.new_zeros(neg_pred.shape[0])])
    return (float(roc_auc(pred, y, context=graph.context)),
            float(average_precision(pred, y, context=graph.context)))


def reparametrize(self, mu: Tensor, logstd: Tensor) -> Tensor:
    """VGAE's ``reparametrize``; in training mode after ``encode`` over a DistGraph the
    noise is :func:`keyed_normal` of the rank's nodes (original ids)."""
    if _distributed(self) is None or not self.training:
        return self._sar_base.reparametrize(self, mu, logstd)
    return mu + _noise_like(self, logstd, "reparametrize") * torch.exp(logstd)


def kl_loss(self, mu: Optional[Tensor] = None, logstd: Optional[Tensor] = None) -> Tensor:
    """VGAE's ``kl_loss``; after ``encode`` over a DistGraph the node mean is over the nodes
    of all ranks."""
    graph = _distributed(self)
    if graph is None:
        return self._sar_base.kl_loss(self, mu, logstd)
    from pyg_sar.nn.functional import global_mean
    mu = self.__mu__ if mu is None else mu
    logstd = self.__logstd__ if logstd is None else logstd.clamp(max=MAX_LOGSTD)
    per_node = torch.sum(1 + 2 * logstd - mu ** 2 - logstd.exp() ** 2, dim=1)
    return -0.5 * global_mean(per_node, context=graph.context)


def reg_loss(self, z: Tensor) -> Tensor:
    """ARGA's ``reg_loss``; after ``encode`` over a DistGraph the mean over all ranks' nodes."""
    graph = _distributed(self)
    if graph is None:
        return self._sar_base.reg_loss(self, z)
    from pyg_sar.nn.functional import global_mean
    _check_rows(z, graph, "z")
    real = torch.sigmoid(self.discriminator(z))
    return global_mean(-torch.log(real + EPS), context=graph.context)


def discriminator_loss(self, z: Tensor) -> Tensor:
    """ARGA's ``discriminator_loss``; after ``encode`` over a DistGraph the means are over all
    ranks' nodes and the real samples :func:`keyed_normal` rows (kind ``"prior"``)."""
    graph = _distributed(self)
    if graph is None:
        return self._sar_base.discriminator_loss(self, z)
    from pyg_sar.nn.functional import global_mean
    _check_rows(z, graph, "z")
    real = torch.sigmoid(self.discriminator(_noise_like(self, z, "prior")))
    fake = torch.sigmoid(self.discriminator(z.detach()))
    real_loss = global_mean(-torch.log(real + EPS), context=graph.context)
    fake_loss = global_mean(-torch.log(1 - fake + EPS), context=graph.context)
    return real_loss + fake_loss


def _get_seed(self) -> int:
    return _seed(self)


def _set_seed(self, value: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"pyg_sar: sar_seed must be a non-negative integer (got {value!r})")
    for module in self.modules():  # ARGVA's inner VGAE draws with the same seed
        if getattr(type(module), "_sar_autoencoder", False):
            module.__dict__["_sar_seed"] = int(value)


SAR_SEED = property(_get_seed, _set_seed, doc=(
    "Seed of the keyed draws over a DistGraph (negatives, reparametrization noise, prior "
    "samples); 0 by default, the same on every rank. Setting it sets it on nested "
    "auto-encoders too (ARGVA's VGAE)."))


# ---- the class ---------------------------------------------------------------------------
def _reduce_ex(self, protocol: int) -> tuple:
    # The generated class cannot be found by name: pickle (and deepcopy) the PyG class and the
    # state without the graph; the next encode over a DistGraph sets it again.
    return _new_converted, (type(self)._sar_base,), _getstate(self)


def _getstate(self) -> dict:
    state = dict(self.__dict__)
    state.pop(GRAPH, None)
    if DRAWS in state:
        state[DRAWS] = dict(state[DRAWS])
    return state


def _new_converted(base: type) -> Any:
    """An empty converted auto-encoder (unpickling; its state is set next)."""
    cls = _converted_class(base)
    return cls.__new__(cls)


def _methods(base: type) -> dict[str, Any]:
    """The replaced methods of ``base``: those it inherits from PyG's classes unchanged."""
    from torch_geometric.nn.models import autoencoder as ae
    table: list[tuple[type, str, Any]] = [
        (ae.GAE, "forward", forward), (ae.GAE, "encode", encode),
        (ae.GAE, "decode", decode), (ae.GAE, "recon_loss", recon_loss),
        (ae.GAE, "test", test),
        (ae.VGAE, "reparametrize", reparametrize), (ae.VGAE, "kl_loss", kl_loss),
        (ae.ARGA, "reg_loss", reg_loss),
        (ae.ARGA, "discriminator_loss", discriminator_loss)]
    pyg = {ae.GAE, ae.VGAE, ae.ARGA, ae.ARGVA}
    out = {}
    for owner, name, fn in table:
        if not issubclass(base, owner):
            continue
        defined = next(k for k in base.__mro__ if name in vars(k))
        if defined in pyg:  # a user subclass keeps its own override
            out[name] = fn
    return out


def _converted_class(base: type) -> type:
    cls = _CLASSES.get(base)
    if cls is None:
        cls = type(base.__name__, (base,), {
            "__module__": __name__, "__qualname__": base.__qualname__,
            "__doc__": f"{base.__name__} converted by pyg_sar.convert (see {__name__}).",
            "_sar_base": base, "_sar_autoencoder": True, "sar_seed": SAR_SEED,
            **_methods(base),
            "__reduce_ex__": _reduce_ex, "__getstate__": _getstate})
        _CLASSES[base] = cls
    return cls


def convert_autoencoders(model: torch.nn.Module) -> None:
    """Give every ``GAE`` / ``VGAE`` / ``ARGA`` / ``ARGVA`` in ``model`` (and user subclasses)
    the converted class (methods above); a second call changes nothing."""
    from torch_geometric.nn.models.autoencoder import GAE
    for module in model.modules():
        if isinstance(module, GAE):
            base = getattr(type(module), "_sar_base", type(module))
            module.__class__ = _converted_class(base)
