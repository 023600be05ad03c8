"""GraphSAGE on WordNet 3.0, full-batch over the ranks of the job.

    mpiexec -n 2 python examples/graph_sage_wordnet.py
    python examples/graph_sage_wordnet.py       # one process

WordNet ships with pyg_sar (no download): 117,659 synsets, 367,578 semantic
links, a 2,000-word bag of words of each definition as features, and the
synset's lexicographer file as label (45 classes); the split is a seeded
random 60/20/20. Rank 0 partitions the graph with METIS and sends every rank
its part; each rank then holds about 1/P of the nodes, and the aggregation
over neighbours on other ranks runs one remote part at a time (SAR), so the
activation memory per rank falls as 1/P.
"""
import argparse
import time

import torch

import pyg_sar
from pyg_sar.datasets import wordnet
from torch_geometric.nn import GraphSAGE

parser = argparse.ArgumentParser()
parser.add_argument('--hidden_channels', type=int, default=128)
parser.add_argument('--num_layers', type=int, default=2)
parser.add_argument('--lr', type=float, default=0.01)
parser.add_argument('--epochs', type=int, default=50)
parser.add_argument('--eval_every', type=int, default=5)
parser.add_argument('--seed', type=int, default=0)
args = parser.parse_args()
torch.manual_seed(args.seed)

dataset = wordnet(split_seed=0)  # a torch_geometric.data.Data
data = pyg_sar.distribute(dataset)  # this rank's part (a PyG Data)
pyg_sar.print(f'Rank part: {data.num_nodes} of {dataset.num_nodes} nodes')

model = GraphSAGE(dataset.num_features, args.hidden_channels,
                  args.num_layers, int(dataset.y.max()) + 1, dropout=0.5)
pyg_sar.convert(model)
optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)


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


times = []
for epoch in range(1, args.epochs + 1):
    start = time.time()
    loss = train()
    times.append(time.time() - start)
    if epoch % args.eval_every == 0 or epoch == args.epochs:
        train_acc, val_acc, test_acc = test()
        pyg_sar.print(f'Epoch: {epoch:03d}, Loss: {loss:.4f}, '
                      f'Train: {train_acc:.4f}, Val: {val_acc:.4f}, '
                      f'Test: {test_acc:.4f}')
pyg_sar.print(f'Median time per epoch: {torch.tensor(times).median():.4f}s')
