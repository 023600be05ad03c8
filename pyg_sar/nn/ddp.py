"""Using torch's DistributedDataParallel instead of :func:`pyg_sar.all_reduce_gradients`.

With SAR every rank holds a *share* of one global loss (see
:func:`pyg_sar.nn.functional.cross_entropy`), so the single-process gradient is the SUM of the
ranks' gradients, while DDP averages. :func:`distributed_data_parallel` wraps a converted model
in DDP with a communication hook that sums. DDP runs on the default process group; SAR's own
traffic uses a separate communicator, so the two never interleave.
"""
# No ``from __future__ import annotations``: DDP checks the hook's annotations at runtime.
from typing import Any

import torch
import torch.distributed as dist


def sum_allreduce_hook(process_group: Any, bucket: dist.GradBucket
                       ) -> torch.futures.Future[torch.Tensor]:
    """DDP communication hook: all-reduce each gradient bucket as a sum (no averaging)."""
    group = process_group if process_group is not None else dist.group.WORLD
    work = dist.all_reduce(bucket.buffer(), group=group, async_op=True)
    return work.get_future().then(lambda fut: fut.value()[0])


def distributed_data_parallel(model: torch.nn.Module, **kwargs: Any
                              ) -> "torch.nn.parallel.DistributedDataParallel":
    """``DistributedDataParallel(model, **kwargs)`` whose gradient reduction is a sum.

    Requires torch.distributed's default group: :func:`pyg_sar.init` sets it up under torchrun,
    and under mpiexec with ``init(init_torch_distributed=True)``. DDP then reduces the
    gradients, so the converted model's own synchronisation (``SARConfig.sync_gradients``) is
    turned off for it; the first-forward broadcast and the checks stay.
    """
    if not dist.is_initialized():
        raise RuntimeError("distributed_data_parallel: torch.distributed is not initialised; "
                           "call pyg_sar.init(init_torch_distributed=True) under mpiexec")
    from pyg_sar.nn.grad_sync import disable_gradient_sync
    disable_gradient_sync(model)
    ddp = torch.nn.parallel.DistributedDataParallel(model, **kwargs)
    ddp.register_comm_hook(None, sum_allreduce_hook)
    return ddp
