"""The bipartite DistGraph (one edge type between two node types): sizes, copies, refusals."""
from __future__ import annotations

import copy
import pickle

import pytest
import torch

from pyg_sar.graph import Block, DistGraph
from tests.hetero.hand_graphs import build_graph, even_offsets


def _edges(num_src=11, num_dst=7, num_edges=30, seed=0):
    g = torch.Generator().manual_seed(seed)
    ei = torch.stack([torch.randint(0, num_src, (num_edges,), generator=g),
                      torch.randint(0, num_dst, (num_edges,), generator=g)])
    return torch.unique(ei, dim=1)


def test_sizes_of_a_bipartite_graph_on_every_rank():
    ei = _edges()
    src_off, dst_off = even_offsets(11, 3), even_offsets(7, 3)
    for rank in range(3):
        graph, ids = build_graph(ei, src_off, dst_off, rank)
        assert graph.is_bipartite
        assert graph.num_src_nodes == src_off[rank + 1] - src_off[rank]
        assert graph.num_nodes == dst_off[rank + 1] - dst_off[rank]
        assert graph.num_global_src_nodes == 11 and graph.num_global_nodes == 7
        assert graph.blocks[rank].num_src == graph.num_src_nodes
        mine = (ei[1] >= dst_off[rank]) & (ei[1] < dst_off[rank + 1])
        assert graph.num_edges == int(mine.sum())
        assert torch.equal(torch.sort(ids).values, mine.nonzero().view(-1))
        assert int(graph.in_degree.sum()) == graph.num_edges
        assert "num_src_nodes" in repr(graph)


def test_homogeneous_defaults_unchanged():
    ei = _edges(7, 7)
    graph, _ = build_graph(ei, [0, 7], [0, 7], 0)
    assert not graph.is_bipartite  # same offsets: one node set
    assert graph.num_src_nodes == graph.num_nodes == 7
    forced, _ = build_graph(ei, [0, 7], [0, 7], 0, bipartite=True)
    assert forced.is_bipartite  # two node types whose ranges coincide


def test_copies_keep_the_source_node_set():
    graph, _ = build_graph(_edges(), [0, 11], [0, 7], 0)
    clones = [pickle.loads(pickle.dumps(graph)), copy.deepcopy(graph), graph.to("cpu"),
              graph.with_values(torch.ones(graph.num_edges)),
              graph[:, torch.arange(graph.num_edges) % 2 == 0]]
    for clone in clones:
        assert clone.is_bipartite
        assert clone.num_src_nodes == 11 and clone.num_global_src_nodes == 11
        assert clone.src_node_offsets == [0, 11]
    masked = clones[-1]
    assert masked.num_edges == (graph.num_edges + 1) // 2
    assert int(masked.in_degree.sum()) == masked.num_edges


def test_old_pickles_load_as_homogeneous():
    graph, _ = build_graph(_edges(7, 7), [0, 7], [0, 7], 0)
    state = graph.__getstate__()
    del state["src_node_offsets"], state["_bipartite"]
    old = DistGraph.__new__(DistGraph)
    old.__setstate__(state)
    assert not old.is_bipartite and old.num_src_nodes == 7


def test_bad_inputs_are_refused():
    graph, _ = build_graph(_edges(), [0, 11], [0, 7], 0)
    with pytest.raises(TypeError, match="bipartite"):
        graph.flip([0])
    with pytest.raises(ValueError, match="source node offsets"):
        DistGraph(0, 1, [0, 7], graph.blocks, graph.send_idx, graph.in_degree,
                  src_node_offsets=[0, 5, 11])
    with pytest.raises(ValueError, match="11 source rows"):
        DistGraph(0, 1, [0, 7], graph.blocks, graph.send_idx, graph.in_degree,
                  src_node_offsets=[0, 12])
    with pytest.raises(ValueError, match="bipartite=False"):
        DistGraph(0, 1, [0, 7], graph.blocks, graph.send_idx, graph.in_degree,
                  src_node_offsets=[0, 11], bipartite=False)
    b = graph.blocks[0]
    wrong = Block(0, b.rowptr, b.col, 11, 0, None)
    with pytest.raises(ValueError, match="7 nodes of the source node set"):
        DistGraph(0, 1, [0, 7], [wrong], graph.send_idx, graph.in_degree)
