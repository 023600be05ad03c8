"""A model not converted but given a DistGraph fails naming ``pyg_sar.convert(model)``, not only
with PyG's generic complaint about ``edge_index``; the check is installed by the first
DistGraph and leaves plain PyG alone."""
from __future__ import annotations

import subprocess
import sys

import pytest
from torch_geometric.nn import GAT, GCN, GATConv, GCNConv, MessagePassing, SAGEConv

import pyg_sar
from pyg_sar.datasets import sbm


class UserLayer(MessagePassing):
    def forward(self, x, edge_index):
        return self.propagate(edge_index, x=x)


@pytest.fixture(scope="module")
def graph_data():
    return sbm(num_nodes=50, num_classes=3, avg_degree=4.0, num_features=5, seed=0)


@pytest.fixture
def part(tmp_path, graph_data):
    pyg_sar.partition_graph(graph_data, 1, tmp_path / "p")
    return pyg_sar.load_partition(tmp_path / "p", 0)


@pytest.mark.parametrize("make", [
    lambda: GCNConv(5, 3), lambda: SAGEConv(5, 3), lambda: GATConv(5, 3), lambda: UserLayer(),
    lambda: GCN(5, 8, num_layers=2, out_channels=3), lambda: GAT(5, 8, num_layers=2),
], ids=["GCNConv", "SAGEConv", "GATConv", "user", "GCN", "GAT"])
def test_unconverted_model_names_the_fix(part, make):
    model = make()
    with pytest.raises(ValueError, match=r"is not converted: call pyg_sar\.convert\(model\)"):
        model(part.x, part.edge_index)
    pyg_sar.convert(model)  # the fix works
    assert model(part.x, part.edge_index).shape[0] == part.num_nodes


def test_the_message_names_the_layer_class(part):
    with pytest.raises(ValueError, match="pyg_sar: SAGEConv was given a pyg_sar DistGraph"):
        SAGEConv(5, 3)(part.x, part.graph)


def test_plain_pyg_is_unaffected(part, graph_data):
    model = GCN(5, 8, num_layers=2, out_channels=3)
    out = model(graph_data.x, graph_data.edge_index)  # a Tensor edge_index: PyG as usual
    assert out.shape == (graph_data.num_nodes, 3)
    converted = pyg_sar.convert(GCN(5, 8, num_layers=2, out_channels=3))
    assert converted(graph_data.x, graph_data.edge_index).shape == out.shape


def test_hook_is_installed_only_by_a_dist_graph():
    code = (
        "import torch, torch.nn.modules.module as M\n"
        "import pyg_sar, pyg_sar.nn\n"
        "from torch_geometric.nn import GCNConv\n"
        "GCNConv(3, 2)(torch.randn(4, 3), torch.tensor([[0, 1], [1, 2]]))\n"
        "before = len(M._global_forward_pre_hooks)\n"
        "from pyg_sar.graph import Block, DistGraph\n"
        "z = torch.zeros(2, dtype=torch.long)\n"
        "g = DistGraph(0, 1, [0, 1], [Block(0, torch.zeros(2, dtype=torch.long), "
        "torch.zeros(0, dtype=torch.long), 1, 0, z[:1])], [z[:0]], z[:1])\n"
        "DistGraph(0, 1, [0, 1], g.blocks, g.send_idx, g.in_degree)\n"
        "print(before, len(M._global_forward_pre_hooks))\n")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.stdout.split() == ["0", "1"]  # none before; one, however many graphs
