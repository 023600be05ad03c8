"""Layers pyg_sar cannot run as asked fail with an error naming the layer, the reason and what
is supported: SuperGATConv's self-supervised attention loss (PyG's ``super_gat.py``); ARMAConv,
refused before its adapter forward, now runs (trusted or not)."""
from __future__ import annotations

import copy

import pytest
import torch
import torch.nn.functional as F
from torch_geometric.nn import ARMAConv, SuperGATConv

import pyg_sar
from pyg_sar.nn.conversion.converted import SARLayer
from pyg_sar.partition import load_partition, partition_graph
from pyg_sar.testing.zoo_rank import make_graph
from pyg_sar.testing.zoo_recipes import IN, NUM_CLASSES


@pytest.fixture(scope="module")
def graph(tmp_path_factory):
    data = make_graph()
    path = partition_graph(data, 1, tmp_path_factory.mktemp("errors") / "p", method="random")
    return data, load_partition(path, 0, world_size=1)


class SuperGATNet(torch.nn.Module):
    """The model of PyG's examples/super_gat.py (attention dropout 0, so runs compare)."""

    def __init__(self, attention_loss: bool) -> None:
        super().__init__()
        self.attention_loss = attention_loss
        self.conv1 = SuperGATConv(IN, 8, heads=8, dropout=0.0, attention_type="MX",
                                  edge_sample_ratio=0.8, is_undirected=True)
        self.conv2 = SuperGATConv(8 * 8, NUM_CLASSES, heads=8, concat=False, dropout=0.0,
                                  attention_type="MX", edge_sample_ratio=0.8,
                                  is_undirected=True)

    def forward(self, x, edge_index):
        x = F.elu(self.conv1(x, edge_index))
        att_loss = self.conv1.get_attention_loss() if self.attention_loss else 0.0
        x = self.conv2(x, edge_index)
        if self.attention_loss:
            att_loss += self.conv2.get_attention_loss()
        return F.log_softmax(x, dim=-1), att_loss


def test_supergat_example_model_trains_with_its_attention_loss(graph):
    """PyG's examples/super_gat.py model runs unchanged over a partition: its training forward
    draws positives and negatives keyed by (layer, epoch) (pyg_sar.nn.super_gat; exactness
    against PyG given the same draws: tests/link/test_super_gat.py)."""
    data, part = graph
    model = pyg_sar.convert(SuperGATNet(attention_loss=True).double())
    model.train()
    out, att_loss = model(part.x, part.graph)
    assert att_loss.dim() == 0 and float(att_loss.detach()) > 0
    # In eval mode PyG's loss is 0, converted or not: the model runs.
    model.eval()
    out, att_loss = model(part.x, part.graph)
    assert out.shape == (part.num_nodes, NUM_CLASSES) and float(att_loss) == 0.0


def test_supergat_without_the_attention_loss_trains_exactly(graph):
    """What the error offers is exact: training on the task loss alone gives PyG's output and
    gradients (PyG's training forward samples edges for the loss, which the output ignores)."""
    data, part = graph
    torch.manual_seed(0)
    plain = SuperGATNet(attention_loss=False).double().train()
    model = pyg_sar.convert(copy.deepcopy(plain))
    out, _ = plain(data.x, data.edge_index)
    mask = data.train_mask
    F.nll_loss(out[mask], data.y[mask], reduction="sum").backward()
    got, _ = model(part.x, part.graph)
    local = part.train_mask
    F.nll_loss(got[local], part.y[local], reduction="sum").backward()
    torch.testing.assert_close(got, out[part.node_ids], rtol=1e-12, atol=1e-12)
    for (name, p), q in zip(plain.named_parameters(), model.parameters()):
        torch.testing.assert_close(q.grad, p.grad, rtol=1e-10, atol=1e-12, msg=name)


class ARMANet(torch.nn.Module):
    def __init__(self, conv_cls=ARMAConv) -> None:
        super().__init__()
        self.conv = conv_cls(IN, 4, num_stacks=2, num_layers=2, shared_weights=True)

    def forward(self, x, edge_index):
        return self.conv(x, edge_index)


class MyARMA(ARMAConv):
    pass


@pytest.mark.parametrize("conv_cls, trusted", [
    (ARMAConv, ()), (ARMAConv, (ARMAConv,)), (MyARMA, (MyARMA,))])
def test_arma_runs_trusted_or_not(graph, conv_cls, trusted):
    """ARMAConv runs through its adapter forward (its stacks propagated as channels), a
    trusted subclass that keeps PyG's forward too (exactness in every mode and the refusal of
    a subclass propagating 3-D stacks: tests/nn/test_custom_aggregate.py)."""
    data, part = graph
    torch.manual_seed(0)
    plain = ARMANet(conv_cls).double()
    model = pyg_sar.convert(copy.deepcopy(plain), pyg_sar.SARConfig(trusted_layers=trusted))
    assert isinstance(model.conv, SARLayer)
    torch.testing.assert_close(model(part.x, part.graph),
                               plain(data.x, data.edge_index)[part.node_ids],
                               rtol=1e-12, atol=1e-12)
