r"""Which seed nodes form minibatch ``b`` of an epoch, and the random key it samples with.

Both are pure functions of ``(seed, epoch)`` and the global list of seed nodes (original ids):
the epoch's order is ``torch.randperm`` under a generator seeded from ``(seed, epoch)``, cut
into ``batch_size`` chunks; minibatch ``b`` samples with ``batch_key(seed, epoch, b)``. So
the same seed gives the same minibatches whatever the bulk size ``k``, the number of ranks, or
which rank samples which minibatch (rank ``r`` of ``P`` takes minibatches ``r, r + P, ...``).
"""
from __future__ import annotations

import torch
from torch import Tensor

from pyg_sar.ops.sampling_rng import make_key


def batch_key(seed: int, epoch: int, index: int) -> int:
    """The random key of minibatch ``index`` of ``epoch``."""
    return make_key(seed, epoch, index)


def epoch_order(num_seeds: int, shuffle: bool, seed: int, epoch: int) -> Tensor:
    """The order in which the seed list is visited in ``epoch``."""
    if not shuffle:
        return torch.arange(num_seeds)
    generator = torch.Generator().manual_seed(make_key(seed, epoch, 1 << 62) & ((1 << 63) - 1))
    return torch.randperm(num_seeds, generator=generator)


def num_batches(num_seeds: int, batch_size: int, drop_last: bool) -> int:
    return num_seeds // batch_size if drop_last else -(-num_seeds // batch_size)


def epoch_batches(num_seeds: int, batch_size: int, shuffle: bool, seed: int, epoch: int,
                  drop_last: bool = False) -> list[Tensor]:
    """Positions in the seed list of every minibatch of ``epoch``."""
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1 (got {batch_size})")
    order = epoch_order(num_seeds, shuffle, seed, epoch)
    count = num_batches(num_seeds, batch_size, drop_last)
    return [order[i * batch_size:(i + 1) * batch_size] for i in range(count)]
