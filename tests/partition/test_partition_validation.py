"""Bad input to partition_graph: a ValueError naming the offending value, and nothing written."""
from __future__ import annotations

import pytest
import torch
from torch_geometric.data import Data

from pyg_sar.partition import partition_graph


def _expect_error(data, tmp_path, match, num_parts=2, **kwargs):
    out = tmp_path / "parts"
    with pytest.raises(ValueError, match=match):
        partition_graph(data, num_parts, out, **kwargs)
    assert not out.exists()
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("num_parts", [0, -3, 41])
def test_num_parts_out_of_range(graph, tmp_path, num_parts):
    _expect_error(graph, tmp_path, rf"num_parts must be in \[1, num_nodes=40\] "
                                   rf"\(got {num_parts}\)", num_parts=num_parts)


def test_num_parts_not_integer(graph, tmp_path):
    _expect_error(graph, tmp_path, r"num_parts must be an integer \(got 2.0\)", num_parts=2.0)


def test_unknown_method(graph, tmp_path):
    _expect_error(graph, tmp_path, "unknown partition method 'kahip'", method="kahip")


def test_float_edge_index(graph, tmp_path):
    graph.edge_index = graph.edge_index.float()
    _expect_error(graph, tmp_path, r"integer tensor \(got dtype torch.float32\)")


def test_edge_index_wrong_shape(tmp_path):
    data = Data(x=torch.randn(5, 2), edge_index=torch.zeros(3, 4, dtype=torch.long))
    _expect_error(data, tmp_path, r"shape \[2, num_edges\] \(got \[3, 4\]\)")


def test_negative_node_id(graph, tmp_path):
    graph.edge_index[0, 7] = -4
    _expect_error(graph, tmp_path, r"node id -4 \(edge 7\), outside \[0, num_nodes=40\)")


def test_node_id_too_large(graph, tmp_path):
    graph.edge_index[1, 11] = 40
    _expect_error(graph, tmp_path, r"node id 40 \(edge 11\), outside \[0, num_nodes=40\)")


def test_int32_edge_index_is_accepted(graph, tmp_path):
    graph.edge_index = graph.edge_index.int()
    partition_graph(graph, 2, tmp_path / "parts", method="random")
    assert (tmp_path / "parts" / "meta.json").is_file()


@pytest.mark.parametrize("key", ["x", "y", "train_mask"])
def test_node_tensor_with_wrong_rows(graph, tmp_path, key):
    graph[key] = graph[key][:-3]
    _expect_error(graph, tmp_path, rf"disagree on the number of nodes .*'{key}' has 37 rows")


def test_edge_tensor_with_wrong_rows(graph, tmp_path):
    graph.edge_weight = graph.edge_weight[:10]
    _expect_error(graph, tmp_path, r"edge tensor 'edge_weight' has 10 rows, expected "
                                   rf"num_edges={graph.num_edges}")


def test_missing_edge_index(tmp_path):
    _expect_error(Data(x=torch.randn(4, 2)), tmp_path, "no 'edge_index'")


def test_unknown_sized_attribute_warns_and_is_skipped(graph, tmp_path):
    graph.graph_feature = torch.randn(1, 7)
    with pytest.warns(UserWarning, match="'graph_feature'.*not stored"):
        partition_graph(graph, 2, tmp_path / "parts", method="random")
