"""Checkpoint and resume a distributed run (a two-layer GCN on Cora).

    mpiexec -n 2 python examples/checkpoint_resume.py --checkpoint ckpt
    # Interrupted (here on purpose, after epoch 60)? The same command with
    # --resume continues after the last snapshot:
    mpiexec -n 2 python examples/checkpoint_resume.py --checkpoint ckpt \
        --stop_after 60
    mpiexec -n 2 python examples/checkpoint_resume.py --checkpoint ckpt \
        --resume
    # Restarted by the launcher after a failure: --resume auto continues when
    # ckpt holds a checkpoint and starts fresh when it does not.
    torchrun --standalone --nproc-per-node 2 --max-restarts 3 \
        examples/checkpoint_resume.py --checkpoint ckpt --resume auto
    # Lost a host? The same command on fewer (or more) ranks resumes too: the
    # graph is partitioned for the new count, the model and optimizer carry over.
    mpiexec -n 4 python examples/checkpoint_resume.py --checkpoint ck4 \
        --stop_after 60
    mpiexec -n 2 python examples/checkpoint_resume.py --checkpoint ck4 \
        --resume

``pyg_sar.save_checkpoint`` is collective: every rank writes its own model,
optimizer and RNG states (atomically, with their SHA-256 in ``latest.json``).
``pyg_sar.load_checkpoint`` refuses a checkpoint of another model or of another
graph, and restores the RNG states, so the resumed run draws the same dropout
masks and ends exactly where an uninterrupted run ends. On another number of
ranks it takes the parameters and optimizer state from rank 0's file; the RNG
states belong to the ranks that wrote them, so the dropout masks then differ.
"""
import argparse
import os.path as osp

import torch
import torch.nn.functional as F

import pyg_sar
import torch_geometric.transforms as T
from pyg_sar.datasets import Planetoid
from torch_geometric.nn import GCNConv

parser = argparse.ArgumentParser()
parser.add_argument('--checkpoint', type=str, required=True,
                    help='folder of the checkpoints')
parser.add_argument('--resume', nargs='?', const='latest',
                    choices=['latest', 'auto'],
                    help='continue after the latest checkpoint (auto: if any)')
parser.add_argument('--save_every', type=int, default=10)
parser.add_argument('--stop_after', type=int, default=None,
                    help='stop after this epoch (to try --resume)')
parser.add_argument('--epochs', type=int, default=200)
parser.add_argument('--seed', type=int, default=0)
args = parser.parse_args()
torch.manual_seed(args.seed)

path = osp.join(osp.dirname(osp.realpath(__file__)), '..', 'data', 'Planetoid')
dataset = Planetoid(path, 'Cora', transform=T.NormalizeFeatures())
# METIS with a fixed seed gives the same partition on every launch, which is
# what a checkpoint is tied to.
data = pyg_sar.distribute(dataset[0])


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

start_epoch, best_val_acc, test_acc = 1, 0.0, 0.0
ckpt = None
if args.resume:
    ckpt = pyg_sar.load_checkpoint(args.checkpoint, model, optimizer,
                                   partition=data,
                                   missing_ok=args.resume == 'auto')
if ckpt is not None:
    start_epoch = ckpt.epoch + 1
    best_val_acc, test_acc = ckpt.extra['best_val_acc'], ckpt.extra['test_acc']
    pyg_sar.print(f'Resumed after epoch {ckpt.epoch}')


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


for epoch in range(start_epoch, args.epochs + 1):
    loss = train()
    train_acc, val_acc, tmp_test_acc = test()
    if val_acc > best_val_acc:
        best_val_acc, test_acc = val_acc, tmp_test_acc
    pyg_sar.print(f'Epoch: {epoch:03d}, Loss: {loss:.6f}, '
                  f'Train: {train_acc:.4f}, Val: {val_acc:.4f}, '
                  f'Test: {test_acc:.4f}')
    if epoch % args.save_every == 0 or epoch == args.stop_after:
        pyg_sar.save_checkpoint(args.checkpoint, model, optimizer, epoch,
                                partition=data, extra=dict(
                                    best_val_acc=best_val_acc,
                                    test_acc=test_acc))
    if epoch == args.stop_after:
        pyg_sar.print(f'Stopped after epoch {epoch}; continue with --resume')
        break
