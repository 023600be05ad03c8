"""Small graphs and naive per-minibatch oracles for the sampling tests."""
from __future__ import annotations

import torch
from torch_geometric.data import Data


def random_graph(num_nodes: int, num_edges: int, seed: int, hubs: bool = True) -> Data:
    """A directed graph without duplicate edges; ``hubs`` adds a few high in-degree nodes so
    rows both shorter and longer than the fanouts occur."""
    g = torch.Generator().manual_seed(seed)
    src = torch.randint(0, num_nodes, (num_edges,), generator=g)
    dst = torch.randint(0, num_nodes, (num_edges,), generator=g)
    if hubs:
        extra = torch.randint(0, num_nodes, (num_edges // 4,), generator=g)
        src = torch.cat([src, extra])
        dst = torch.cat([dst, torch.randint(0, 3, (extra.numel(),), generator=g)])
    key = torch.unique(src * num_nodes + dst)
    edge_index = torch.stack([key // num_nodes, key % num_nodes])
    perm = torch.randperm(edge_index.size(1), generator=g)  # input order is not CSR order
    edge_index = edge_index[:, perm]
    x = torch.randn(num_nodes, 8, generator=g)
    y = torch.randint(0, 4, (num_nodes,), generator=g)
    return Data(x=x, y=y, edge_index=edge_index, num_nodes=num_nodes)


def edge_set(edge_index: torch.Tensor) -> set[tuple[int, int]]:
    return set(map(tuple, edge_index.t().tolist()))


def check_minibatch_layout(batch, data: Data, sizes: list[int], method: str,
                           seed_list: torch.Tensor) -> None:
    """Asserts NeighborLoader's layout and that every sampled edge exists with its e_id."""
    n_id, ei = batch.n_id, batch.edge_index
    hops = batch.num_sampled_nodes
    assert len(hops) == len(sizes) + 1 and len(batch.num_sampled_edges) == len(sizes)
    assert sum(hops) == n_id.numel() and sum(batch.num_sampled_edges) == ei.size(1)
    assert hops[0] == batch.batch_size
    assert n_id.unique().numel() == n_id.numel(), "a node appears twice in a minibatch"
    assert torch.equal(n_id[:batch.batch_size], seed_list[batch.input_id])  # seeds first
    # every edge exists, with its input position
    glob = torch.stack([n_id[ei[0]], n_id[ei[1]]])
    assert torch.equal(data.edge_index[:, batch.e_id], glob)
    # hop h: destinations are the nodes gained at hop h - 1, sources are held after hop h
    node_start = [0]
    for c in hops:
        node_start.append(node_start[-1] + c)
    e0 = 0
    for h, count in enumerate(batch.num_sampled_edges, start=1):
        dst, src = ei[1, e0:e0 + count], ei[0, e0:e0 + count]
        if count:
            assert int(dst.min()) >= node_start[h - 1] and int(dst.max()) < node_start[h]
            assert int(src.max()) < node_start[h + 1]
            assert bool((dst[1:] >= dst[:-1]).all()), "edges not grouped by destination"
        # no edge twice; GraphSAGE: at most fanout per destination, all when the row is short
        pairs = (src * n_id.numel() + dst)
        assert pairs.unique().numel() == pairs.numel()
        if method == "sage":
            deg = torch.bincount(data.edge_index[1], minlength=data.num_nodes)
            got = torch.bincount(dst - node_start[h - 1], minlength=hops[h - 1])
            want = deg[n_id[node_start[h - 1]:node_start[h]]]
            if sizes[h - 1] >= 0:
                want = want.clamp(max=sizes[h - 1])
            assert torch.equal(got, want)
        else:
            assert src.unique().numel() <= sizes[h - 1]
        e0 += count
    # new nodes of hop h first appear as sources at hop h, in order of first appearance
    e0 = 0
    for h, count in enumerate(batch.num_sampled_edges, start=1):
        src = ei[0, e0:e0 + count].tolist()
        seen, order = set(range(node_start[h])), []
        for s in src:
            if s not in seen:
                seen.add(s)
                order.append(s)
        assert order == list(range(node_start[h], node_start[h + 1]))
        e0 += count
