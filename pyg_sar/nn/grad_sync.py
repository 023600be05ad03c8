r"""What a converted model does around each training step, registered once by
:func:`pyg_sar.convert` (as torch's DistributedDataParallel registers its hooks once):

* **Gradient synchronisation.** After every backward pass through the model, each parameter's
  ``.grad`` holds the sum over ranks of what this pass added, which is the single-process
  gradient since every rank's loss is its share of one global loss
  (:mod:`pyg_sar.nn.functional`). Per parameter, a tensor hook runs before the gradient is
  accumulated and sets the gradient accumulated so far aside (``.grad`` becomes ``None``), so
  autograd stores this pass's local gradient alone; a post-accumulate hook records that it
  did. At the end of the pass one callback sums the local gradients over ranks (one small
  all-reduce of which parameters have one anywhere, then bucketed all-reduces in parameter
  order, the same buckets on every rank) and adds the sum to what was set aside:
  ``grad = before + sum over ranks``, bit-identical on every rank. Gradient accumulation over
  several backward passes is therefore exact, ``torch.autograd.grad`` (which accumulates
  nothing) leaves ``.grad`` as it was, and :func:`pyg_sar.all_reduce_gradients` skips the
  gradients summed here.
* **Broadcast** of rank 0's parameters and buffers at :func:`pyg_sar.convert` when the job's
  context exists already, else when :func:`pyg_sar.init` makes it (``distribute`` calls it:
  PyG's ported scripts convert and distribute on one line, convert first), else on the first
  call over a :class:`~pyg_sar.DistGraph` of another communicator (the model's forward, or a
  message-passing layer called through another method).
* **Drift check.** At the end of the first 10 synchronised backward passes and then of every
  ``check_parameters_every``-th (and likewise on training forwards over a DistGraph): the
  per-parameter fingerprints (the sum of its bit patterns) ride on the pass's one small
  all-reduce and find parameters that differ between ranks; it raises naming them.
* **Loss check.** On more than one rank, a backward pass that reaches the model's output, or
  its parameters through any method, without going through a global loss of
  :mod:`pyg_sar.nn.functional` (which marks the pass, :func:`mark_global_loss`) raises on every
  rank: a per-rank loss such as ``F.cross_entropy(out[mask], y[mask])`` would otherwise train a
  different model without a word.

The parameter hooks sit on the parameters themselves, so every use is covered: ``forward``,
``model.encode(...)`` / ``model.decode(...)``, a submodule called alone, a model whose forward
never sees the graph (an MLP on features). They are registered at :func:`pyg_sar.convert`
when the job's context exists (as in every script that distributes its data first), else on
the first call that sees a DistGraph.

Rank-local parameters (a sharded embedding table, :func:`pyg_sar.shard_embedding`: each rank
holds its own nodes' rows, whose gradient is complete on that rank) take part in none of the
three: not summed, not broadcast, not compared.

The state lives in one object per model, ``model._sar_grad_sync`` (a :class:`GradSync`); it
pickles without its hook handles and communicator and re-registers its parameter hooks on the
next forward. :func:`uninstall` removes everything.
"""
from __future__ import annotations

import warnings
import weakref
from collections.abc import Callable, Iterable, Iterator
from typing import Any, Optional

import torch
from torch import Tensor

from pyg_sar.distributed.backward import _MARKS, at_end_of_backward, in_backward
from pyg_sar.distributed.backward import mark_global_loss as mark_global_loss
from pyg_sar.distributed.sync import (
    _bucketed,
    broadcast_parameters,
    clear_synchronised,
    is_rank_local,
    mark_synchronised,
)

STATE = "_sar_grad_sync"
CHECKED_FIRST = 10  # training forwards checked one by one before the interval applies
BUCKET_MB = 25.0

LOSS_FIX = (
    "compute the loss with a global loss of pyg_sar.nn.functional (SF.cross_entropy, "
    "SF.nll_loss, SF.binary_cross_entropy(_with_logits), SF.mse_loss, SF.l1_loss, "
    "SF.kl_div, e.g. SF.nll_loss(out[mask], y[mask]) or SF.nll_loss(out, y, mask)); any "
    "other per-node loss becomes global with SF.global_mean(F.<loss>(out, y, "
    "reduction='none'), mask). A custom reduction that already is this rank's share of a "
    "global loss passes through SF.global_loss(share); SARConfig(check_loss=False) turns "
    "this check off")


def _ddp_runs(module: torch.nn.Module) -> bool:
    """Whether torch DDP is running ``module``'s forward now (DDP then reduces the gradients).

    DDP records the module it runs in a private class attribute (for TorchDynamo); there is no
    public way to ask, so a missing attribute reads as "no".
    """
    ddp_class = torch.nn.parallel.DistributedDataParallel
    active = getattr(ddp_class, "_active_ddp_module", None)
    return active is not None and getattr(active, "module", None) is module


def _tensors(value: Any) -> Iterator[Tensor]:
    if isinstance(value, Tensor):
        yield value
    elif isinstance(value, (tuple, list)):
        for v in value:
            yield from _tensors(v)
    elif isinstance(value, dict):
        for v in value.values():
            yield from _tensors(v)


def _graph_context(value: Any) -> Optional[Any]:
    """The context of ``value`` if it is a graph of pyg_sar (anything carrying a
    :class:`~pyg_sar.distributed.DistContext` as ``.context``, such as a DistGraph)."""
    from pyg_sar.distributed.context import DistContext
    if isinstance(value, (Tensor, str, int, float, bool)) or value is None:
        return None
    try:
        context = getattr(value, "context", None)
    except Exception:  # noqa: BLE001 - an argument's own attribute logic
        return None
    return context if isinstance(context, DistContext) else None


def graph_candidates(args: tuple, kwargs: dict) -> Iterator[Any]:
    """Where a forward's arguments may hold a graph of pyg_sar, in the order it is looked
    for: each argument and, for a dict (a heterogeneous ``edge_index_dict``), its values;
    then the ``edge_index`` / ``adj_t`` / ``edge_index_dict`` (its values) of an argument
    that is a partition passed whole. An attribute that raises is skipped."""
    values = (*args, *kwargs.values())
    for v in values:
        yield v
        if isinstance(v, dict):
            yield from v.values()
    for v in values:
        if isinstance(v, (Tensor, str, int, float, bool)) or v is None:
            continue
        for key in ("edge_index", "adj_t", "edge_index_dict"):
            try:
                value = getattr(v, key, None)
            except Exception:  # noqa: BLE001 - an argument's own attribute logic
                continue
            yield from (value.values() if isinstance(value, dict) else (value,))


def find_context(args: tuple, kwargs: dict) -> Optional[Any]:
    """The context of the graph among a forward's arguments (a DistGraph, a dict of them
    such as a heterogeneous ``edge_index_dict``, or a partition passed whole, whose
    ``edge_index`` / ``adj_t`` / ``edge_index_dict`` holds one), else ``None``."""
    return next((c for c in map(_graph_context, graph_candidates(args, kwargs))
                 if c is not None), None)


def _synced(module: torch.nn.Module) -> list[torch.nn.Parameter]:
    """The trainable parameters whose gradients are summed over ranks: all but the rank-local
    ones (a sharded embedding table, :mod:`pyg_sar.nn.embedding`), whose gradient is complete
    on their rank."""
    return [p for p in module.parameters() if p.requires_grad and not is_rank_local(p)]


def _bits(t: Tensor) -> Tensor:
    """``t``'s bit patterns as integers of its element size (one per element)."""
    flat = t.detach().reshape(-1)
    as_int = {8: torch.int64, 4: torch.int32, 2: torch.int16, 1: torch.int8}
    if flat.dtype == torch.bool:
        return flat.to(torch.int8)
    return flat.view(as_int[flat.element_size()])


def fingerprints(tensors: list[Tensor], device: torch.device) -> Tensor:
    """One int64 per tensor: the (wrapping) sum of its bit patterns; equal on two ranks for
    bit-identical tensors, different for nearly any difference."""
    if not tensors:
        return torch.zeros(0, dtype=torch.int64, device=device)
    return torch.stack([_bits(t).sum(dtype=torch.int64).to(device) for t in tensors])


class GradSync:
    """The training-step state of one converted model (see the module docstring).

    Args:
        config: the model's :class:`~pyg_sar.SARConfig` (``sync_gradients``,
            ``broadcast_parameters``, ``check_parameters_every``, ``check_loss``).
    """

    def __init__(self, config: Any) -> None:
        self.configure(config)
        self.forward_handles: list = []
        self._reset_runtime()

    def _reset_runtime(self) -> None:
        self._params: list[torch.nn.Parameter] = []
        self._names: list[str] = []
        self._param_handles: list = []
        self._installed = False
        self._context = None          # of the last forward over a DistGraph (world size > 1)
        self._forward_context = None  # of the forward now running, once its graph is seen
        self._root = None             # weak reference to the model (set by each forward)
        self._in_forward = False
        self._under_ddp = False
        self._broadcast_done: list = []  # contexts whose rank 0 parameters were broadcast
        self._broadcast_pending = False
        self._training_forwards = 0
        self._backward_passes = 0
        self._pass_global = False     # a global loss's backward ran in the pass now running
        self._stash: dict[int, Optional[Tensor]] = {}
        self._accumulated: set[int] = set()
        self._queued = False

    def configure(self, config: Any) -> None:
        """Take the settings of ``config`` (a later :func:`pyg_sar.convert` call)."""
        self.sync = bool(config.sync_gradients)
        self.broadcast = bool(config.broadcast_parameters)
        self.check_every = int(config.check_parameters_every)
        self.check_loss = bool(config.check_loss)
        if not self.sync and getattr(self, "_installed", False):
            self.remove_parameter_hooks()

    # ---- pickling: hook handles and communicators stay behind -------------------------
    def __getstate__(self) -> dict:
        keep = ("sync", "broadcast", "check_every", "check_loss", "forward_handles")
        return {k: self.__dict__[k] for k in keep}

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._reset_runtime()

    # ---- parameter hooks ----------------------------------------------------------------
    def install_parameter_hooks(self, module: torch.nn.Module) -> None:
        """Register the two gradient hooks on each of ``module``'s trainable parameters."""
        self.remove_parameter_hooks()
        self._params = _synced(module)
        names = {id(p): n for n, p in module.named_parameters()}
        self._names = [names.get(id(p), f"parameter {i}") for i, p in enumerate(self._params)]
        for i, p in enumerate(self._params):
            self._param_handles.append(p.register_hook(self._before_accumulate(i)))
            self._param_handles.append(
                p.register_post_accumulate_grad_hook(self._after_accumulate(i)))
        self._installed = True

    def remove_parameter_hooks(self) -> None:
        for handle in self._param_handles:
            handle.remove()
        for p in self._params:
            clear_synchronised(p.grad)  # later passes accumulate unsynchronised parts
        self._param_handles = []
        self._params = []
        self._installed = False

    def remove(self) -> None:
        """Remove every hook this state registered (parameters and forward hooks)."""
        self.remove_parameter_hooks()
        for handle in self.forward_handles:
            handle.remove()
        self.forward_handles = []

    def _hooks_current(self, module: torch.nn.Module) -> bool:
        """Whether the hooks sit on exactly the module's trainable parameters (parameters
        frozen, unfrozen or added since are picked up at the next forward)."""
        if not self._installed:
            return False
        now = _synced(module)
        return len(now) == len(self._params) and all(a is b for a, b in zip(now, self._params))

    def _active(self) -> bool:
        return (self.sync and self._context is not None and self._context.world_size > 1
                and not self._under_ddp)

    def attach(self, module: torch.nn.Module) -> None:
        """At :func:`pyg_sar.convert`: where the job's context is known already (made by
        :func:`pyg_sar.init` or :func:`pyg_sar.distribute` before ``convert``, as in every
        script that runs on several ranks), broadcast rank 0's parameters and register the
        gradient hooks now, so that every use of the parameters is covered: ``forward``, any
        other method (``encode``, ``decode``, ``recon_loss``), a submodule called alone, a
        model that never sees the graph (an MLP on features). Otherwise both wait for the
        first call that sees a DistGraph."""
        from pyg_sar.distributed.context import call_after_init, resolve_context
        self._root = weakref.ref(module)
        context = resolve_context(None, create=False)
        if context is not None and context.world_size > 1:
            self._on_graph(module, context, late=False, count_forward=False)
        elif context is None:
            # Converted before the job's context exists (PyG's ports convert and distribute
            # on one line, convert first): broadcast when init() makes it, which every rank
            # runs (distribute calls it), before the model's first use.
            _AWAITING_CONTEXT.append(weakref.ref(self))
            call_after_init(_attach_awaiting)

    def _before_accumulate(self, i: int) -> Callable[[Tensor], None]:
        def hook(grad: Tensor) -> None:
            p = self._params[i]
            if not self._active():
                clear_synchronised(p.grad)
                return
            self._pass_global = self._pass_global or _MARKS.global_loss
            if i not in self._stash:
                # Autograd then stores this pass's local gradient alone in p.grad.
                self._stash[i] = p.grad
                p.grad = None
            self._queue_finalize()
        return hook

    def _after_accumulate(self, i: int) -> Callable[[Tensor], None]:
        def hook(param: Tensor) -> None:
            if i in self._stash:
                self._accumulated.add(i)
        return hook

    def _queue_finalize(self) -> None:
        if not self._queued:
            self._queued = True
            at_end_of_backward(self._finalize)

    def _finalize(self) -> None:
        """End of a backward pass: ``grad = before + sum over ranks of this pass's part``."""
        stash, accumulated = self._stash, self._accumulated
        self._stash, self._accumulated, self._queued = {}, set(), False
        ctx = self._context
        if ctx is None or ctx.world_size == 1:
            self._pass_global = False
            for i, before in stash.items():
                if i not in accumulated:
                    self._params[i].grad = before
            return
        params = self._params
        for i in accumulated:
            if params[i].grad.is_sparse:
                raise RuntimeError(
                    "pyg_sar: automatic gradient synchronisation does not support sparse "
                    f"gradients (parameter of shape {tuple(params[i].shape)}); use "
                    "SARConfig(sync_gradients=False) and reduce them yourself")
        # One collective carries which parameters have a gradient anywhere, whether any rank
        # ran this pass from a per-rank loss, and (when due) the parameters' fingerprints:
        # whichever method of the model ran, a wrong loss or drifted parameters raise here,
        # on every rank alike, before anything is summed.
        n = len(params)
        local_loss = self.check_loss and bool(accumulated) and not self._pass_global
        self._pass_global = False
        self._backward_passes += 1
        drift_due = self.check_every > 0 and (self._backward_passes <= CHECKED_FIRST or
                                              self._backward_passes % self.check_every == 0)
        head = torch.zeros(n + 1, dtype=torch.int64, device=ctx.device)
        if accumulated:
            head[sorted(accumulated)] = 1
        head[n] = int(local_loss)
        message = head
        if drift_due:
            mine = fingerprints(list(params), ctx.device)
            message = torch.cat([head, mine, -mine])
        ctx.comm.all_reduce(message, op="max")
        if int(message[n]):
            self._restore(stash)
            raise RuntimeError(
                f"pyg_sar: a backward pass on {ctx.world_size} ranks reached the converted "
                f"model's parameters from a loss that is not reduced over ranks (such as "
                f"PyG's F.cross_entropy(out[mask], y[mask]) or a plain .mean() over this "
                f"rank's rows or pairs): each rank would train on its own share's mean and the "
                f"summed gradients are not the single-process ones. Fix: {LOSS_FIX}.")
        if drift_due:
            differ = (message[n + 1:2 * n + 1] != -message[2 * n + 1:]).tolist()
            bad = [self._names[i] for i, d in enumerate(differ) if d]
            if bad:
                self._restore(stash)
                raise RuntimeError(self._drift_message(bad, f"{self._backward_passes} "
                                                            f"backward pass(es)"))
        flags = message[:n].tolist()
        parts, owners = [], []
        for i, p in enumerate(params):
            if not flags[i]:
                if i in stash:  # e.g. torch.autograd.grad: nothing was accumulated anywhere
                    p.grad = stash[i]
                continue
            parts.append(p.grad if i in accumulated else torch.zeros_like(p))
            owners.append(i)
        _bucketed(parts, BUCKET_MB, lambda flat: ctx.comm.all_reduce(flat, op="sum"))
        for i, total in zip(owners, parts):
            p = params[i]
            before = stash[i] if i in stash else p.grad
            if before is None:
                grad = total
            elif before.requires_grad or before.is_sparse:
                grad = before + total
            else:
                grad = before.add_(total)  # in place, as autograd accumulates
            p.grad = grad
            mark_synchronised(grad)

    def _restore(self, stash: dict[int, Optional[Tensor]]) -> None:
        """Give the parameters back the gradients they had before a refused pass."""
        for i, before in stash.items():
            if i < len(self._params):
                self._params[i].grad = before
        self._pass_global = False
        _MARKS.reset()

    def _abandon_pass(self) -> None:
        """A backward pass ended in an exception before its end-of-pass callback: give the
        parameters back the gradients they had before it, and forget its marks."""
        self._restore(self._stash)
        self._stash, self._accumulated, self._queued = {}, set(), False

    # ---- forward hooks --------------------------------------------------------------------
    def before_forward(self, module: torch.nn.Module, args: tuple, kwargs: dict) -> None:
        """Pre-hook of the converted model: a forward starts."""
        if (self._stash or self._queued or _MARKS.global_loss) and not in_backward():
            self._abandon_pass()
        self._root = weakref.ref(module)
        self._in_forward = True
        self._forward_context = None
        self._under_ddp = _ddp_runs(module)
        context = find_context(args, kwargs)
        if context is not None:
            self._on_graph(module, context, late=False)
        elif self._active() and not self._hooks_current(module):
            # A forward that never sees the graph (an MLP on features) in a job whose context
            # is known: parameters frozen, unfrozen or added since are covered too.
            self._install_if_ready(module)

    def before_layer(self, layer: torch.nn.Module, args: tuple, kwargs: dict) -> None:
        """Pre-hook of each message-passing layer: finds the DistGraph of a model that reads
        it from elsewhere than its arguments (``model()`` over a captured ``data``), or that
        is called through another method than ``forward`` (``model.encode(x, graph)``, a
        submodule called alone)."""
        if self._in_forward and self._forward_context is not None:
            return
        root = self._root() if self._root is not None else None
        if root is None:
            return
        context = find_context(args, kwargs)
        if context is not None:
            self._on_graph(root, context, late=True, count_forward=self._in_forward)

    def _install_if_ready(self, module: torch.nn.Module) -> None:
        lazy = any(isinstance(p, torch.nn.parameter.UninitializedParameter)
                   for p in module.parameters())
        if self.sync and not lazy:
            self.install_parameter_hooks(module)

    def _on_graph(self, module: torch.nn.Module, context: Any, late: bool,
                  count_forward: bool = True) -> None:
        """The model runs over a DistGraph of ``context`` (or, at ``convert``, in a job of
        that context): broadcast, checks, hooks. ``count_forward``: a training forward of the
        model, checked for drifted parameters on the first ones and then at the interval."""
        if context is None or context.world_size == 1:
            return
        self._context = self._forward_context = context
        lazy = any(isinstance(p, torch.nn.parameter.UninitializedParameter)
                   for p in module.parameters())
        if self.sync and not lazy and not self._hooks_current(module):
            self.install_parameter_hooks(module)
        broadcast_now = self.broadcast and not any(c is context for c in self._broadcast_done)
        if broadcast_now and lazy:  # the layers create their parameters in this forward
            self._broadcast_pending = True
        elif broadcast_now and late:
            # Part of the model may have run already with this rank's own values: broadcast
            # only if they differ, and say that this first step is then not exact.
            if self.differing_parameters(module):
                broadcast_parameters(module, src=0, ctx=context)
                warnings.warn(
                    "pyg_sar: the ranks' parameters differed and rank 0's were copied to every "
                    "rank during the first forward, after part of the model had run with "
                    "each rank's own values (the model reads the DistGraph from elsewhere "
                    "than its arguments), so this first step is not exact. Seed every rank "
                    "alike or call pyg_sar.broadcast_parameters(model) before training.",
                    RuntimeWarning, stacklevel=2)
            self._broadcast_done.append(context)
        elif broadcast_now:
            broadcast_parameters(module, src=0, ctx=context)
            self._broadcast_done.append(context)
        if count_forward and module.training and self.check_every > 0:
            self._training_forwards += 1
            n = self._training_forwards
            if (n <= CHECKED_FIRST or n % self.check_every == 0) and not broadcast_now:
                self.check_parameters(module)

    def after_forward(self, module: torch.nn.Module, args: tuple, kwargs: dict,
                      output: Any) -> None:
        """Post-hook of the converted model: a forward ends."""
        self._in_forward = False
        if self._forward_context is None:
            return
        if self._broadcast_pending:
            self._broadcast_pending = False
            with torch.no_grad():
                broadcast_parameters(module, src=0, ctx=self._context)
            self._broadcast_done.append(self._context)
        if self.sync and not self._hooks_current(module):
            self.install_parameter_hooks(module)
        if (self.check_loss or self._active()) and torch.is_grad_enabled():
            for t in _tensors(output):
                if t.requires_grad:
                    t.register_hook(self._on_output_grad)

    def _on_output_grad(self, grad: Tensor) -> None:
        self._pass_global = self._pass_global or _MARKS.global_loss
        if not _MARKS.global_loss and self.check_loss:
            ranks = self._context.world_size if self._context is not None else "several"
            raise RuntimeError(
                f"pyg_sar: backward through a converted model's output on {ranks} ranks from "
                f"a loss that is not reduced over ranks (such as PyG's "
                f"F.cross_entropy(out[mask], y[mask])): each rank would train on its own "
                f"nodes' mean and the summed gradients are not the single-process ones. "
                f"Fix: {LOSS_FIX}.")
        if self._active():
            self._queue_finalize()  # every rank reduces, even one whose parameters got none

    def differing_parameters(self, module: torch.nn.Module) -> list[str]:
        """Names of the parameters that are not bit-identical on every rank (one small
        all-reduce of per-parameter fingerprints)."""
        ctx = self._context
        named = [(n, p) for n, p in module.named_parameters()
                 if not isinstance(p, torch.nn.parameter.UninitializedParameter)
                 and not is_rank_local(p)]
        mine = fingerprints([p for _, p in named], ctx.device)
        both = torch.cat([mine, -mine])
        ctx.comm.all_reduce(both, op="max")
        differ = (both[:len(named)] != -both[len(named):]).tolist()
        return [n for (n, _), d in zip(named, differ) if d]

    def check_parameters(self, module: torch.nn.Module) -> None:
        """Raise unless every rank holds bit-identical parameters."""
        bad = self.differing_parameters(module)
        if bad:
            raise RuntimeError(self._drift_message(
                bad, f"{self._training_forwards} training forward(s)"))

    @staticmethod
    def _drift_message(bad: list[str], when: str) -> str:
        shown = ", ".join(bad[:5]) + (f" (and {len(bad) - 5} more)" if len(bad) > 5 else "")
        return (f"pyg_sar: the parameters of the converted model differ between ranks after "
                f"{when}: {shown}. Every rank must apply the same update: keep "
                f"SARConfig(sync_gradients=True) (or call pyg_sar.all_reduce_gradients(model) "
                f"after every backward), compute the loss with pyg_sar.nn.functional, give "
                f"every rank the same optimizer settings, and change parameters on all ranks "
                f"or none (pyg_sar.broadcast_parameters(model) copies rank 0's). "
                f"SARConfig(check_parameters_every=0) turns this check off.")


# The states of models converted before the job's context existed, in conversion order.
_AWAITING_CONTEXT: list[weakref.ref] = []


def _attach_awaiting(context: Any) -> None:
    """At the end of :func:`pyg_sar.init`: the models converted before it take rank 0's
    parameters and their gradient hooks now (:meth:`GradSync.attach`), so that their first
    step is exact even when a model reads its graph from elsewhere than its arguments. Every
    rank runs the same script, so every rank holds the same models in the same order; the
    ranks compare what they hold first (one small allgather), and where they differ the
    models wait for their first forward over a DistGraph as before."""
    states = [s for s in (ref() for ref in _AWAITING_CONTEXT) if s is not None]
    _AWAITING_CONTEXT.clear()
    if context.world_size == 1:
        return
    models = [(s, s._root() if s._root is not None else None) for s in states]
    models = [(s, m) for s, m in models if m is not None]
    # Lists, not tuples: what allgather_object returns is compared (it may carry JSON).
    shapes = [[None if isinstance(p, torch.nn.parameter.UninitializedParameter)
               else list(p.shape) for p in m.parameters()] for _, m in models]
    if any(shape != shapes for shape in context.comm.allgather_object(shapes)):
        return
    for state, model in models:
        if not any(c is context for c in state._broadcast_done):
            state._on_graph(model, context, late=False, count_forward=False)


def _state_of(model: torch.nn.Module) -> Optional[GradSync]:
    """``model``'s state: its attribute, or (where a copy dropped the attribute) the owner of
    the forward hook it registered."""
    state = getattr(model, STATE, None)
    if isinstance(state, GradSync):
        return state
    for hook in model._forward_pre_hooks.values():
        owner = getattr(hook, "__self__", None)
        if isinstance(owner, GradSync) and hook.__func__ is GradSync.before_forward:
            setattr(model, STATE, owner)
            return owner
    return None


def install(model: torch.nn.Module, config: Any,
            layers: Iterable[torch.nn.Module] = ()) -> GradSync:
    """Register the training-step hooks on ``model`` once (a later call only updates the
    settings); a converted submodule's own hooks give way to the enclosing model's.

    Args:
        model: the converted model.
        config: its :class:`~pyg_sar.SARConfig`.
        layers: the modules that receive the graph (the message-passing layers): a forward
            whose graph does not come through the model's own arguments is recognised there.
    """
    for sub in model.modules():
        if sub is not model and _state_of(sub) is not None:
            uninstall(sub)
    state = _state_of(model)
    if state is not None:
        state.configure(config)
        state.attach(model)
        return state
    state = GradSync(config)
    state.forward_handles = [
        model.register_forward_pre_hook(state.before_forward, with_kwargs=True),
        model.register_forward_hook(state.after_forward, with_kwargs=True),
    ] + [layer.register_forward_pre_hook(state.before_layer, with_kwargs=True)
         for layer in layers if layer is not model]
    setattr(model, STATE, state)
    state.attach(model)
    return state


def uninstall(model: torch.nn.Module) -> None:
    """Remove what :func:`install` registered on ``model`` (e.g. before handing the plain
    PyG model on); gradients summed already stay as they are."""
    state = _state_of(model)
    if state is None:
        return
    state.remove()
    delattr(model, STATE)


def disable_gradient_sync(model: torch.nn.Module) -> None:
    """Leave gradient reduction to someone else (torch DDP) for ``model`` and its converted
    submodules; the broadcast and the checks stay."""
    for sub in model.modules():
        state = _state_of(sub)
        if state is not None:
            state.sync = False
            state.remove_parameter_hooks()
