"""DistGraph's edge_index operations: ``graph[1]`` and ``graph[:, mask]`` are exact on every
rank's part (checked against the whole graph, single process, every rank of a 3-part
partition), everything else is refused with a TypeError naming the operation."""
from __future__ import annotations

import copy
import dataclasses

import pytest
import torch
from torch_geometric.data import Data
from torch_geometric.utils import degree

from pyg_sar.graph import DistGraph
from pyg_sar.partition import load_partition, partition_graph

NUM_NODES, NUM_EDGES, RELATIONS, PARTS = 40, 200, 3, 3


@pytest.fixture(scope="module")
def whole() -> Data:
    g = torch.Generator().manual_seed(0)
    ei = torch.randint(0, NUM_NODES - 3, (2, NUM_EDGES), generator=g)  # 3 isolated nodes
    ei = torch.cat([ei, torch.arange(0, 30, 5).repeat(2, 1)], dim=1)  # some self-loops
    e = ei.shape[1]
    return Data(x=torch.randn(NUM_NODES, 4, generator=g), edge_index=ei,
                edge_type=torch.randint(0, RELATIONS, (e,), generator=g),
                edge_weight=torch.rand(e, generator=g))


@pytest.fixture(scope="module")
def parts(whole, tmp_path_factory):
    path = partition_graph(whole, PARTS, tmp_path_factory.mktemp("parts") / "p",
                           method="random")
    return [load_partition(path, r) for r in range(PARTS)]


def test_destinations_are_local_ids_in_stored_order(whole, parts):
    for part in parts:
        graph = part.graph
        dst = graph[1]
        assert dst.dtype == torch.long and dst.shape == (graph.num_edges,)
        assert torch.equal(graph[-1], dst)
        assert torch.equal(part.node_ids[dst], part.global_edge_index()[1])
        # PyG's degree(edge_index[1], N) on a part is the whole graph's in-degree.
        want = degree(whole.edge_index[1], NUM_NODES, dtype=torch.long)[part.node_ids]
        assert torch.equal(degree(dst, graph.num_nodes, dtype=torch.long), want)
        assert torch.equal(graph.in_degree, want)


def test_masked_graph_keeps_the_masked_edges_in_stored_order(whole, parts):
    for part in parts:
        graph, edge_type = part.graph, part.edge_data["edge_type"]
        for r in range(RELATIONS):
            mask = edge_type == r
            sub = graph[:, mask]
            assert isinstance(sub, DistGraph) and sub is not graph
            assert sub.num_edges == int(mask.sum())
            # Same edges as edge_index[:, mask], same order (edge tensors become t[mask]).
            masked_part = copy.copy(part)  # a PartitionData (a PyG Data)
            masked_part.graph = sub
            assert torch.equal(masked_part.global_edge_index(),
                               part.global_edge_index()[:, mask])
            # in_degree counts only the masked in-edges (the whole graph's, per relation).
            whole_mask = whole.edge_type == r
            want = degree(whole.edge_index[1, whole_mask], NUM_NODES,
                          dtype=torch.long)[part.node_ids]
            assert torch.equal(sub.in_degree, want)
            assert torch.equal(degree(sub[1], sub.num_nodes, dtype=torch.long), want)
            # Exchange lists and block columns still index the parent's recv lists.
            assert sub.send_idx is graph.send_idx
            assert sub.recv_counts == graph.recv_counts
            for b, parent in zip(sub.blocks, graph.blocks):
                assert b.num_src == parent.num_src and b.src_rank == parent.src_rank
                assert b.rowptr.shape == parent.rowptr.shape
                assert b.src_in_degree is None  # sources' masked degrees: on their owners
            assert sub.node_offsets == graph.node_offsets
            assert sub.node_ids is graph.node_ids


def test_masking_composes_and_moves(parts):
    graph = parts[1].graph
    edge_type = parts[1].edge_data["edge_type"]
    first = graph[:, edge_type != 0]
    second = first[:, edge_type[edge_type != 0] == 1]
    direct = graph[:, edge_type == 1]
    assert torch.equal(second[1], direct[1])
    assert torch.equal(second.in_degree, direct.in_degree)
    assert [b.edge_start for b in second.blocks] == [b.edge_start for b in direct.blocks]
    moved = direct.to("cpu")
    assert torch.equal(moved[1], direct[1]) and moved.blocks[0].src_in_degree is None
    empty = graph[:, torch.zeros(graph.num_edges, dtype=torch.bool)]
    assert empty.num_edges == 0 and not empty.in_degree.any()
    assert empty[1].numel() == 0


@pytest.mark.parametrize("key, error, needle", [
    (0, TypeError, "sources of a rank's edges may live on other ranks"),
    (-2, TypeError, "sources of a rank's edges may live on other ranks"),
    (2, IndexError, "has 2 rows"),
    (slice(0, 1), TypeError, r"DistGraph\[0:1\] is not an operation"),
    ((0, slice(None)), TypeError, r"DistGraph\[0, :\] is not an operation"),
    ((slice(None), torch.tensor([0, 1])), TypeError, "must be a boolean tensor"),
    ((slice(None), torch.ones(3, dtype=torch.bool)), ValueError, "must have shape"),
    ((slice(1, None), torch.ones(3, dtype=torch.bool)), TypeError,
     r"DistGraph\[1:, <torch.bool tensor of shape \[3\]>\]"),
    (True, TypeError, "DistGraph\\[True\\]"),
])
def test_other_operations_are_refused_by_name(parts, key, error, needle):
    with pytest.raises(error, match=needle) as info:
        parts[0].graph[key]
    if error is TypeError:
        assert "supported: graph[1]" in str(info.value) or "boolean" in str(info.value)


def test_unpacking_is_refused(parts):
    with pytest.raises(TypeError, match=r"cannot be unpacked into \(row, col\)"):
        row, col = parts[0].graph


def test_cached_for_never_returns_another_objects_entry(parts):
    """Entries keyed by an object's identity hold the object: a new object that gets a dead
    one's ``id`` (simulated here by planting such an entry) is built afresh, not served the
    dead object's value."""
    graph = copy.copy(parts[0].graph)
    graph._cache = {}

    class Owner:
        pass

    first, second = Owner(), Owner()
    assert graph.cached_for(first, ("k",), lambda: "first") == "first"
    assert graph.cached_for(first, ("k",), lambda: "rebuilt") == "first"  # memoised
    graph._cache[("k", id(second))] = (first, "first")  # first's entry at second's id
    assert graph.cached_for(second, ("k",), lambda: "second") == "second"


def test_transposed_blocks_are_cached_only_for_their_own_index_tensors(parts):
    """The backward's transposed CSR is keyed by the index tensors' memory and shapes: a
    block over a prefix of the same memory (same address, other length) gets its own."""
    from pyg_sar.core.sar import _transposed
    from pyg_sar.core.views import stored_view
    graph = copy.copy(parts[0].graph)
    graph._cache = {}
    block = next(b for b in stored_view(graph).blocks if b.col.numel() > 1)
    full = _transposed(graph, block)
    assert _transposed(graph, block) is full  # cached
    k = (block.rowptr.numel() - 1) // 2  # the first half of the block's destinations
    shorter = dataclasses.replace(block, rowptr=block.rowptr[:k + 1],
                                  col=block.col[:int(block.rowptr[k])])
    assert shorter.rowptr.data_ptr() == block.rowptr.data_ptr()  # the same address
    part = _transposed(graph, shorter)
    assert part is not full and part[0].numel() == block.num_src + 1
    assert int(part[0][-1]) == int(block.rowptr[k])  # its own edges only
