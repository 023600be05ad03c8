"""Your own MessagePassing layer, trained over the ranks of the job (Cora).

    mpiexec -n 2 python examples/own_layer.py
    python examples/own_layer.py                # one process

``pyg_sar.convert`` runs a layer only when it can show the layer is exact over
a partitioned graph. For PyG's own layers that is a verified table; for yours
it is a conservative static rule: ``forward`` calls no graph utility
(``add_self_loops``, ``degree``, ...), which would see only one rank's part of
the graph, and ``message`` reads no source-side structure (``edge_index_j``).
A softmax over a node's in-edges inside ``message`` (``softmax(alpha, index)``)
passes: pyg_sar then gives ``message`` every in-edge of a node at once.
``GatedMeanConv`` below passes the rule. A layer that does not is refused with
the reason; when you know it is exact anyway, vouch for it with
``pyg_sar.SARConfig(trusted_layers=(YourConv,))``.
"""
import argparse
import os.path as osp

import torch
import torch.nn.functional as F
from torch.nn import Linear

import pyg_sar
import torch_geometric.transforms as T
from pyg_sar.datasets import Planetoid
from torch_geometric.nn import MessagePassing
from torch_geometric.utils import degree

parser = argparse.ArgumentParser()
parser.add_argument('--hidden_channels', type=int, default=32)
parser.add_argument('--lr', type=float, default=0.01)
parser.add_argument('--epochs', type=int, default=100)
parser.add_argument('--seed', type=int, default=0)
args = parser.parse_args()
torch.manual_seed(args.seed)


class GatedMeanConv(MessagePassing):
    r"""x_i' = W_r x_i + mean_{j in N(i)} sigmoid(a^T [x_i || x_j]) * W x_j.

    The gate reads both ends of the edge and has parameters: ``x_j`` crosses
    the network, ``x_i`` stays on the rank that owns node i, and the
    gradients of ``W`` and ``a`` are exact.
    """
    def __init__(self, in_channels, out_channels):
        super().__init__(aggr='mean')
        self.lin = Linear(in_channels, out_channels)
        self.lin_root = Linear(in_channels, out_channels, bias=False)
        self.gate = Linear(2 * in_channels, 1)

    def forward(self, x, edge_index):
        return self.propagate(edge_index, x=x) + self.lin_root(x)

    def message(self, x_i, x_j):
        gate = self.gate(torch.cat([x_i, x_j], dim=-1)).sigmoid()
        return gate * self.lin(x_j)


class DegreeConv(MessagePassing):
    """Divides by the in-degree it computes from ``edge_index`` in ``forward``:
    over a partitioned graph ``edge_index`` is not a tensor of all edges, so
    ``convert`` refuses it (pyg_sar's own layers get the degree from the
    partition)."""
    def __init__(self, in_channels, out_channels):
        super().__init__(aggr='add')
        self.lin = Linear(in_channels, out_channels)

    def forward(self, x, edge_index):
        deg = degree(edge_index[1], x.size(0)).clamp(min=1).view(-1, 1)
        return self.propagate(edge_index, x=self.lin(x)) / deg


class Net(torch.nn.Module):
    def __init__(self, conv, in_channels, hidden_channels, out_channels):
        super().__init__()
        self.conv1 = conv(in_channels, hidden_channels)
        self.conv2 = conv(hidden_channels, out_channels)

    def forward(self, x, edge_index):
        x = F.dropout(x, p=0.5, training=self.training)
        x = self.conv1(x, edge_index).relu()
        x = F.dropout(x, p=0.5, training=self.training)
        return self.conv2(x, edge_index)


path = osp.join(osp.dirname(osp.realpath(__file__)), '..', 'data', 'Planetoid')
dataset = Planetoid(path, 'Cora', transform=T.NormalizeFeatures())
data = pyg_sar.distribute(dataset[0])

try:
    pyg_sar.convert(Net(DegreeConv, dataset.num_features, 16,
                        dataset.num_classes))
except pyg_sar.UnsupportedLayerError as e:
    pyg_sar.print(f'Refused, as expected: {e}')

model = Net(GatedMeanConv, dataset.num_features, args.hidden_channels,
            dataset.num_classes)
pyg_sar.convert(model)  # accepted by the static rule
optimizer = torch.optim.Adam(model.parameters(), lr=args.lr, weight_decay=5e-4)


def train():
    model.train()
    optimizer.zero_grad()
    out = model(data.x, data.edge_index)
    loss = pyg_sar.nn.functional.cross_entropy(out, data.y, data.train_mask)
    loss.backward()
    optimizer.step()
    return float(loss.detach())


@torch.no_grad()
def test():
    model.eval()
    pred = model(data.x, data.edge_index).argmax(dim=-1)
    return [pyg_sar.nn.functional.accuracy(pred, data.y, mask)
            for mask in (data.train_mask, data.val_mask, data.test_mask)]


best_val_acc = test_acc = 0
for epoch in range(1, args.epochs + 1):
    loss = train()
    train_acc, val_acc, tmp_test_acc = test()
    if val_acc > best_val_acc:
        best_val_acc, test_acc = val_acc, tmp_test_acc
    pyg_sar.print(f'Epoch: {epoch:03d}, Loss: {loss:.4f}, '
                  f'Train: {train_acc:.4f}, Val: {val_acc:.4f}, '
                  f'Test: {test_acc:.4f}')
