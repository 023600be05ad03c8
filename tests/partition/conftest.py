"""Small random graphs for the partition tests (no dependency on pyg_sar.datasets)."""
from __future__ import annotations

import pytest
import torch
from torch_geometric.data import Data


def random_graph(num_nodes: int = 40, num_edges: int = 160, *, num_isolated: int = 5,
                 num_self_loops: int = 4, duplicates: int = 0, seed: int = 0) -> Data:
    """Random directed graph with isolated nodes, self-loops, node and edge tensors.

    Edges between distinct nodes are duplicate-free unless ``duplicates > 0``, in which case
    that many existing edges are repeated (with their own attributes).
    """
    gen = torch.Generator().manual_seed(seed)
    active = num_nodes - num_isolated
    pairs = torch.randperm(active * active, generator=gen)
    src, dst = pairs // active, pairs % active
    keep = src != dst
    src, dst = src[keep][:num_edges], dst[keep][:num_edges]
    loops = torch.randperm(active, generator=gen)[:num_self_loops]
    src, dst = torch.cat([src, loops]), torch.cat([dst, loops])
    if duplicates:
        again = torch.randint(0, src.numel(), (duplicates,), generator=gen)
        src, dst = torch.cat([src, src[again]]), torch.cat([dst, dst[again]])
    # Scatter the isolated nodes over the id range and shuffle the edge order.
    relabel = torch.randperm(num_nodes, generator=gen)
    shuffle = torch.randperm(src.numel(), generator=gen)
    edge_index = torch.stack([relabel[src], relabel[dst]])[:, shuffle]
    num_edges = edge_index.size(1)
    split = torch.randint(0, 3, (num_nodes,), generator=gen)
    return Data(
        x=torch.randn(num_nodes, 5, generator=gen),
        y=torch.randint(0, 4, (num_nodes,), generator=gen),
        train_mask=split == 0, val_mask=split == 1, test_mask=split == 2,
        node_score=torch.randn(num_nodes, dtype=torch.float64, generator=gen),
        pos=torch.randn(num_nodes, 3, generator=gen).to(torch.bfloat16),
        edge_index=edge_index,
        edge_attr=torch.randn(num_edges, 3, generator=gen),
        edge_weight=torch.rand(num_edges, generator=gen),
        edge_label=torch.randint(0, 100, (num_edges,), generator=gen),
        edge_half=torch.randn(num_edges, 2, generator=gen).half(),
    )


@pytest.fixture
def graph() -> Data:
    return random_graph()


@pytest.fixture
def make_graph():
    """The :func:`random_graph` factory, for tests that need other sizes."""
    return random_graph
