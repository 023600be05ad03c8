r"""A deterministic stochastic block model with class-correlated features: a learnable
node-classification task whose density and community structure are parameters.

Nodes get balanced class labels in random order. A fraction ``homophily`` of the directed edges
join two nodes of the same class; the rest join nodes of different classes, spread over class
pairs in proportion to the number of possible pairs. Edges are sampled per block (class pair) as
random (source, destination) draws, deduplicated, and cut to each block's exact target count, so
time and memory are :math:`O(E)` and no :math:`N \times N` matrix is ever built. Features are a
class mean vector (standard normal per class) plus Gaussian noise of standard deviation
``feature_noise``: features alone are informative, neighbours' labels add more.
"""
from __future__ import annotations

import math

import torch
from torch import Tensor
from torch_geometric.data import Data

from pyg_sar.datasets._split import check_fractions, random_split_masks

_MAX_ROUNDS = 200


def _apportion(total: int, weights: Tensor) -> Tensor:
    """Split the integer ``total`` over ``weights`` (largest-remainder rounding, exact sum)."""
    weights = weights.double()
    wsum = float(weights.sum())
    if total == 0 or wsum == 0.0:
        return torch.zeros(weights.numel(), dtype=torch.long)
    share = weights * (total / wsum)
    out = share.floor().long()
    remainder = total - int(out.sum())
    if remainder > 0:
        # Ties broken by block index (stable sort), so the result is deterministic.
        order = torch.sort(share - out.double(), descending=True, stable=True).indices
        out[order[:remainder]] += 1
    return out


def _sample_block_edges(y: Tensor, order: Tensor, class_start: Tensor, class_size: Tensor,
                        src_class: Tensor, dst_class: Tensor, target: Tensor,
                        gen: torch.Generator) -> Tensor:
    """Return sorted unique edge keys ``dst * N + src`` with exactly ``target[b]`` edges in
    block ``b`` (sources of class ``src_class[b]``, destinations of class ``dst_class[b]``) and
    no self-loops. ``order`` lists the nodes grouped by class, class ``c`` at
    ``order[class_start[c]:class_start[c] + class_size[c]]``."""
    num_nodes, num_blocks, num_classes = y.numel(), target.numel(), class_size.numel()
    keys = torch.empty(0, dtype=torch.long)
    blk = torch.empty(0, dtype=torch.long)
    for _ in range(_MAX_ROUNDS):
        deficit = (target - torch.bincount(blk, minlength=num_blocks)).clamp_min(0)
        if int(deficit.sum()) == 0:
            return _trim_to_target(keys, blk, target, gen)
        # Oversample a little so that most blocks fill in one round despite duplicates.
        draws = deficit + (deficit.double() * 0.1).ceil().long() + (deficit > 0).long() * 8
        block_id = torch.repeat_interleave(torch.arange(num_blocks), draws)
        sc, dc = src_class[block_id], dst_class[block_id]
        n = block_id.numel()
        src = order[class_start[sc] + (torch.rand(n, generator=gen, dtype=torch.float64)
                                       * class_size[sc]).long()]
        dst = order[class_start[dc] + (torch.rand(n, generator=gen, dtype=torch.float64)
                                       * class_size[dc]).long()]
        keep = src != dst
        keys = torch.unique(torch.cat([keys, dst[keep] * num_nodes + src[keep]]))
        blk = y[keys % num_nodes] * num_classes + y[keys // num_nodes]
    raise RuntimeError(f"sbm: could not place the requested edges in {_MAX_ROUNDS} rounds; "
                       f"the graph is too close to complete (lower avg_degree)")


def _trim_to_target(keys: Tensor, blk: Tensor, target: Tensor, gen: torch.Generator) -> Tensor:
    """Keep a uniformly random subset of ``target[b]`` keys in every block ``b``."""
    perm = torch.randperm(keys.numel(), generator=gen)
    keys, blk = keys[perm], blk[perm]
    blk_sorted, idx = torch.sort(blk, stable=True)
    block_start = torch.zeros(target.numel() + 1, dtype=torch.long)
    block_start[1:] = torch.cumsum(torch.bincount(blk, minlength=target.numel()), 0)
    rank_in_block = torch.arange(keys.numel()) - block_start[blk_sorted]
    chosen = keys[idx[rank_in_block < target[blk_sorted]]]
    return torch.sort(chosen).values


def sbm(num_nodes: int = 20_000, num_classes: int = 10, avg_degree: float = 10.0,
        homophily: float = 0.8, num_features: int = 32, feature_noise: float = 3.0,
        seed: int = 0, train_fraction: float = 0.6, val_fraction: float = 0.2,
        num_edges: int | None = None) -> Data:
    r"""Stochastic block model with class-correlated features.

    Args:
        num_nodes: number of nodes :math:`N`.
        num_classes: number of classes (= communities), balanced in size.
        avg_degree: directed edges per node, :math:`E = \mathrm{round}(N \cdot d)`.
        homophily: fraction of edges whose endpoints share a class (edge homophily; chance level
            is about ``1 / num_classes``).
        num_features: feature dimension.
        feature_noise: standard deviation of the Gaussian noise added to the class mean vectors
            (whose entries are standard normal).
        seed: seed of everything random (labels, edges, features, split).
        train_fraction: fraction of nodes in ``train_mask``.
        val_fraction: fraction of nodes in ``val_mask``; the rest are test nodes.
        num_edges: exact number of directed edges (overrides ``avg_degree``).

    Returns:
        ``Data`` with ``x`` (float32 ``[N, num_features]``), ``y`` (int64), ``edge_index``
        (int64 ``[2, E]``, sorted by destination then source, no duplicates or self-loops) and
        boolean masks.
    """
    if num_nodes < 2 or num_classes < 1 or num_classes > num_nodes:
        raise ValueError(f"sbm: need num_nodes >= 2 and 1 <= num_classes <= num_nodes "
                         f"(got num_nodes={num_nodes}, num_classes={num_classes})")
    if not 0.0 <= homophily <= 1.0:
        raise ValueError(f"sbm: homophily must be in [0, 1] (got {homophily})")
    if num_classes == 1 and homophily < 1.0:
        raise ValueError(f"sbm: with one class every edge is intra-class; homophily must be 1 "
                         f"(got {homophily})")
    if num_features < 1 or feature_noise < 0:
        raise ValueError(f"sbm: need num_features >= 1 and feature_noise >= 0 "
                         f"(got {num_features}, {feature_noise})")
    check_fractions(train_fraction, val_fraction)
    if num_edges is None:
        if not math.isfinite(avg_degree) or avg_degree < 0:
            raise ValueError(f"sbm: avg_degree must be finite and >= 0 (got {avg_degree})")
        num_edges = round(num_nodes * avg_degree)
    if num_edges < 0:
        raise ValueError(f"sbm: num_edges must be >= 0 (got {num_edges})")

    gen = torch.Generator().manual_seed(int(seed))
    y = torch.arange(num_nodes) % num_classes
    y = y[torch.randperm(num_nodes, generator=gen)]
    order = torch.sort(y, stable=True).indices  # nodes grouped by class
    class_size = torch.bincount(y, minlength=num_classes)
    class_start = torch.zeros(num_classes, dtype=torch.long)
    class_start[1:] = torch.cumsum(class_size, 0)[:-1]

    src_class = torch.arange(num_classes).repeat_interleave(num_classes)
    dst_class = torch.arange(num_classes).repeat(num_classes)
    intra = src_class == dst_class
    n_src, n_dst = class_size[src_class].double(), class_size[dst_class].double()
    capacity = torch.where(intra, n_src * (n_dst - 1), n_src * n_dst)
    num_intra = round(homophily * num_edges)
    target = torch.zeros(num_classes * num_classes, dtype=torch.long)
    target[intra] = _apportion(num_intra, capacity[intra])
    target[~intra] = _apportion(num_edges - num_intra, capacity[~intra])
    over = target.double() > capacity
    if bool(over.any()):
        b = int(over.nonzero()[0])
        raise ValueError(f"sbm: block ({int(src_class[b])}, {int(dst_class[b])}) needs "
                         f"{int(target[b])} edges but has room for {int(capacity[b])}; lower "
                         f"avg_degree or move homophily away from the extremes")

    keys = _sample_block_edges(y, order, class_start, class_size, src_class, dst_class, target,
                               gen)
    edge_index = torch.stack([keys % num_nodes, keys // num_nodes])

    means = torch.randn(num_classes, num_features, generator=gen)
    noise = torch.randn(num_nodes, num_features, generator=gen)
    x = (means[y] + feature_noise * noise).float()
    train, val, test = random_split_masks(num_nodes, train_fraction, val_fraction,
                                          seed=int(seed) + 1)
    return Data(x=x, y=y, edge_index=edge_index, train_mask=train, val_mask=val,
                test_mask=test)


def sbm_dense(num_nodes: int = 120_000, num_edges: int = 1_100_000, num_classes: int = 16,
              homophily: float = 0.2, **kwargs) -> Data:
    """Large SBM whose edges mostly cross communities (80% by default), so any partition
    leaves most of the graph in each rank's halo: about 120k nodes, 1.1M directed edges.
    Other keyword arguments go to :func:`sbm`."""
    return sbm(num_nodes=num_nodes, num_edges=num_edges, num_classes=num_classes,
               homophily=homophily, **kwargs)


def sbm_sparse(num_nodes: int = 20_000, avg_degree: float = 5.0, num_classes: int = 10,
               homophily: float = 0.8, **kwargs) -> Data:
    """Smaller, sparser, homophilous SBM (20k nodes, 100k directed edges, 80% of edges inside a
    community), so a good partition has a small halo. Other keyword arguments go to
    :func:`sbm`."""
    return sbm(num_nodes=num_nodes, avg_degree=avg_degree, num_classes=num_classes,
               homophily=homophily, **kwargs)
