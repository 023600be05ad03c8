"""Batch normalisation with statistics over the nodes of all ranks."""
from __future__ import annotations

import torch
from torch import Tensor

from pyg_sar.core.collectives import all_reduce_sum, world_comm


class DistributedBatchNorm(torch.nn.BatchNorm1d):
    r""":class:`torch.nn.BatchNorm1d` whose batch is the union of every rank's nodes.

    Mean and variance are computed in two passes (global mean first, then the global sum of
    squared deviations from it), which is numerically stable; both reductions are
    differentiable, so gradients equal those of single-process batch norm on the whole graph.
    Running statistics follow torch's rules (unbiased variance, ``momentum`` or cumulative
    average when ``momentum=None``).

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

    def forward(self, x: Tensor) -> Tensor:
        self._check_input_dim(x)
        use_batch = self.training or not self.track_running_stats
        comm = world_comm()
        if not use_batch or comm is None:
            return super().forward(x)
        dims = [0] if x.dim() == 2 else [0, 2]
        count = torch.tensor(float(x.numel() // x.shape[1]), dtype=x.dtype, device=x.device)
        total = all_reduce_sum(torch.cat([x.sum(dims), count.view(1)]), comm)
        n = total[-1].detach()
        if float(n) <= 1:
            raise ValueError(f"DistributedBatchNorm: expected more than 1 value per channel "
                             f"over all ranks (got {int(n)})")
        mean = total[:-1] / n
        shape = (1, -1) if x.dim() == 2 else (1, -1, 1)
        centered = x - mean.view(shape)
        var = all_reduce_sum((centered * centered).sum(dims), comm) / n
        out = centered * torch.rsqrt(var.view(shape) + self.eps)
        if self.affine:
            out = out * self.weight.view(shape) + self.bias.view(shape)
        if self.track_running_stats:
            self._update_running(mean.detach(), var.detach() * n / (n - 1))
        return out

    @torch.no_grad()
    def _update_running(self, mean: Tensor, unbiased_var: Tensor) -> None:
        self.num_batches_tracked.add_(1)
        momentum = self.momentum
        if momentum is None:
            momentum = 1.0 / float(self.num_batches_tracked)
        self.running_mean.mul_(1 - momentum).add_(mean, alpha=momentum)
        self.running_var.mul_(1 - momentum).add_(unbiased_var, alpha=momentum)


