"""R-GCN (or to_hetero(GraphSAGE)) on a heterogeneous graph, full-batch over the ranks of the job,
next to single-process PyG on the whole HeteroData in the same run.

    mpiexec -n 2 python examples/hetero_rgcn.py                       # WordNet, R-GCN
    mpiexec -n 2 python examples/hetero_rgcn.py --model sage          # to_hetero(GraphSAGE)
    mpiexec -n 2 python examples/hetero_rgcn.py --model hgt           # HGTConv
    mpiexec -n 2 python examples/hetero_rgcn.py --dataset mag-like --num_papers 20000
    python examples/hetero_rgcn.py                                    # one process

Datasets (nothing is downloaded): ``wordnet`` is WordNet 3.0 as a HeteroData
(``pyg_sar.datasets.wordnet_hetero``: 117,659 synsets and the 2,000 words of their definitions;
synset labels: the lexicographer file, 45 classes); ``mag-like`` is an OGB-MAG-shaped graph
(``pyg_sar.datasets.mag_like``: papers, authors, institutions, fields of study; paper labels:
the venue). Its author / institution / field nodes have no features (as in ogbn-mag); they get
the mean features of their paper (or author) neighbours before partitioning.

Models (no dropout, so that every rank count follows the same path):

* ``--model rgcn``: two ``RGCNConv`` layers on the typed homogeneous graph
  (``data.to_homogeneous()`` in PyG, ``part.to_homogeneous()`` here);
* ``--model sage``: ``to_hetero`` of a two-layer GraphSAGE, called on ``x_dict`` /
  ``edge_index_dict``;
* ``--model hgt``: a linear layer per node type, two ``HGTConv`` layers and a linear head, on
  ``x_dict`` / ``edge_index_dict``.

Rank 0 also trains the same model (same seed, same initial parameters) with plain PyG on the
whole graph in one process and prints its loss and accuracy on the same line: they agree
(exactly up to float rounding; with ``--float64`` to ~1e-15, the last line gives the largest
relative loss difference).
"""
import argparse
import copy

import torch
import torch.nn.functional as F

import pyg_sar
from pyg_sar.datasets import mag_like, wordnet_hetero
from torch_geometric.nn import HGTConv, Linear, RGCNConv, SAGEConv, to_hetero
from torch_geometric.utils import scatter

parser = argparse.ArgumentParser()
parser.add_argument('--dataset', choices=['wordnet', 'mag-like'], default='wordnet')
parser.add_argument('--num_papers', type=int, default=20000, help='mag-like only')
parser.add_argument('--model', choices=['rgcn', 'sage', 'hgt'], default='rgcn')
parser.add_argument('--heads', type=int, default=2, help='HGT attention heads')
parser.add_argument('--hidden_channels', type=int, default=32)
parser.add_argument('--num_bases', type=int, default=None, help='R-GCN basis decomposition')
parser.add_argument('--lr', type=float, default=0.01)
parser.add_argument('--epochs', type=int, default=30)
parser.add_argument('--seed', type=int, default=0)
parser.add_argument('--float64', action='store_true')
parser.add_argument('--no_reference', action='store_true',
                    help='skip the single-process PyG run on rank 0')
args = parser.parse_args()


def fill_features(data):
    """Node types without ``x`` get the mean ``x`` of their neighbours of a type that has one."""
    while missing := [t for t in data.node_types if 'x' not in data[t]]:
        reach = [et for et in data.edge_types if et[2] in missing and 'x' in data[et[0]]]
        if not reach:
            raise ValueError(f'no features reach node types {missing}')
        for src, rel, dst in reach:
            if 'x' not in data[dst]:
                data[dst].x = scatter(data[src].x[data[src, rel, dst].edge_index[0]],
                                      data[src, rel, dst].edge_index[1], dim=0,
                                      dim_size=data[dst].num_nodes, reduce='mean')
    return data


def load_dataset():
    if args.dataset == 'wordnet':
        data = wordnet_hetero(split_seed=0)
    else:
        data = fill_features(mag_like(args.num_papers, seed=0, add_reverse_edges=True))
    if args.float64:
        for t in data.node_types:
            data[t].x = data[t].x.double()
    return data


ctx = pyg_sar.init()
torch.manual_seed(args.seed)
# Rank 0 reads the data and partitions it; every rank receives its part (a HeteroPartition).
data = load_dataset() if ctx.rank == 0 else None
part = pyg_sar.distribute(data)
target = next(t for t in part.node_types if t in part.y_dict)  # the labelled node type
num_features = part.x_dict[target].size(-1)
num_classes = next(t['num_classes'] for t in part.meta['hetero']['node_types']
                   if t['name'] == target)
pyg_sar.print(f'Rank part: {part.num_nodes_dict} nodes of types {part.node_types}')


class RGCN(torch.nn.Module):
    def __init__(self, in_channels, hidden_channels, out_channels, num_relations, num_bases):
        super().__init__()
        self.conv1 = RGCNConv(in_channels, hidden_channels, num_relations,
                              num_bases=num_bases)
        self.conv2 = RGCNConv(hidden_channels, out_channels, num_relations,
                              num_bases=num_bases)

    def forward(self, x, edge_index, edge_type):
        x = self.conv1(x, edge_index, edge_type).relu()
        return self.conv2(x, edge_index, edge_type)


class GNN(torch.nn.Module):
    def __init__(self, in_channels, hidden_channels, out_channels):
        super().__init__()
        self.conv1 = SAGEConv(in_channels, hidden_channels)
        self.conv2 = SAGEConv(hidden_channels, out_channels)

    def forward(self, x, edge_index):
        x = self.conv1(x, edge_index).relu()
        return self.conv2(x, edge_index)


class HGT(torch.nn.Module):
    def __init__(self, in_channels, hidden_channels, out_channels, num_heads, metadata):
        super().__init__()
        self.lin_dict = torch.nn.ModuleDict({
            node_type: Linear(in_channels, hidden_channels) for node_type in metadata[0]})
        self.convs = torch.nn.ModuleList([
            HGTConv(hidden_channels, hidden_channels, metadata, num_heads) for _ in range(2)])
        self.lin = Linear(hidden_channels, out_channels)

    def forward(self, x_dict, edge_index_dict):
        x_dict = {node_type: self.lin_dict[node_type](x).relu_()
                  for node_type, x in x_dict.items()}
        for conv in self.convs:
            x_dict = conv(x_dict, edge_index_dict)
        return self.lin(x_dict[target])


def build_model():
    torch.manual_seed(args.seed)
    if args.model == 'rgcn':
        model = RGCN(num_features, args.hidden_channels, num_classes,
                     len(part.edge_types), args.num_bases)
    elif args.model == 'hgt':
        model = HGT(num_features, args.hidden_channels, num_classes, args.heads,
                    part.metadata())
    else:
        model = to_hetero(GNN(num_features, args.hidden_channels, num_classes),
                          part.metadata(), aggr='sum')
    return model.double() if args.float64 else model


def inputs_of(graph):
    """Model inputs and a function picking the target type's rows of the output, for
    a HeteroPartition (this rank's part) or a HeteroData (the whole graph)."""
    if args.model == 'sage':
        return (graph.x_dict, graph.edge_index_dict), lambda out: out[target]
    if args.model == 'hgt':  # the model returns the target type's rows
        return (graph.x_dict, graph.edge_index_dict), lambda out: out
    if isinstance(graph, pyg_sar.HeteroPartition):
        edge_index, node_type, edge_type = graph.to_homogeneous()
    else:  # PyG: the same typed homogeneous view of the whole graph
        homo = graph.to_homogeneous(node_attrs=[], edge_attrs=[])
        edge_index, node_type, edge_type = homo.edge_index, homo.node_type, homo.edge_type
    x = torch.cat([graph.x_dict[t] for t in graph.node_types])
    rows = node_type == graph.node_types.index(target)
    return (x, edge_index, edge_type), lambda out: out[rows]


model = build_model()
reference = [None] * args.epochs  # (loss, test accuracy) of plain PyG, on rank 0
if ctx.rank == 0 and not args.no_reference:
    # Plain PyG, one process, the whole HeteroData, a copy of the same initial model. It runs
    # first, while the other ranks wait (up to an hour) at the barrier below.
    pyg_model = copy.deepcopy(model)
    pyg_optimizer = torch.optim.Adam(pyg_model.parameters(), lr=args.lr)
    pyg_inputs, pyg_pick = inputs_of(data)
    pyg_y = data[target].y
    pyg_train, pyg_test = data[target].train_mask, data[target].test_mask
    pyg_sar.print(f'Plain PyG on the whole graph first (rank 0, one process; the other '
                  f'ranks wait), {args.epochs} epochs; --no_reference skips it')
    for epoch in range(args.epochs):
        if epoch % 5 == 0:
            pyg_sar.print(f'  plain PyG: epoch {epoch + 1:02d}/{args.epochs}')
        pyg_model.train()
        pyg_optimizer.zero_grad()
        out = pyg_pick(pyg_model(*pyg_inputs))
        loss = F.cross_entropy(out[pyg_train], pyg_y[pyg_train])
        loss.backward()
        pyg_optimizer.step()
        pyg_model.eval()
        with torch.no_grad():
            pred = pyg_pick(pyg_model(*pyg_inputs)).argmax(dim=-1)
        reference[epoch] = (loss.item(), float((pred[pyg_test] == pyg_y[pyg_test]).float().mean()))
    del pyg_model, pyg_optimizer, pyg_inputs, out, pred
if ctx.world_size > 1:
    ctx.comm.barrier(timeout=3600)

pyg_sar.convert(model)
optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)
inputs, pick = inputs_of(part)
y, masks = part.y_dict[target], [part[target][k] for k in ('train_mask', 'val_mask',
                                                           'test_mask')]


def train():
    model.train()
    optimizer.zero_grad()
    out = pick(model(*inputs))
    loss = pyg_sar.nn.functional.cross_entropy(out, y, masks[0])  # global mean
    loss.backward()
    optimizer.step()
    return float(loss.detach())


@torch.no_grad()
def test():
    model.eval()
    pred = pick(model(*inputs)).argmax(dim=-1)
    return [pyg_sar.nn.functional.accuracy(pred, y, mask) for mask in masks]


max_rel = 0.0
for epoch in range(1, args.epochs + 1):
    loss = train()
    train_acc, val_acc, test_acc = test()
    line = (f'Epoch: {epoch:03d}, Loss: {loss:.6f}, Train: {train_acc:.4f}, '
            f'Val: {val_acc:.4f}, Test: {test_acc:.4f}')
    if reference[epoch - 1] is not None:
        ref_loss, ref_test = reference[epoch - 1]
        max_rel = max(max_rel, abs(loss - ref_loss) / abs(ref_loss))
        line += f' | PyG, 1 process: Loss: {ref_loss:.6f}, Test: {ref_test:.4f}'
    pyg_sar.print(line)
if ctx.rank == 0 and not args.no_reference:
    pyg_sar.print(f'Largest relative loss difference vs PyG: {max_rel:.2e}')
