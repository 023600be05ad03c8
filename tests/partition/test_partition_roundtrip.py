"""Round trip: partition -> load every rank -> rebuild the input graph exactly."""
from __future__ import annotations

import numpy as np
import pytest
import torch
from torch_geometric.data import Data

from pyg_sar.partition import load_node_map, load_partition, partition_graph
from pyg_sar.partition.metis import symmetric_csr

METHODS = ["metis", "random", "contiguous"]
NODE_KEYS = ["x", "y", "train_mask", "val_mask", "test_mask"]


def _load_all(path, num_parts):
    return [load_partition(path, r) for r in range(num_parts)]


def _check_roundtrip(data: Data, parts, path) -> None:
    num_nodes, num_edges = data.num_nodes, data.num_edges
    num_parts = len(parts)
    offsets = parts[0].graph.node_offsets
    node_map = load_node_map(path)

    # Nodes: every node on exactly one rank, contiguous new ids, node data in local order.
    node_ids = torch.cat([p.node_ids for p in parts])
    assert torch.equal(node_ids.sort().values, torch.arange(num_nodes))
    for r, p in enumerate(parts):
        assert p.rank == r and p.num_parts == num_parts
        assert p.graph.num_nodes == p.node_ids.numel() == offsets[r + 1] - offsets[r]
        assert torch.equal(node_map[p.node_ids], torch.arange(offsets[r], offsets[r + 1]))
        for key in NODE_KEYS:
            assert torch.equal(getattr(p, key), data[key][p.node_ids]), key
        assert set(p.node_data) == {"node_score", "pos"}
        assert torch.equal(p.node_data["node_score"], data.node_score[p.node_ids])
        assert p.node_data["pos"].dtype == torch.bfloat16
        assert torch.equal(p.node_data["pos"], data.pos[p.node_ids])

    # Edges: every input edge stored exactly once, on its destination's rank, with its data.
    edge_ids = torch.cat([p.edge_ids for p in parts])
    assert torch.equal(edge_ids.sort().values, torch.arange(num_edges))
    for p in parts:
        gei = p.global_edge_index()
        assert gei.shape == (2, p.graph.num_edges)
        assert torch.equal(gei, data.edge_index[:, p.edge_ids])
        assert bool(torch.isin(gei[1], p.node_ids).all())  # destination is local
        assert torch.equal(p.edge_attr, data.edge_attr[p.edge_ids])
        assert torch.equal(p.edge_weight, data.edge_weight[p.edge_ids])
        assert set(p.edge_data) == {"edge_label", "edge_half"}
        assert torch.equal(p.edge_data["edge_label"], data.edge_label[p.edge_ids])
        assert p.edge_data["edge_half"].dtype == torch.float16
        assert torch.equal(p.edge_data["edge_half"], data.edge_half[p.edge_ids])

    # Independent of edge_ids: the multiset of (src, dst, attributes) rows is the input's.
    def rows(ei, attr, weight):
        table = torch.cat([ei.t().double(), attr.double(), weight.double()[:, None]], dim=1)
        return sorted(map(tuple, table.tolist()))

    rebuilt = rows(torch.cat([p.global_edge_index() for p in parts], 1),
                   torch.cat([p.edge_attr for p in parts]),
                   torch.cat([p.edge_weight for p in parts]))
    assert rebuilt == rows(data.edge_index, data.edge_attr, data.edge_weight)

    # Blocks, send/recv lists and degrees.
    in_degree = torch.bincount(data.edge_index[1], minlength=num_nodes)
    for r, p in enumerate(parts):
        g = p.graph
        assert g.world_size == num_parts and g.rank == r
        assert torch.equal(g.in_degree, in_degree[p.node_ids])
        assert g.send_idx[r].numel() == 0
        gei = p.global_edge_index()
        start = 0
        for s, block in enumerate(g.blocks):
            assert block.src_rank == s and block.edge_start == start
            start += block.num_edges
            assert block.num_dst == g.num_nodes
            assert bool((block.rowptr[1:] >= block.rowptr[:-1]).all())
            src, dst = gei[:, block.edge_slice]
            assert torch.equal(p.node_ids[block.row], dst)
            # Sorted by (destination, source column) inside the block.
            key = block.row * max(block.num_src, 1) + block.col
            assert bool((key[1:] >= key[:-1]).all())
            if s == r:
                assert block.num_src == g.num_nodes
                assert torch.equal(p.node_ids[block.col], src)
                assert torch.equal(block.src_in_degree, g.in_degree)
                continue
            sender = parts[s]
            send = sender.graph.send_idx[r]
            assert send.numel() == block.num_src == g.recv_counts[s]
            assert sender.graph.send_counts[r] == block.num_src
            sent_ids = sender.node_ids[send]  # original ids of the rows s sends to r
            assert torch.equal(sent_ids[block.col], src)  # the rows are the sources used
            assert torch.equal(block.col.unique(), torch.arange(block.num_src))  # all used
            assert torch.equal(block.src_in_degree, in_degree[sent_ids])
        assert start == g.num_edges


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("num_parts", [1, 2, 3, 4])
def test_roundtrip(graph, tmp_path, method, num_parts):
    out = partition_graph(graph, num_parts, tmp_path / "parts", method=method, seed=1)
    assert out == tmp_path / "parts"
    parts = _load_all(out, num_parts)
    _check_roundtrip(graph, parts, out)
    meta = parts[0].meta
    assert meta["method"] == method and meta["seed"] == 1
    assert meta["num_features"] == 5 and meta["num_classes"] == 4
    cut = int(sum((graph.edge_index[0] != graph.edge_index[1]).tolist()))  # upper bound
    assert 0 <= meta["edge_cut"] <= cut
    if num_parts == 1:
        assert meta["edge_cut"] == 0


@pytest.mark.parametrize("method", METHODS)
def test_roundtrip_with_duplicate_edges(make_graph, tmp_path, method):
    data = make_graph(num_nodes=30, num_edges=90, duplicates=25, seed=3)
    parts = _load_all(partition_graph(data, 3, tmp_path, method=method), 3)
    _check_roundtrip(data, parts, tmp_path)


def test_partition_is_deterministic(graph, tmp_path):
    a = load_partition(partition_graph(graph, 3, tmp_path / "a", seed=7), 1)
    b = load_partition(partition_graph(graph, 3, tmp_path / "b", seed=7), 1)
    assert a.fingerprint == b.fingerprint and len(a.fingerprint) == 64
    assert torch.equal(a.node_ids, b.node_ids)


def test_balanced_methods_give_equal_part_sizes(graph, tmp_path):
    for method in ("random", "contiguous"):
        out = partition_graph(graph, 3, tmp_path / method, method=method)
        sizes = load_partition(out, 0).meta["part_num_nodes"]
        assert sorted(sizes) == [13, 13, 14]
    contiguous = [load_partition(tmp_path / "contiguous", r).node_ids for r in range(3)]
    assert torch.equal(torch.cat(contiguous), torch.arange(40))  # identity renumbering


def test_metis_cuts_two_communities(tmp_path):
    # Two directed 10-cliques joined by one edge: METIS must find the single cut edge.
    clique = torch.combinations(torch.arange(10), 2).t()
    clique = torch.cat([clique, clique.flip(0)], dim=1)
    edge_index = torch.cat([clique, clique + 10, torch.tensor([[3], [15]])], dim=1)
    data = Data(edge_index=edge_index, num_nodes=20)
    parts = _load_all(partition_graph(data, 2, tmp_path, method="metis"), 2)
    assert parts[0].meta["edge_cut"] == 1
    assert sorted(p.node_ids.min().item() // 10 for p in parts) == [0, 1]
    assert [p.graph.recv_counts for p in parts] in ([[0, 0], [1, 0]], [[0, 1], [0, 0]])


def test_symmetric_csr_drops_loops_and_duplicates():
    edge_index = np.array([[0, 1, 1, 2, 2, 0, 3], [1, 0, 1, 0, 0, 2, 3]])
    xadj, adjncy = symmetric_csr(edge_index, 5)
    assert xadj.dtype == adjncy.dtype == np.int64
    assert xadj.tolist() == [0, 2, 3, 4, 4, 4]
    assert adjncy.tolist() == [1, 2, 0, 0]


def test_graph_without_edges(tmp_path):
    data = Data(x=torch.randn(6, 2), edge_index=torch.zeros(2, 0, dtype=torch.long))
    for method in METHODS:
        parts = _load_all(partition_graph(data, 3, tmp_path / method, method=method), 3)
        assert sum(p.graph.num_nodes for p in parts) == 6
        assert all(p.graph.num_edges == 0 and p.edge_attr is None for p in parts)
        assert all(p.global_edge_index().shape == (2, 0) for p in parts)
        assert torch.equal(torch.cat([p.x for p in parts]),
                           data.x[torch.cat([p.node_ids for p in parts])])
