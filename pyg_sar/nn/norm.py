"""Batch normalisation with statistics over the nodes of all ranks.

Precision: a bfloat16 / float16 input (under ``torch.autocast`` or in a ``model.bfloat16()``
model) is normalised with statistics computed and summed over ranks in float32, as torch's own
batch norm computes them for such an input; the output has the input's dtype (what
:class:`torch.nn.BatchNorm1d` returns for it, with or without autocast) and the parameters'
gradients their own dtype.
"""
from __future__ import annotations

import math
from typing import Optional

import torch
from torch import Tensor
from torch_geometric.nn import HeteroBatchNorm

from pyg_sar.core.collectives import sum_over_ranks
from pyg_sar.core.precision import accumulate_dtype, is_low_precision

_CHUNK_ELEMENTS = 1 << 21  # temporaries of (a * b) are at most this many elements


def _product_sum(a: Tensor, b: Tensor, dims: list[int]) -> Tensor:
    """``(a * b).sum(dims)`` over row chunks: never materialises a full-size product (the
    backward of a layer of N x C activations would otherwise hold several N x C temporaries)."""
    row_elements = math.prod(a.shape[1:])
    rows = max(1, _CHUNK_ELEMENTS // max(1, row_elements))
    total = None
    for start in range(0, a.shape[0], rows):
        part = (a[start:start + rows] * b[start:start + rows]).sum(dims)
        total = part if total is None else total.add_(part)
    return total if total is not None else (a * b).sum(dims)


class _DistributedBatchNormFn(torch.autograd.Function):
    """Normalise with global statistics; saves only ``x_hat`` and ``1 / std`` for backward.

    Forward computes the global mean, then the global sum of squared deviations from it (two
    passes: numerically stable). Backward needs two global sums per channel:
    ``dx = invstd * (dx_hat - mean(dx_hat) - x_hat * mean(dx_hat * x_hat))``.

    A low-precision input is read in float32 (statistics, ``x_hat``, the backward sums); then
    the input itself, the mean and ``1 / std`` are saved instead of a float32 ``x_hat``, which
    backward recomputes.
    """

    @staticmethod
    def forward(ctx, x: Tensor, weight, bias, eps: float, comm, dims: list[int],
                stats: list):
        low = is_low_precision(x.dtype)
        wide = accumulate_dtype(x.dtype)
        xw = x.to(wide)
        count = torch.tensor([float(x.numel() // x.shape[1])], dtype=wide, device=x.device)
        total = sum_over_ranks(torch.cat([xw.sum(dims), count]), comm)
        n = total[-1]
        if float(n) <= 1:
            raise ValueError(f"DistributedBatchNorm: expected more than 1 value per channel "
                             f"over all ranks (got {int(n)})")
        shape = [1, -1] + [1] * (x.dim() - 2)
        mean = total[:-1] / n
        centered = xw - mean.view(shape)
        var = sum_over_ranks(_product_sum(centered, centered, dims), comm) / n
        invstd = torch.rsqrt(var + eps)
        x_hat = centered.mul_(invstd.view(shape))
        out = (torch.addcmul(bias.to(wide).view(shape), x_hat, weight.to(wide).view(shape))
               if weight is not None else x_hat)
        ctx.comm, ctx.dims, ctx.n, ctx.shape = comm, dims, n, shape
        if low:
            ctx.save_for_backward(x, invstd, weight, mean)
        else:
            ctx.save_for_backward(x_hat, invstd, weight)
        stats.extend([mean, var * n / (n - 1)])  # for the running statistics
        if low:
            return out.to(x.dtype)
        return out if weight is not None else out.clone()

    @staticmethod
    def backward(ctx, grad: Tensor):
        x_hat, invstd, weight, *mean = ctx.saved_tensors
        shape = ctx.shape
        if mean:  # a low-precision input: x_hat again in float32, as forward computed it
            x_dtype = x_hat.dtype
            x_hat = (x_hat.to(invstd.dtype) - mean[0].view(shape)).mul_(invstd.view(shape))
            grad = grad.to(invstd.dtype)
            dx, grad_w, grad_b = _backward(ctx, grad, x_hat, invstd,
                                           None if weight is None else weight.to(invstd.dtype))
            return (dx.to(x_dtype), _like(grad_w, weight), _like(grad_b, weight),
                    None, None, None, None)
        dx, grad_w, grad_b = _backward(ctx, grad, x_hat, invstd, weight)
        return dx, grad_w, grad_b, None, None, None, None


def _like(grad: Optional[Tensor], param: Optional[Tensor]) -> Optional[Tensor]:
    return None if grad is None else grad.to(param.dtype)


def _backward(ctx, grad: Tensor, x_hat: Tensor, invstd: Tensor, weight: Optional[Tensor]):
    """``(dx, grad weight, grad bias)`` of the normalisation (see the Function's docstring)."""
    dims, shape = ctx.dims, ctx.shape
    # With dx_hat = grad * weight: sum(dx_hat) = weight * sum(grad) and
    # sum(dx_hat * x_hat) = weight * sum(grad * x_hat), so no N x C temporary is needed;
    # dx = invstd * (dx_hat - mean(dx_hat) - x_hat * mean(dx_hat * x_hat)) is then built
    # in one output tensor.
    grad_sum = grad.sum(dims)
    grad_xhat_sum = _product_sum(grad, x_hat, dims)
    grad_w = grad_xhat_sum if weight is not None else None
    grad_b = grad_sum if weight is not None else None
    scale = weight if weight is not None else torch.ones_like(invstd)
    sums = sum_over_ranks(torch.cat([grad_sum * scale, grad_xhat_sum * scale]), ctx.comm)
    c = x_hat.shape[1]
    mean_dx, mean_dx_xhat = sums[:c] / ctx.n, sums[c:] / ctx.n
    dx = grad * (scale * invstd).view(shape)
    dx.sub_((mean_dx * invstd).view(shape))
    dx.addcmul_(x_hat, (mean_dx_xhat * invstd).view(shape), value=-1)
    return dx, grad_w, grad_b


class DistributedBatchNorm(torch.nn.BatchNorm1d):
    r""":class:`torch.nn.BatchNorm1d` whose batch is the union of every rank's nodes.

    Mean and variance are computed in two passes (global mean first, then the global sum of
    squared deviations from it), which is numerically stable; gradients equal those of
    single-process batch norm on the whole graph, and only the normalised input and
    ``1 / std`` are kept for backward. Running statistics follow torch's rules (unbiased
    variance, ``momentum`` or cumulative average when ``momentum=None``). With one process it is
    plain :class:`torch.nn.BatchNorm1d`.

    Its ranks are those of the context it is bound to: :func:`pyg_sar.convert` binds the
    model's batch norms to the :class:`~pyg_sar.DistGraph` the model is called with (its
    ``context``) at every call; :meth:`bind` does it by hand. Unbound, it uses the context of
    :func:`pyg_sar.init` if there is one, else it is local.

    Shapes:
        input ``[N, C]`` or ``[N, C, L]``; output of the same shape.
    """

    @classmethod
    def from_batch_norm(cls, bn: torch.nn.modules.batchnorm._BatchNorm) -> DistributedBatchNorm:
        """A distributed copy of ``bn`` sharing its parameters and buffers."""
        new = cls(bn.num_features, bn.eps, bn.momentum, bn.affine, bn.track_running_stats)
        new.weight, new.bias = bn.weight, bn.bias
        new.running_mean, new.running_var = bn.running_mean, bn.running_var
        new.num_batches_tracked = bn.num_batches_tracked
        new.train(bn.training)
        return new

    def bind(self, context) -> DistributedBatchNorm:
        """Compute statistics over the ranks of ``context`` (a
        :class:`~pyg_sar.distributed.context.DistContext`, or ``None`` to unbind); returns
        ``self``."""
        self._sar_context = context
        return self

    def _comm(self):
        from pyg_sar.distributed.context import resolve_context
        # Unbound: the process's context, if there is one (never made here).
        context = resolve_context(getattr(self, "_sar_context", None), create=False)
        return context.comm if context is not None and context.world_size > 1 else None

    def __getstate__(self) -> dict:
        state = super().__getstate__()  # a copy of __dict__ (torch.nn.Module)
        # The bound context holds a live communicator: neither copied nor pickled; the next
        # call of the converted model binds the norm again.
        for key in [k for k in state if k.startswith("_sar_")]:
            del state[key]
        return state

    def forward(self, x: Tensor) -> Tensor:
        self._check_input_dim(x)
        use_batch = self.training or not self.track_running_stats
        comm = self._comm()
        if not use_batch or comm is None:
            return super().forward(x)
        dims = [0] if x.dim() == 2 else [0, 2]
        stats: list[Tensor] = []
        out = _DistributedBatchNormFn.apply(x, self.weight, self.bias, self.eps, comm, dims,
                                            stats)
        if self.track_running_stats:
            self._update_running(*stats)
        return out

    @torch.no_grad()
    def _update_running(self, mean: Tensor, unbiased_var: Tensor) -> None:
        self.num_batches_tracked.add_(1)
        momentum = self.momentum
        if momentum is None:
            momentum = 1.0 / float(self.num_batches_tracked)
        self.running_mean.mul_(1 - momentum).add_(mean, alpha=momentum)
        self.running_var.mul_(1 - momentum).add_(unbiased_var, alpha=momentum)


class DistributedHeteroBatchNorm(HeteroBatchNorm):
    r""":class:`torch_geometric.nn.HeteroBatchNorm` whose statistics per type are over the
    entries of that type on all ranks.

    PyG computes each type's mean and (biased) variance without gradient and updates the
    running statistics of the types present; here the sums of ``x`` and ``x * x`` and the
    counts per type are added over ranks (one collective), "present" means present on some
    rank, and the normalisation itself is PyG's, so backward is local. :func:`pyg_sar.convert`
    gives a model's ``HeteroBatchNorm`` modules this class (sharing their parameters and
    buffers) and binds them to the graph's ranks as it does :class:`DistributedBatchNorm`;
    unbound or with one process it is PyG's.
    """

    bind = DistributedBatchNorm.bind
    _comm = DistributedBatchNorm._comm

    def __getstate__(self) -> dict:
        state = super().__getstate__()
        for key in [k for k in state if k.startswith("_sar_")]:  # live communicators
            del state[key]
        return state

    @classmethod
    def convert_in_place(cls, module: HeteroBatchNorm) -> DistributedHeteroBatchNorm:
        """Give ``module`` this class (its parameters and buffers are kept); returns it."""
        module.__class__ = cls
        return module

    def forward(self, x: Tensor, type_vec: Tensor) -> Tensor:
        comm = self._comm()
        if comm is None or (not self.training and self.track_running_stats):
            return super().forward(x, type_vec)
        with torch.no_grad():
            wide = accumulate_dtype(x.dtype)
            xw = x.detach().to(wide)
            sums = xw.new_zeros(self.num_types, 2 * self.in_channels + 1)
            sums[:, :self.in_channels].index_add_(0, type_vec, xw)
            sums[:, self.in_channels:-1].index_add_(0, type_vec, xw * xw)
            sums[:, -1].index_add_(0, type_vec, xw.new_ones(type_vec.numel()))
            total = sum_over_ranks(sums, comm)
            count = total[:, -1:].clamp(min=1)  # as PyG's scatter mean: an absent type is 0
            mean = total[:, :self.in_channels] / count
            var = total[:, self.in_channels:-1] / count - mean * mean
            present = total[:, -1] > 0
            mean, var = mean.to(x.dtype), var.to(x.dtype)
        if self.training and self.track_running_stats:
            if self.momentum is None:
                self.num_batches_tracked.add_(1)
                factor = 1.0 / float(self.num_batches_tracked)
            else:
                factor = self.momentum
            with torch.no_grad():
                index = present.nonzero().view(-1)
                self.running_mean[index] = ((1.0 - factor) * self.running_mean[index]
                                            + factor * mean[index])
                self.running_var[index] = ((1.0 - factor) * self.running_var[index]
                                           + factor * var[index])
        out = (x - mean[type_vec]) / var.clamp(self.eps).sqrt()[type_vec]
        if self.affine:
            out = out * self.weight[type_vec] + self.bias[type_vec]
        return out
