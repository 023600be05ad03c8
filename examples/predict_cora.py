"""Train a two-layer GCN on Cora over the ranks, then write its output for
every node, in the ORIGINAL node order, with ``pyg_sar.predict``.

    mpiexec -n 2 python examples/predict_cora.py
    python examples/predict_cora.py              # one process
    python examples/predict_cora.py --out preds.npy --epochs 100

``pyg_sar.predict`` is collective (every rank, the same ``out``): a no-grad
forward pass over the whole graph, each rank's rows placed at their original
node ids, written under a temporary name and renamed to ``out`` only once
complete. Rank 0 then reads the file back like any ``.npy`` array and computes
the test accuracy against the original dataset's labels and mask.
"""
import argparse
import os.path as osp
import shutil
import tempfile

import numpy as np
import torch
import torch.nn.functional as F

import pyg_sar
import torch_geometric.transforms as T
from pyg_sar.datasets import Planetoid
from torch_geometric.nn import GCNConv

parser = argparse.ArgumentParser()
parser.add_argument('--epochs', type=int, default=100)
parser.add_argument('--out', type=str, default=None,
                    help='the .npy file to write (default: a temporary file, removed '
                         'at the end)')
parser.add_argument('--storage', choices=['gather', 'shared'], default='gather')
parser.add_argument('--seed', type=int, default=0)
args = parser.parse_args()
torch.manual_seed(args.seed)

path = osp.join(osp.dirname(osp.realpath(__file__)), '..', 'data', 'Planetoid')
dataset = Planetoid(path, 'Cora', transform=T.NormalizeFeatures())
original = dataset[0]                    # the graph in its original node order
data = pyg_sar.distribute(original)      # this rank's part (new local order)


class GCN(torch.nn.Module):
    def __init__(self, in_channels, hidden_channels, out_channels):
        super().__init__()
        self.conv1 = GCNConv(in_channels, hidden_channels)
        self.conv2 = GCNConv(hidden_channels, out_channels)

    def forward(self, x, edge_index):
        x = F.dropout(x, p=0.5, training=self.training)
        x = self.conv1(x, edge_index).relu()
        x = F.dropout(x, p=0.5, training=self.training)
        return self.conv2(x, edge_index)


model = pyg_sar.convert(GCN(dataset.num_features, 16, dataset.num_classes))
optimizer = torch.optim.Adam(model.parameters(), lr=0.01, weight_decay=5e-4)

for epoch in range(1, args.epochs + 1):
    model.train()
    optimizer.zero_grad()
    out = model(data.x, data.edge_index)
    loss = pyg_sar.nn.functional.cross_entropy(out, data.y, data.train_mask)
    loss.backward()
    optimizer.step()
    if epoch % 10 == 0 or epoch == args.epochs:
        pyg_sar.print(f'Epoch: {epoch:03d}, Loss: {float(loss.detach()):.4f}')

# Every rank calls it with the same path. (The default: a temporary folder
# made by rank 0 and sent to the others.)
ctx = pyg_sar.get_context()
out_path = args.out
if out_path is None:
    folder = tempfile.mkdtemp(prefix='pyg_sar_predict_') if ctx.rank == 0 else None
    folder = ctx.comm.allgather_object(folder)[0]
    out_path = osp.join(folder, 'cora_logits.npy')

pyg_sar.predict(model, data, out=out_path, storage=args.storage)

# The same accuracy computed on the ranks, in their local order (collective).
model.eval()
with torch.no_grad():
    pred = model(data.x, data.edge_index).argmax(dim=-1)
ranks_acc = pyg_sar.nn.functional.accuracy(pred, data.y, data.test_mask)

if ctx.rank == 0:
    logits = np.load(out_path)           # [num_nodes, num_classes], original order
    pred = logits.argmax(axis=1)
    mask = original.test_mask.numpy()
    acc = float((pred[mask] == original.y.numpy()[mask]).mean())
    print(f'Wrote {out_path}: shape {list(logits.shape)}, {logits.dtype}')
    print(f'Test: {acc:.4f} (from the written array, original node order; '
          f'on the ranks: {ranks_acc:.4f})')
    if args.out is None:
        shutil.rmtree(osp.dirname(out_path))
