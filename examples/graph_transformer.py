"""A graph transformer (GPS or SGFormer) trained full-batch over the ranks of a job.

    mpiexec -n 2 python examples/graph_transformer.py                    # GPS
    mpiexec -n 2 python examples/graph_transformer.py --model sgformer
    mpiexec -n 2 python examples/graph_transformer.py --compare          # and plain PyG
    python examples/graph_transformer.py --nodes 5000

Node classification on a generated stochastic block model (``pyg_sar.datasets.sbm``: classes
are communities, features are noisy class means). The models are PyG's, unchanged:

* ``gps``: two ``GPSConv`` layers (a ``GINConv`` for the local messages and a 4-head
  ``MultiheadAttention`` of every node over every node, batch norm), between a linear input and
  output layer;
* ``sgformer``: PyG's ``SGFormer`` (linear global attention next to a GCN branch).

What pyg_sar changes is the usual three lines: ``pyg_sar.distribute`` partitions the graph,
``pyg_sar.convert`` converts the model, and the loss and accuracies are global
(``pyg_sar.nn.functional``). The global attention stays exact across ranks: GPS's softmax
attention runs as a ring (each rank receives every other rank's keys and values in turn and
keeps a running softmax; nothing of size N x N is stored), SGFormer's linear attention adds its
per-rank sums over the ranks (one all-reduce per layer). Each rank holds only its own nodes'
rows.

``--compare`` also trains plain PyG on the whole graph in rank 0's process, from the same
initial weights, and prints both losses per epoch: with ``--dropout 0`` (dropout masks are
drawn per rank) they agree to rounding (in ``--dtype float64`` to about 1e-15, relative).
"""
import argparse
import copy

import torch
import torch.nn.functional as F

import pyg_sar
from pyg_sar.datasets import sbm
from torch_geometric.nn import GINConv, GPSConv
from torch_geometric.nn.models import SGFormer

parser = argparse.ArgumentParser()
parser.add_argument('--model', choices=('gps', 'sgformer'), default='gps')
parser.add_argument('--nodes', type=int, default=2000)
parser.add_argument('--hidden_channels', type=int, default=64)
parser.add_argument('--heads', type=int, default=4)
parser.add_argument('--num_layers', type=int, default=2)
parser.add_argument('--dropout', type=float, default=0.1)
parser.add_argument('--lr', type=float, default=0.005)
parser.add_argument('--epochs', type=int, default=50)
parser.add_argument('--eval_every', type=int, default=10)
parser.add_argument('--seed', type=int, default=0)
parser.add_argument('--dtype', choices=('float32', 'float64'), default='float32')
parser.add_argument('--compare', action='store_true',
                    help='also train plain PyG on the whole graph (rank 0) and print both')
args = parser.parse_args()

ctx = pyg_sar.init()
# PyG's SGFormer makes a tensor of the default dtype inside its forward.
torch.set_default_dtype(getattr(torch, args.dtype))
data = sbm(num_nodes=args.nodes, num_classes=10, avg_degree=10, homophily=0.6,
           seed=args.seed)
data.x = data.x.to(torch.get_default_dtype())


class GPS(torch.nn.Module):
    def __init__(self, in_channels, channels, out_channels, num_layers, heads, dropout):
        super().__init__()
        self.lin_in = torch.nn.Linear(in_channels, channels)
        self.convs = torch.nn.ModuleList()
        for _ in range(num_layers):
            mlp = torch.nn.Sequential(torch.nn.Linear(channels, channels), torch.nn.ReLU(),
                                      torch.nn.Linear(channels, channels))
            self.convs.append(GPSConv(channels, GINConv(mlp), heads=heads, dropout=dropout,
                                      attn_kwargs={'dropout': dropout}))
        self.lin_out = torch.nn.Linear(channels, out_channels)

    def forward(self, x, edge_index, batch=None):
        x = self.lin_in(x)
        for conv in self.convs:
            x = conv(x, edge_index, batch)
        return self.lin_out(x)


torch.manual_seed(args.seed)  # the same initial weights on every rank and in the reference
num_classes = int(data.y.max()) + 1
if args.model == 'gps':
    model = GPS(data.num_features, args.hidden_channels, num_classes, args.num_layers,
                args.heads, args.dropout)
else:
    model = SGFormer(data.num_features, args.hidden_channels, num_classes,
                     trans_num_layers=args.num_layers, trans_num_heads=args.heads,
                     trans_dropout=args.dropout, gnn_num_layers=2, gnn_dropout=args.dropout)
reference = copy.deepcopy(model) if args.compare and ctx.rank == 0 else None

# ---- pyg_sar: the graph partitioned over the ranks, the model converted --------------------
part = pyg_sar.distribute(data)
model = pyg_sar.convert(model)
optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)
one_graph = torch.zeros(part.num_nodes, dtype=torch.long)  # SGFormer's batch: one graph


def train():
    model.train()
    optimizer.zero_grad()
    out = model(part.x, part.edge_index, one_graph)
    loss = pyg_sar.nn.functional.cross_entropy(out, part.y, part.train_mask)  # global mean
    loss.backward()
    optimizer.step()
    return float(loss.detach())


@torch.no_grad()
def test():
    model.eval()
    pred = model(part.x, part.edge_index, one_graph).argmax(dim=-1)
    return [float(pyg_sar.nn.functional.accuracy(pred, part.y, mask))  # global counts
            for mask in (part.train_mask, part.val_mask, part.test_mask)]


# ---- plain PyG on the whole graph, same initial weights (rank 0, --compare) ----------------
if reference is not None:
    ref_optimizer = torch.optim.Adam(reference.parameters(), lr=args.lr)
    ref_batch = torch.zeros(data.num_nodes, dtype=torch.long)


def train_reference():
    reference.train()
    ref_optimizer.zero_grad()
    out = reference(data.x, data.edge_index, ref_batch)
    loss = F.cross_entropy(out[data.train_mask], data.y[data.train_mask])
    loss.backward()
    ref_optimizer.step()
    return float(loss.detach())


@torch.no_grad()
def test_reference():
    reference.eval()
    pred = reference(data.x, data.edge_index, ref_batch).argmax(dim=-1)
    return [float((pred[mask] == data.y[mask]).float().mean())
            for mask in (data.train_mask, data.val_mask, data.test_mask)]


pyg_sar.print(f'{args.model}: {data.num_nodes} nodes, {data.num_edges} edges, '
              f'{ctx.world_size} rank(s), {args.dtype}')
for epoch in range(1, args.epochs + 1):
    loss = train()
    line = f'Epoch: {epoch:03d}, Loss: {loss!r}'
    if reference is not None:
        line += f' | PyG: Loss: {train_reference()!r}'
    pyg_sar.print(line)
    if epoch % args.eval_every == 0 or epoch == args.epochs:
        train_acc, val_acc, test_acc = test()
        line = (f'Epoch: {epoch:03d}, Train: {train_acc:.4f}, Val: {val_acc:.4f}, '
                f'Test: {test_acc:.4f}')
        if reference is not None:
            line += ' | PyG: Train: {:.4f}, Val: {:.4f}, Test: {:.4f}'.format(*test_reference())
        pyg_sar.print(line)
