"""The SAR autograd Function: one call per propagate, block by block over the source ranks.

Forward: for step k = 0..P-1 the block of source rank ``(r + k) % P`` is processed (k = 0 is the
local block); its boundary rows are fetched (``pipeline_depth`` steps ahead), its messages are
computed and folded into the accumulator by the combine rule, and the rows are freed.

Backward (mode ``"sar"``): the same walk; each remote block's rows are fetched again, the block
is recomputed under autograd (with the forward's RNG state, so dropout replays exactly), and the
gradients of the fetched rows are sent back to their owners, which add them to their own rows.
Mode ``"sa"`` keeps the fetched rows from the forward pass instead of fetching them again. Where
the message is linear in ``x_j`` (a copy, or scaled by an edge weight) and the aggregation is a
sum or mean, forward runs the fused gather-aggregate kernel and backward needs no rows at all:
``grad x_j = block^T @ grad_out``.

Parameters used inside ``message`` are explicit inputs, so their gradients are returned by
``backward`` (visible to DDP, hooks and ``torch.autograd.grad``).

Precision: the ``torch.autocast`` state of the forward call is recorded and re-entered for
every block recomputed in backward (:class:`~pyg_sar.core.precision.AutocastState`), so the
recomputed messages are bit for bit the forward's whatever surrounds ``backward()``; modes
``sar`` and ``sa`` then give identical gradients. Low-precision (bfloat16 / float16) messages
are folded in float32 (:mod:`pyg_sar.core.combine`), and the gradients of low-precision source,
destination and parameter tensors are summed over blocks in float32 and returned in the
tensor's own dtype.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Optional, Protocol

import torch
from torch import Tensor

from pyg_sar.core.combine import CombineRule
from pyg_sar.core.exchange import NO_WIRE, Wire
from pyg_sar.core.kernels import block_sum, block_sum_transpose, edge_weight_grad, transpose_csr
from pyg_sar.core.precision import AutocastState, accumulate_dtype, to_accumulate
from pyg_sar.core.views import GraphView, ViewBlock
from pyg_sar.core.walk import BlockWalk


@dataclass(frozen=True)
class LinearMessage:
    """The message is ``x_j`` (source tensor ``src``) scaled by edge tensor ``weight`` if given."""

    src: int = 0
    weight: Optional[int] = None


class BlockProgram(Protocol):
    """Computes the messages of one block from the layer's own message function."""

    linear: Optional[LinearMessage]

    def messages(self, block: ViewBlock, src: Sequence[Tensor], dst: Sequence[Tensor],
                 edge: Sequence[Tensor]) -> Tensor: ...


@dataclass
class Propagation:
    """Everything one SAR propagate call needs besides its tensors."""

    view: GraphView
    program: BlockProgram
    rule: CombineRule  # a SumRule where the program has a linear message (block_sum path)
    mode: str = "sar"
    pipeline_depth: Optional[int] = None  # None: see exchange.pipeline_depth
    replay_rng: bool = False
    wire: Wire = NO_WIRE  # traffic label and compression, fixed at forward time


def _rng_state(device: torch.device):
    if device.type == "cuda":
        return torch.get_rng_state(), torch.cuda.get_rng_state(device)
    return torch.get_rng_state(), None


class _Replay:
    """Restores a block's RNG state for its recomputation without disturbing the global RNG."""

    def __init__(self, state, device: torch.device) -> None:
        self.state, self.device = state, device
        self._fork = None

    def __enter__(self):
        if self.state is None:
            return self
        devices = [self.device] if self.device.type == "cuda" else []
        self._fork = torch.random.fork_rng(devices=devices)
        self._fork.__enter__()
        torch.set_rng_state(self.state[0])
        if self.state[1] is not None:
            torch.cuda.set_rng_state(self.state[1], self.device)
        return self

    def __exit__(self, *exc):
        if self._fork is not None:
            self._fork.__exit__(*exc)
        return False


def _slices(edge: Sequence[Tensor], block: ViewBlock) -> list[Tensor]:
    return [e[block.edge_slice] for e in edge]


# SARPropagate.forward's arguments before its tensors (prop, n_src, n_dst, n_edge): they get
# no gradient, and the tensors' needs_input_grad entries start after them.
_LEADING = 4


class SARPropagate(torch.autograd.Function):
    """Distributed propagate over all blocks; see the module docstring."""

    @staticmethod
    def forward(ctx, prop: Propagation, n_src: int, n_dst: int, n_edge: int, *inputs: Tensor):
        src = list(inputs[:n_src])
        dst = list(inputs[n_src:n_src + n_dst])
        edge = list(inputs[n_src + n_dst:n_src + n_dst + n_edge])
        view, program, rule = prop.view, prop.program, prop.rule
        g = view.graph
        linear = program.linear
        # The linear path's backward reads the rows only for an edge-weight gradient.
        keep = (linear is None or linear.weight is not None
                and ctx.needs_input_grad[_LEADING + n_src + n_dst + linear.weight])
        walk = BlockWalk(view, src, prop.mode, prop.pipeline_depth, prop.wire, keep=keep)
        acc, rng = None, [None] * g.world_size
        for step in walk.forward():
            block, rows = step.block, step.rows
            if linear is not None:
                w = None if linear.weight is None else edge[linear.weight][block.edge_slice]
                # accumulated in float32 for low-precision rows; the output in their dtype
                partial = block_sum(block.rowptr, block.col, rows[linear.src], w)
                acc = (rule.adopt(partial, src[linear.src].dtype) if acc is None
                       else rule.fold_partial(acc, partial))
                continue
            if prop.replay_rng:
                rng[step.k] = _rng_state(rows[0].device if rows else g.device)
            msgs = program.messages(block, rows, dst, _slices(edge, block))
            if acc is None:
                acc = rule.init(g.num_nodes, msgs)
            acc = rule.fold(acc, msgs, block.row)
        out = rule.finalize(acc)
        if out._is_view():  # a view as output would forbid in-place ops on it (GCN2Conv's mul_)
            out = out.detach()
        state = [] if linear is not None else rule.state(out, acc)
        ctx.prop, ctx.counts, ctx.rng = prop, (n_src, n_dst, n_edge, len(walk.kept)), rng
        ctx.autocast = AutocastState.capture()
        ctx.save_for_backward(*inputs, *walk.kept, *state)
        return out

    @staticmethod
    def backward(ctx, grad_out: Tensor):
        prop: Propagation = ctx.prop
        n_src, n_dst, n_edge, n_kept = ctx.counts
        saved = ctx.saved_tensors
        n_in = len(ctx.needs_input_grad) - _LEADING
        inputs, kept, state = saved[:n_in], saved[n_in:n_in + n_kept], saved[n_in + n_kept:]
        src = list(inputs[:n_src])
        dst = list(inputs[n_src:n_src + n_dst])
        edge = list(inputs[n_src + n_dst:n_src + n_dst + n_edge])
        params = list(inputs[n_src + n_dst + n_edge:])
        needs = ctx.needs_input_grad[_LEADING:]
        need_src = needs[:n_src]
        need_dst = needs[n_src:n_src + n_dst]
        need_edge = needs[n_src + n_dst:n_src + n_dst + n_edge]
        need_par = needs[n_src + n_dst + n_edge:]
        grad_out = grad_out.contiguous()

        # The linear path writes its local block's gradient straight into grad_src (no zeros).
        # Gradients summed over blocks are accumulated in float32 for low-precision tensors.
        lazy = -1 if prop.program.linear is None else prop.program.linear.src
        grad_src = [_zeros_acc(t) if n and i != lazy else None
                    for i, (t, n) in enumerate(zip(src, need_src))]
        grad_dst = [_zeros_acc(t) if n else None for t, n in zip(dst, need_dst)]
        grad_edge = [torch.zeros_like(t) if n else None for t, n in zip(edge, need_edge)]
        grad_par = [_zeros_acc(t) if n else None for t, n in zip(params, need_par)]

        inputs = _ByRole(src, dst, edge, params)
        grads = _ByRole(grad_src, grad_dst, grad_edge, grad_par)
        if prop.program.linear is not None:
            _linear_backward(prop, grad_out, inputs, grads, kept, bool(need_src[lazy]))
        else:
            _generic_backward(prop, _Forward(ctx.rng, ctx.autocast, kept, state), grad_out,
                              inputs, grads)
        return (*(None,) * _LEADING, *_as_dtypes(grad_src, src), *_as_dtypes(grad_dst, dst),
                *grad_edge, *_as_dtypes(grad_par, params))


@dataclass
class _ByRole:
    """The Function's tensors by role (or their gradient buffers, ``None`` where no gradient
    is needed): source rows, destination rows, per-edge tensors, layer parameters."""

    src: list
    dst: list
    edge: list
    params: list


@dataclass
class _Forward:
    """What the backward pass replays of the forward: each block's RNG state, the autocast
    state, the rows kept in mode ``sa`` and the combine rule's saved state."""

    rng: list
    autocast: AutocastState
    kept: Sequence[Tensor]
    state: Sequence[Tensor]


def _zeros_acc(t: Tensor) -> Tensor:
    """A zero gradient buffer for ``t`` in its accumulation dtype."""
    return torch.zeros_like(t, dtype=accumulate_dtype(t.dtype))


def _as_dtypes(grads: list[Optional[Tensor]], like: Sequence[Tensor]) -> list[Optional[Tensor]]:
    """Each gradient in its tensor's dtype (accumulators of low-precision tensors are float32)."""
    return [gr if gr is None or gr.dtype == t.dtype else gr.to(t.dtype)
            for gr, t in zip(grads, like)]


def _linear_backward(prop: Propagation, grad_out: Tensor, inputs: _ByRole, grads_of: _ByRole,
                     kept: Sequence[Tensor], need_x: bool) -> None:
    view, rule, linear = prop.view, prop.rule, prop.program.linear
    src, edge, grad_src, grad_edge = inputs.src, inputs.edge, grads_of.src, grads_of.edge
    g = view.graph
    weight = None if linear.weight is None else edge[linear.weight]
    need_w = linear.weight is not None and grad_edge[linear.weight] is not None
    # A mean's 1 / degree goes into the kernel's edge weights unless the edge-weight gradient
    # needs the scaled gradient anyway: no N x F copy of grad_out.
    # Low-precision gradients are read in float32 (an exact cast), so the sums below run in
    # float32 and a mean's 1 / degree is not rounded to the low precision.
    inv_deg = None
    if need_w:
        node_grad = rule.node_grad(to_accumulate(grad_out))
    else:
        node_grad = to_accumulate(grad_out)
        if getattr(rule, "mean", False):  # only sum/mean rules take the linear path
            inv_deg = 1.0 / rule.in_degree.clamp(min=1).to(node_grad.dtype)
    # Only the source tensor of the message is walked; its rows are needed only for the
    # edge-weight gradient.
    walk = BlockWalk(view, [src[linear.src]], prop.mode, prop.pipeline_depth, prop.wire,
                     ids=[linear.src])
    grads = [grad_src[linear.src]]
    kept_x = kept[linear.src::len(src)] if prop.mode == "sa" else ()
    for step in walk.backward(grads, need_rows=need_w, kept=kept_x):
        block = step.block
        w = None if weight is None else weight[block.edge_slice]
        if need_w and block.num_edges:
            grad_edge[linear.weight][block.edge_slice] = edge_weight_grad(
                node_grad, block.row, block.col, step.rows[0])
        gx = None
        if need_x:
            gx = block_sum_transpose(node_grad, block.rowptr, block.col, w, block.num_src,
                                     _transposed(g, block), inv_deg)
        if step.k == 0:  # always the first step: later steps add into this tensor
            grads[0] = gx
        else:
            walk.give_back(step, [gx])
    grad_src[linear.src] = grads[0]


def _transposed(graph, block: ViewBlock) -> tuple[Tensor, Tensor, Tensor]:
    # Keyed by the memory of the block's index tensors: the stored and self-loop views share
    # remote blocks. The entry holds the tensors, so that memory stays theirs while it lives:
    # a tensor at the same address with the same shapes aliases them (index tensors are never
    # written in place).
    rowptr, col = block.rowptr, block.col
    key = ("csr_t", rowptr.data_ptr(), col.data_ptr(), block.num_src)
    held = graph.cached(key, lambda: (rowptr, col, transpose_csr(rowptr, col, block.num_src)))
    if held[0].shape == rowptr.shape and held[1].shape == col.shape:
        return held[2]
    return transpose_csr(rowptr, col, block.num_src)


def _generic_backward(prop: Propagation, forward: _Forward, grad_out: Tensor, inputs: _ByRole,
                      grads_of: _ByRole) -> None:
    rule, program = prop.rule, prop.program
    src, dst, edge, params = inputs.src, inputs.dst, inputs.edge, inputs.params
    grad_src, grad_dst, grad_edge, grad_par = (grads_of.src, grads_of.dst, grads_of.edge,
                                               grads_of.params)
    rng, autocast, kept, state = forward.rng, forward.autocast, forward.kept, forward.state
    walk = BlockWalk(prop.view, src, prop.mode, prop.pipeline_depth, prop.wire)
    dst_leaf = [t.detach().requires_grad_(gr is not None) for t, gr in zip(dst, grad_dst)]
    live_par = [i for i, gr in enumerate(grad_par) if gr is not None]
    for step in walk.backward(grad_src, kept=kept):
        block, rows = step.block, step.rows
        with torch.enable_grad():
            src_leaf = [t.detach().requires_grad_(gr is not None)
                        for t, gr in zip(rows, grad_src)]
            edge_leaf = [e.detach().requires_grad_(gr is not None)
                         for e, gr in zip(_slices(edge, block), grad_edge)]
            # the forward's RNG state and autocast state: the messages are the forward's
            with _Replay(rng[step.k], prop.view.graph.device), autocast.replay():
                msgs = program.messages(block, src_leaf, dst_leaf, edge_leaf)
            grad_msgs = rule.message_grad(grad_out, _detach(msgs), block.row, state)
            wrt = [t for t in (*src_leaf, *dst_leaf, *edge_leaf) if t.requires_grad]
            wrt += [params[i] for i in live_par]
            outs, gouts = _differentiable(msgs, grad_msgs)
            grads = list(torch.autograd.grad(outs, wrt, gouts, allow_unused=True)
                         if wrt and outs else [None] * len(wrt))
        block_src = []
        for t, gr in zip(src_leaf, grad_src):
            got = grads.pop(0) if gr is not None else None
            block_src.append(torch.zeros_like(t) if got is None and gr is not None else got)
        for gr in grad_dst:
            if gr is not None:
                got = grads.pop(0)
                if got is not None:
                    gr.add_(got)
        for gr in grad_edge:
            if gr is not None:
                got = grads.pop(0)
                if got is not None:
                    gr[block.edge_slice] = got
        for i in live_par:
            got = grads.pop(0)
            if got is not None:
                grad_par[i].add_(got)
        if step.k == 0:
            for acc, got in zip(grad_src, block_src):
                if acc is not None:
                    acc.add_(got)
        else:
            walk.give_back(step, block_src)


def _as_tuple(msgs) -> tuple:
    return tuple(msgs) if isinstance(msgs, (tuple, list)) else (msgs,)


def _detach(msgs):
    if isinstance(msgs, (tuple, list)):
        return type(msgs)(None if m is None else m.detach() for m in msgs)
    return msgs.detach()


def _differentiable(msgs, grads) -> tuple[list[Tensor], list[Tensor]]:
    """The message tensors that carry gradient, paired with their incoming gradients."""
    pairs = [(m, g) for m, g in zip(_as_tuple(msgs), _as_tuple(grads))
             if m is not None and g is not None and m.requires_grad]
    return [m for m, _ in pairs], [g for _, g in pairs]


def sar_propagate(prop: Propagation, src: Sequence[Tensor], dst: Sequence[Tensor],
                  edge: Sequence[Tensor], params: Sequence[Tensor]) -> Tensor:
    """Run one distributed propagate; differentiable in all tensors given."""
    return SARPropagate.apply(prop, len(src), len(dst), len(edge), *src, *dst, *edge, *params)
