r"""A deterministic user-item interaction graph from latent factors: a recommendation task
whose held-out interactions are predictable from the training ones.

Users and items get latent vectors :math:`u, v \sim \mathcal{N}(0, I_d)`. Each user interacts
with ``interactions_per_user`` distinct items drawn without replacement with probability
proportional to :math:`\exp(u \cdot v / \tau)` (Gumbel top-k, one draw per user), plus a
popularity term, so that both collaborative signal and item popularity are present, as in
real data. A fraction ``test_fraction`` of each user's interactions is held out.

The graph is laid out as PyG's recommendation examples use it after
``HeteroData.to_homogeneous()``: nodes ``[0, num_users)`` are users and
``[num_users, num_users + num_items)`` items; ``edge_index`` holds the training interactions
in both directions (the message-passing graph of ``LightGCN``), ``edge_label_index`` the
held-out ``(user, item)`` pairs, one direction. Time and memory are
:math:`O(\text{users} \times \text{items})` per chunk of users, never the whole matrix.
"""
from __future__ import annotations

import torch
from torch_geometric.data import Data

_CHUNK = 1024  # users scored at once


def _check(name: str, value, low: float, high: float | None = None) -> None:
    if not (value >= low and (high is None or value <= high)):
        bound = f"[{low}, {high}]" if high is not None else f">= {low}"
        raise ValueError(f"user_item: {name} must be in {bound} (got {value!r})")


def user_item(num_users: int = 1000, num_items: int = 500, *, interactions_per_user: int = 20,
              dim: int = 8, temperature: float = 1.0, popularity: float = 0.5,
              test_fraction: float = 0.2, seed: int = 0) -> Data:
    r"""A bipartite user-item graph in homogeneous layout (see the module docstring).

    Args:
        num_users, num_items: node counts (items need ``num_items >= interactions_per_user``).
        interactions_per_user: distinct items per user (training + held out).
        dim: latent dimension.
        temperature: :math:`\tau`; smaller is more predictable.
        popularity: scale of a per-item log-popularity term (standard normal times this).
        test_fraction: share of each user's interactions held out (at least one per user
            when positive).
        seed: everything is a function of it.

    Returns:
        ``Data`` with ``edge_index`` ``[2, 2 * train]`` (user -> item and item -> user),
        ``edge_label_index`` ``[2, test]`` (user, item) with item ids offset by
        ``num_users``, ``num_nodes``, ``num_users``, ``num_items``.
    """
    _check("num_users", num_users, 1)
    _check("num_items", num_items, 1)
    _check("interactions_per_user", interactions_per_user, 1, num_items)
    _check("dim", dim, 1)
    _check("temperature", temperature, 1e-6)
    _check("popularity", popularity, 0.0)
    _check("test_fraction", test_fraction, 0.0, 1.0 - 1.0 / interactions_per_user
           if interactions_per_user > 1 else 0.0)
    g = torch.Generator().manual_seed(seed)
    user = torch.randn(num_users, dim, generator=g, dtype=torch.float64)
    item = torch.randn(num_items, dim, generator=g, dtype=torch.float64)
    pop = popularity * torch.randn(num_items, generator=g, dtype=torch.float64)
    k = interactions_per_user
    chosen = []
    for start in range(0, num_users, _CHUNK):
        u = user[start:start + _CHUNK]
        logits = u @ item.t() / (temperature * dim ** 0.5) + pop
        gumbel = -torch.log(-torch.log(
            torch.rand(logits.shape, generator=g, dtype=torch.float64).clamp_min(1e-300)))
        chosen.append((logits + gumbel).topk(k, dim=1).indices)
    items = torch.cat(chosen)  # [num_users, k], in order of preference (random order below)
    order = torch.rand(items.shape, generator=g).argsort(dim=1)
    items = items.gather(1, order)
    n_test = int(round(k * test_fraction))
    if test_fraction > 0:
        n_test = max(1, n_test)
    users = torch.arange(num_users).unsqueeze(1).expand(-1, k)
    train_u, train_i = users[:, n_test:].reshape(-1), items[:, n_test:].reshape(-1) + num_users
    test_u, test_i = users[:, :n_test].reshape(-1), items[:, :n_test].reshape(-1) + num_users
    edge_index = torch.cat([torch.stack([train_u, train_i]), torch.stack([train_i, train_u])],
                           dim=1)
    return Data(edge_index=edge_index, edge_label_index=torch.stack([test_u, test_i]),
                num_nodes=num_users + num_items, num_users=num_users, num_items=num_items)
