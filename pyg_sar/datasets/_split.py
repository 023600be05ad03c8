"""Seeded random train/val/test node masks, shared by every dataset without a published split."""
from __future__ import annotations

import torch
from torch import Tensor


def check_fractions(train_fraction: float, val_fraction: float) -> None:
    """Raise ``ValueError`` unless both fractions are in [0, 1] and sum to at most 1."""
    for name, value in (("train_fraction", train_fraction), ("val_fraction", val_fraction)):
        if not 0.0 <= float(value) <= 1.0:
            raise ValueError(f"{name} must be in [0, 1] (got {value})")
    if train_fraction + val_fraction > 1.0 + 1e-12:
        raise ValueError(f"train_fraction + val_fraction must be <= 1 "
                         f"(got {train_fraction} + {val_fraction})")


def random_split_masks(num_nodes: int, train_fraction: float = 0.6, val_fraction: float = 0.2,
                       seed: int = 0) -> tuple[Tensor, Tensor, Tensor]:
    """Disjoint boolean masks covering all ``num_nodes`` nodes: a seeded random permutation cut
    into ``round(train_fraction * N)`` train nodes, ``round(val_fraction * N)`` val nodes and the
    rest as test nodes.

    Returns:
        ``(train_mask, val_mask, test_mask)``, each ``bool [num_nodes]``.
    """
    check_fractions(train_fraction, val_fraction)
    if num_nodes < 0:
        raise ValueError(f"num_nodes must be >= 0 (got {num_nodes})")
    gen = torch.Generator().manual_seed(int(seed))
    perm = torch.randperm(num_nodes, generator=gen)
    num_train = round(train_fraction * num_nodes)
    num_val = min(round(val_fraction * num_nodes), num_nodes - num_train)
    masks = []
    for lo, hi in ((0, num_train), (num_train, num_train + num_val),
                   (num_train + num_val, num_nodes)):
        mask = torch.zeros(num_nodes, dtype=torch.bool)
        mask[perm[lo:hi]] = True
        masks.append(mask)
    return masks[0], masks[1], masks[2]
