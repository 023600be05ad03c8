"""APPNP (Klicpera et al., ICLR 2019) on Cora: a two-layer MLP followed by
K = 10 steps of personalised-PageRank propagation over GCN-normalised edge
weights, trained full-batch over the ranks of the job.

    mpiexec -n 2 python examples/appnp.py
    python examples/appnp.py                    # one process

Edge values travel with the graph: ``T.GCNNorm()`` runs before
``pyg_sar.distribute``, so every rank receives the normalised weight of each
of its edges in ``data.edge_weight`` (in the order of the rank's stored
edges). Pass it where PyG expects ``edge_weight``, as in one process.
"""
import argparse
import os.path as osp

import torch
import torch.nn.functional as F

import pyg_sar
import torch_geometric.transforms as T
from pyg_sar.datasets import Planetoid
from torch_geometric.nn import APPNP

parser = argparse.ArgumentParser()
parser.add_argument('--dataset', type=str, default='Cora')
parser.add_argument('--hidden_channels', type=int, default=64)
parser.add_argument('--K', type=int, default=10)
parser.add_argument('--alpha', type=float, default=0.1)
parser.add_argument('--lr', type=float, default=0.01)
parser.add_argument('--epochs', type=int, default=200)
parser.add_argument('--seed', type=int, default=0)
args = parser.parse_args()
torch.manual_seed(args.seed)

path = osp.join(osp.dirname(osp.realpath(__file__)), '..', 'data', 'Planetoid')
# Preprocess before distributing: GCNNorm adds self-loops and stores the
# symmetric normalisation D^-1/2 (A + I) D^-1/2 in data.edge_weight.
transform = T.Compose([T.NormalizeFeatures(), T.GCNNorm()])
dataset = Planetoid(path, args.dataset, transform=transform)
data = pyg_sar.distribute(dataset[0])  # this rank's part (a PyG Data)


class Net(torch.nn.Module):
    def __init__(self, in_channels, hidden_channels, out_channels):
        super().__init__()
        self.lin1 = torch.nn.Linear(in_channels, hidden_channels)
        self.lin2 = torch.nn.Linear(hidden_channels, out_channels)
        # The weights are normalised already: no second normalisation.
        self.prop = APPNP(args.K, args.alpha, normalize=False)

    def forward(self, x, edge_index, edge_weight):
        x = F.dropout(x, p=0.5, training=self.training)
        x = self.lin1(x).relu()
        x = F.dropout(x, p=0.5, training=self.training)
        x = self.lin2(x)
        return self.prop(x, edge_index, edge_weight)


model = Net(dataset.num_features, args.hidden_channels, dataset.num_classes)
pyg_sar.convert(model)  # APPNP now propagates over the rank's DistGraph
optimizer = torch.optim.Adam(model.parameters(), lr=args.lr, weight_decay=5e-4)


def train():
    model.train()
    optimizer.zero_grad()
    out = model(data.x, data.edge_index, data.edge_weight)
    # The mean over the training nodes of ALL ranks (gradients are summed
    # over ranks automatically after backward).
    loss = pyg_sar.nn.functional.cross_entropy(out, data.y, data.train_mask)
    loss.backward()
    optimizer.step()
    return float(loss.detach())


@torch.no_grad()
def test():
    model.eval()
    pred = model(data.x, data.edge_index, data.edge_weight).argmax(dim=-1)
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
