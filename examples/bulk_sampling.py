"""Minibatch GraphSAGE with pyg_sar's bulk sampler in an unchanged PyG loop.

    python examples/bulk_sampling.py                     # Cora
    python examples/bulk_sampling.py --dataset wordnet   # WordNet 3.0

``BulkNeighborLoader`` samples ``bulk`` minibatches per call as sparse-matrix
steps (Tripathy, Yelick and Buluc, MLSys 2024) and yields what PyG's
``NeighborLoader`` yields: ``batch.x``, ``batch.edge_index``, ``batch.y``,
``batch.batch_size``, ``batch.n_id`` (the seed nodes first). The training
loop below is PyG's ``NeighborLoader`` loop, unchanged. The same loader also
samples over the ranks of a partitioned graph; ``python -m pyg_sar.train
--sampler sage`` runs that under mpiexec.
"""
import argparse
import os.path as osp
import time

import torch
import torch.nn.functional as F

import torch_geometric.transforms as T
from pyg_sar.datasets import Planetoid, wordnet
from pyg_sar.sampling import BulkNeighborLoader
from torch_geometric.nn import GraphSAGE

parser = argparse.ArgumentParser()
parser.add_argument('--dataset', type=str, default='Cora',
                    choices=['Cora', 'CiteSeer', 'wordnet'])
parser.add_argument('--num_neighbors', type=str, default='10,10')
parser.add_argument('--batch_size', type=int, default=32)
parser.add_argument('--bulk', type=int, default=16,
                    help='minibatches sampled per sampler call')
parser.add_argument('--hidden_channels', type=int, default=64)
parser.add_argument('--lr', type=float, default=0.01)
parser.add_argument('--epochs', type=int, default=20)
parser.add_argument('--seed', type=int, default=0)
args = parser.parse_args()
torch.manual_seed(args.seed)

if args.dataset == 'wordnet':
    data = wordnet(split_seed=0)
else:
    path = osp.join(osp.dirname(osp.realpath(__file__)), '..', 'data',
                    'Planetoid')
    data = Planetoid(path, args.dataset, transform=T.NormalizeFeatures())[0]
num_classes = int(data.y.max()) + 1

train_loader = BulkNeighborLoader(
    data,
    num_neighbors=[int(k) for k in args.num_neighbors.split(',')],
    batch_size=args.batch_size,
    bulk=args.bulk,
    shuffle=True,
    seed=args.seed,
    input_nodes=data.train_mask,
)

model = GraphSAGE(data.num_features, args.hidden_channels,
                  len(train_loader.sizes), num_classes, dropout=0.5)
optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)


def train():
    model.train()
    total_loss = total_examples = 0
    for batch in train_loader:
        optimizer.zero_grad()
        out = model(batch.x, batch.edge_index)[:batch.batch_size]
        loss = F.cross_entropy(out, batch.y[:batch.batch_size])
        loss.backward()
        optimizer.step()
        total_loss += float(loss) * batch.batch_size
        total_examples += batch.batch_size
    return total_loss / total_examples


@torch.no_grad()
def test():  # full-batch inference on the whole graph
    model.eval()
    pred = model(data.x, data.edge_index).argmax(dim=-1)
    return [int((pred[mask] == data.y[mask]).sum()) / int(mask.sum())
            for mask in (data.train_mask, data.val_mask, data.test_mask)]


times = []
for epoch in range(1, args.epochs + 1):
    start = time.time()
    loss = train()
    times.append(time.time() - start)
    train_acc, val_acc, test_acc = test()
    print(f'Epoch: {epoch:03d}, Loss: {loss:.4f}, Train: {train_acc:.4f}, '
          f'Val: {val_acc:.4f}, Test: {test_acc:.4f}')
print(f'Median time per epoch: {torch.tensor(times).median():.4f}s')
